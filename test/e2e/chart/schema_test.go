//go:build e2e

package chart

import (
	"strings"
	"testing"
)

// TestSchemaRejectsBadValues feeds values files with a bad type, an unknown
// key or a value out of range to helm template and helm lint, and checks the
// chart is refused with a message naming the field.
func TestSchemaRejectsBadValues(t *testing.T) {
	cases := []struct {
		name, values string
		// want are substrings of helm's error output.
		want []string
	}{
		{"replicas is not a number", "manager:\n  replicas: two\n",
			[]string{"at '/manager/replicas': got string, want integer"}},
		{"negative replicas", "manager:\n  replicas: -1\n",
			[]string{"at '/manager/replicas'", "minimum"}},
		{"concurrency zero", "manager:\n  concurrency:\n    agentSession: 0\n",
			[]string{"at '/manager/concurrency/agentSession'"}},
		{"harness namespace not a DNS label", "harnessNamespaces: [Team_A]\n",
			[]string{"at '/harnessNamespaces/0'", "does not match pattern"}},
		{"harnessNamespaces not a list", "harnessNamespaces: team-a\n",
			[]string{"at '/harnessNamespaces': got string, want array"}},
		{"duplicate harness namespace", "harnessNamespaces: [team-a, team-a]\n",
			[]string{"at '/harnessNamespaces'"}},
		{"unknown cert mode", "webhook:\n  certMode: manual\n",
			[]string{"at '/webhook/certMode': value must be one of 'self-managed', 'cert-manager', 'disabled'"}},
		{"webhook url not https", "webhook:\n  url: http://127.0.0.1:9443\n",
			[]string{"at '/webhook/url'"}},
		{"bad issuer", "webhook:\n  certMode: cert-manager\n  certManager:\n    issuer: corp-ca\n",
			[]string{"at '/webhook/certManager/issuer'"}},
		{"unknown journal type", "dispatcher:\n  journal:\n    type: hostPath\n",
			[]string{"at '/dispatcher/journal/type': value must be one of 'persistentVolumeClaim', 'emptyDir'"}},
		{"empty turn-token Secret name", "dispatcher:\n  turnToken:\n    secretName: \"\"\n",
			[]string{"at '/dispatcher/turnToken/secretName'"}},
		{"dispatcher replicas over 1 with the file journal", "dispatcher:\n  replicas: 2\n",
			[]string{"at '/dispatcher/store/type': value must be 'postgres'"}},
		{"dispatcher replicas zero", "dispatcher:\n  replicas: 0\n  store:\n    type: postgres\n    postgres:\n      secretName: db\n",
			[]string{"at '/dispatcher/replicas'", "minimum"}},
		{"unknown store type", "dispatcher:\n  store:\n    type: sqlite\n",
			[]string{"at '/dispatcher/store/type': value must be one of 'files', 'postgres'"}},
		{"PostgreSQL store without its Secret", "dispatcher:\n  store:\n    type: postgres\n",
			[]string{"at '/dispatcher/store/postgres/secretName'", "minLength"}},
		{"PostgreSQL Secret key empty", "dispatcher:\n  store:\n    type: postgres\n    postgres:\n      secretName: db\n      secretKey: \"\"\n",
			[]string{"at '/dispatcher/store/postgres/secretKey'"}},
		{"unknown top-level key", "replicas: 2\n",
			[]string{"additional properties 'replicas' not allowed"}},
		{"unknown pull policy", "image:\n  pullPolicy: Sometimes\n",
			[]string{"at '/image/pullPolicy'"}},
		{"digest without its algorithm", "image:\n  digests:\n    manager: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n",
			[]string{"at '/image/digests/manager'"}},
		{"digest of an unknown component", "image:\n  digests:\n    codex: sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n",
			[]string{"at '/image/digests': additional properties 'codex' not allowed"}},
		{"boolean as string", "networkPolicy:\n  enabled: \"yes\"\n",
			[]string{"at '/networkPolicy/enabled': got string, want boolean"}},
		{"bad quantity", "manager:\n  resources:\n    limits:\n      memory: lots\n",
			[]string{"at '/manager/resources/limits/memory'"}},
		// Rules across values (if/then in the schema: helm lint does not
		// refuse a template's `fail`, so the schema carries them).
		{"url with cert-manager", "webhook:\n  certMode: cert-manager\n  url: https://127.0.0.1:9443\n",
			[]string{"at '/webhook/certMode': value must be 'self-managed'"}},
		{"required token audience without an audience", "dispatcher:\n  tokenAudience: \"\"\n",
			[]string{"at '/dispatcher/tokenAudience'", "minLength"}},
		{"cli namespace not a DNS label", "cli:\n  serviceAccountNamespaces: [Team_A]\n",
			[]string{"at '/cli/serviceAccountNamespaces/0'", "does not match pattern"}},
		{"refused CIDR without a prefix length", "externalServers:\n  refusedCIDRs: [10.0.0.0]\n",
			[]string{"at '/externalServers/refusedCIDRs/0'", "does not match pattern"}},
		{"allowed CIDR is a host name", "externalServers:\n  allowedCIDRs: [app-server.agents.svc]\n",
			[]string{"at '/externalServers/allowedCIDRs/0'", "does not match pattern"}},
		{"duplicate egress CIDR", "appServers:\n  egressCIDRs: [203.0.113.0/24, 203.0.113.0/24]\n",
			[]string{"at '/appServers/egressCIDRs'"}},
		{"egress CIDRs as a comma list", "appServers:\n  egressCIDRs: 203.0.113.0/24,198.51.100.0/24\n",
			[]string{"at '/appServers/egressCIDRs': got string, want array"}},
		{"memory limit in Kubernetes units", "manager:\n  goMemLimit: 48Mi\n",
			[]string{"at '/manager/goMemLimit'", "does not match pattern"}},
		{"one model gateway replica", "modelGateway:\n  enabled: true\n  replicas: 1\n",
			[]string{"at '/modelGateway/replicas'", "minimum"}},
		{"unknown model gateway key", "modelGateway:\n  port: 9443\n",
			[]string{"at '/modelGateway': additional properties 'port' not allowed"}},
		{"model gateway egress CIDR is a host name", "modelGateway:\n  egressCIDRs: [api.openai.com]\n",
			[]string{"at '/modelGateway/egressCIDRs/0'", "does not match pattern"}},
		{"API server port out of range", "modelGateway:\n  apiServer:\n    ports: [0]\n",
			[]string{"at '/modelGateway/apiServer/ports/0'", "minimum"}},
		{"issuer without cert-manager", "webhook:\n  certManager:\n    issuer: Issuer/x\n",
			[]string{"at '/webhook/certMode': value must be 'cert-manager'"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			values := writeValues(t, c.values)
			for _, cmd := range [][]string{
				{"template", releaseName, chartDir(t), "--namespace", releaseNamespace, "--values", values},
				{"lint", chartDir(t), "--namespace", releaseNamespace, "--values", values},
			} {
				out, stderr, err := helm(t, cmd...)
				if err == nil {
					t.Errorf("helm %s accepted %q", cmd[0], c.values)
					continue
				}
				for _, w := range c.want {
					if !strings.Contains(out+stderr, w) {
						t.Errorf("helm %s: output does not contain %q:\n%s%s", cmd[0], w, out, stderr)
					}
				}
			}
		})
	}
}
