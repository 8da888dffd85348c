package webhook_test

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/openclaw/harness-operator/internal/manager/webhook"
)

// cert-manager cannot run here (no cert-manager in the test cluster), so the
// objects the manager applies in cert-manager mode are checked as rendered.
func TestCertManagerObjects(t *testing.T) {
	opts := webhook.CertOptions{SecretNamespace: "harness-operator-system", SecretName: "harness-operator-webhook-tls", DNSName: "harness-operator-webhook.harness-operator-system.svc"}
	tests := []struct {
		name    string
		issuer  string
		want    string
		wantErr string
	}{
		{
			name:   "no issuer: a self-signed Issuer and a Certificate for the webhook Service",
			issuer: "",
			want: `apiVersion: cert-manager.io/v1
kind: Issuer
metadata:
  labels:
    app.kubernetes.io/component: webhook
    app.kubernetes.io/name: harness-operator
  name: harness-operator-selfsigned
  namespace: harness-operator-system
spec:
  selfSigned: {}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata:
  labels:
    app.kubernetes.io/component: webhook
    app.kubernetes.io/name: harness-operator
  name: harness-operator-webhook-tls
  namespace: harness-operator-system
spec:
  dnsNames:
  - harness-operator-webhook.harness-operator-system.svc
  issuerRef:
    group: cert-manager.io
    kind: Issuer
    name: harness-operator-selfsigned
  privateKey:
    algorithm: ECDSA
    rotationPolicy: Always
    size: 256
  secretName: harness-operator-webhook-tls
  usages:
  - server auth
  - digital signature
  - key encipherment
`,
		},
		{
			name:   "a ClusterIssuer: only the Certificate, referring to it",
			issuer: "ClusterIssuer/corp-ca",
			want:   "kind: ClusterIssuer\n    name: corp-ca",
		},
		{
			name:    "a malformed issuer names the flag",
			issuer:  "corp-ca",
			wantErr: "--webhook-cert-manager-issuer: want Issuer/<name> or ClusterIssuer/<name>",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := webhook.CertManagerObjects(opts, tt.issuer)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var docs []string
			for _, o := range objs {
				out, err := yaml.Marshal(o.Object)
				if err != nil {
					t.Fatal(err)
				}
				docs = append(docs, string(out))
			}
			got := strings.Join(docs, "---\n")
			if tt.issuer == "" && got != tt.want {
				t.Fatalf("rendered:\n%s\nwant:\n%s", got, tt.want)
			}
			if tt.issuer != "" && (len(objs) != 1 || !strings.Contains(got, tt.want)) {
				t.Fatalf("rendered:\n%s\nwant one Certificate containing %q", got, tt.want)
			}
		})
	}
}

func TestCertManagerAnnotations(t *testing.T) {
	objs := webhook.CertManagerAnnotations(webhook.CertOptions{SecretNamespace: "ops", SecretName: "webhook-tls"})
	if len(objs) != 2 {
		t.Fatalf("want annotations for both webhook configurations, got %d", len(objs))
	}
	for i, want := range []string{webhook.ValidatingConfigurationName, webhook.MutatingConfigurationName} {
		if objs[i].GetName() != want || objs[i].GetAnnotations()[webhook.InjectCAFromAnnotation] != "ops/webhook-tls" {
			t.Errorf("object %d: %s %v, want %s annotated %s=ops/webhook-tls", i, objs[i].GetName(), objs[i].GetAnnotations(), want, webhook.InjectCAFromAnnotation)
		}
	}
}
