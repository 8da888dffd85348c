package agentharness

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	"k8s.io/utils/ptr"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/harness/codexconfig"
	"github.com/openclaw/harness-operator/internal/harness/objects"
)

const testGatewayURL = "https://harness-operator-model-gateway.op.svc:8443"

// testCA is a self-signed CA certificate in PEM.
func testCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func gatewayHarness(mcp ...string) *v1alpha1.AgentHarness {
	h := &v1alpha1.AgentHarness{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "codex"},
		Spec: v1alpha1.AgentHarnessSpec{
			Adapter: v1alpha1.AdapterCodexAppServer,
			AppServer: &v1alpha1.AppServerWorkload{
				Image:    "registry.example/codex@sha256:" + strings.Repeat("a", 64),
				Replicas: ptr.To[int32](1),
			},
			ModelGateway: &v1alpha1.ModelGateway{BaseURL: "https://api.openai.com/v1",
				CredentialSecretRef: v1alpha1.SecretKeyReference{Name: "provider", Key: "api-key"}},
		},
	}
	if len(mcp) > 0 {
		h.Spec.MCP = &v1alpha1.HarnessMCP{AllowedURLPrefixes: mcp}
	}
	return h
}

func normalized(t *testing.T, m ModelGatewaySettings) *gatewayRender {
	t.Helper()
	if err := m.normalize("op"); err != nil {
		t.Fatal(err)
	}
	return &gatewayRender{settings: m}
}

func TestModelGatewaySettings(t *testing.T) {
	for _, tc := range []struct {
		url      string
		port     int32
		wantURL  string
		wantPort int32
		wantErr  string
	}{
		{url: testGatewayURL, wantURL: testGatewayURL, wantPort: 8443},
		{url: "https://gw.op.svc", wantURL: "https://gw.op.svc", wantPort: 443},
		{url: "https://gw.op.svc:8443/", wantURL: "https://gw.op.svc:8443", wantPort: 8443},
		{url: "https://gw.op.svc:443", port: 8443, wantURL: "https://gw.op.svc:443", wantPort: 8443},
		{url: "http://gw.op.svc:8443", wantErr: "--model-gateway-url \"http://gw.op.svc:8443\": must be an https URL"},
		{url: "https://gw.op.svc:8443/v1", wantErr: "no userinfo, path, query or fragment"},
		{url: "https://user:pw@gw.op.svc", wantErr: "no userinfo, path, query or fragment"},
		{url: "https://gw.op.svc?x=1", wantErr: "no userinfo, path, query or fragment"},
		{url: "https://:8443", wantErr: "has no host"},
		{url: "gw.op.svc:8443", wantErr: "--model-gateway-url"},
		{url: testGatewayURL, port: 70000, wantErr: "port 70000 is out of range"},
	} {
		m := ModelGatewaySettings{URL: tc.url, Port: tc.port}
		err := m.normalize("op")
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: error %v, want one containing %q", tc.url, err, tc.wantErr)
			}
			continue
		}
		if err != nil || m.URL != tc.wantURL || m.Port != tc.wantPort || m.Namespace != "op" ||
			m.PodLabels[objects.LabelComponent] != "model-gateway" {
			t.Errorf("%q: %+v, %v; want URL %q port %d in the operator namespace with the default labels", tc.url, m, err, tc.wantURL, tc.wantPort)
		}
	}
	empty := ModelGatewaySettings{}
	if err := empty.normalize("op"); err != nil || empty.URL != "" {
		t.Errorf("no gateway configured: %+v, %v", empty, err)
	}
}

func TestCheckCABundle(t *testing.T) {
	ca := testCA(t)
	key := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: []byte("k")})
	for _, tc := range []struct {
		name    string
		bundle  []byte
		wantErr string
	}{
		{"one CA", ca, ""},
		{"two CAs", append(slices.Clone(ca), ca...), ""},
		{"missing", nil, "missing or empty"},
		{"not PEM", []byte("not a certificate"), "holds no PEM certificate"},
		{"a key beside the CA", append(slices.Clone(ca), key...), `type "EC PRIVATE KEY"`},
		{"a damaged certificate", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("junk")}), "certificate 1"},
	} {
		err := checkCABundle(tc.bundle)
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.wantErr)
		}
	}
}

func findEnv(env []corev1ac.EnvVarApplyConfiguration, name string) *corev1ac.EnvVarApplyConfiguration {
	for i := range env {
		if *env[i].Name == name {
			return &env[i]
		}
	}
	return nil
}

// The pod of a harness with spec.modelGateway: the gateway is Codex's
// default provider at the gateway's /v1, with no credential; with a CA,
// CODEX_CA_CERTIFICATE names the mounted copy from the token Secret. The
// control is the same harness without the field.
func TestModelGatewayPod(t *testing.T) {
	ca := testCA(t)
	for _, tc := range []struct {
		name      string
		gateway   bool
		ca        []byte
		wantArgs  bool
		wantCAEnv bool
	}{
		{name: "gateway with its CA", gateway: true, ca: ca, wantArgs: true, wantCAEnv: true},
		{name: "gateway on the image's roots", gateway: true, wantArgs: true},
		{name: "no spec.modelGateway (control)"},
	} {
		h := gatewayHarness()
		w := workload{harness: h, port: 4500, opNamespace: "op"}
		if tc.gateway {
			w.gateway = normalized(t, ModelGatewaySettings{URL: testGatewayURL})
			w.gateway.ca = tc.ca
		} else {
			h.Spec.ModelGateway = nil
		}
		tmpl, err := w.podTemplate()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		c := tmpl.Spec.Containers[0]
		gatewayArgs := codexconfig.ModelGatewayArgs(testGatewayURL + "/v1")
		hasArgs := len(c.Args) >= 4 && slices.Equal(c.Args[len(c.Args)-4:], gatewayArgs)
		if hasArgs != tc.wantArgs {
			t.Errorf("%s: args %q, want the gateway's provider options %v", tc.name, c.Args, tc.wantArgs)
		}
		if args := strings.Join(c.Args, " "); strings.Contains(args, "env_key") || strings.Contains(args, "bearer_token") ||
			strings.Contains(args, "requires_openai_auth") {
			t.Errorf("%s: args name a credential: %q", tc.name, c.Args)
		}
		caEnv := findEnv(c.Env, codexconfig.CACertificateEnv)
		if (caEnv != nil) != tc.wantCAEnv || caEnv != nil && *caEnv.Value != "/var/run/harness-operator/model-gateway/ca.crt" {
			t.Errorf("%s: %s = %+v, want set: %v", tc.name, codexconfig.CACertificateEnv, caEnv, tc.wantCAEnv)
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil {
				t.Errorf("%s: env %s comes from a Secret", tc.name, *e.Name)
			}
		}
		var caVolume *corev1ac.VolumeApplyConfiguration
		for i := range tmpl.Spec.Volumes {
			if *tmpl.Spec.Volumes[i].Name == gatewayCAVolume {
				caVolume = &tmpl.Spec.Volumes[i]
			}
		}
		if (caVolume != nil) != tc.wantCAEnv {
			t.Errorf("%s: CA volume %+v, want present: %v", tc.name, caVolume, tc.wantCAEnv)
		}
		if caVolume != nil && (*caVolume.Secret.SecretName != objects.TokenSecretName(h) ||
			len(caVolume.Secret.Items) != 1 || *caVolume.Secret.Items[0].Key != tokenSecretCAKey || *caVolume.Secret.Items[0].Path != "ca.crt") {
			t.Errorf("%s: CA volume %+v is not the token Secret's CA key as ca.crt", tc.name, caVolume.Secret)
		}
		data := w.tokenSecretData("tok")
		if got, want := string(data[tokenSecretCAKey]), string(tc.ca); got != want {
			t.Errorf("%s: token Secret's CA %q, want %q", tc.name, got, want)
		}
	}
}

// Without the manager's gateway settings a gateway harness gets no pod:
// one without the gateway's provider would have none.
func TestModelGatewayPodFailsClosedWithoutSettings(t *testing.T) {
	w := workload{harness: gatewayHarness(), port: 4500, opNamespace: "op"}
	if _, err := w.statefulSet(); err == nil || !strings.Contains(err.Error(), "--model-gateway-url") {
		t.Errorf("statefulSet without gateway settings: %v, want an error naming --model-gateway-url", err)
	}
}

// Turning spec.modelGateway on changes the pod template, so the pods roll;
// so does a new CA.
func TestModelGatewayRollsThePods(t *testing.T) {
	hash := func(w workload) string {
		t.Helper()
		tmpl, err := w.podTemplate()
		if err != nil {
			t.Fatal(err)
		}
		return tmpl.Annotations[v1alpha1.AnnotationConfigHash]
	}
	before := gatewayHarness()
	before.Spec.ModelGateway = nil
	after := workload{harness: gatewayHarness(), port: 4500, opNamespace: "op", gateway: normalized(t, ModelGatewaySettings{URL: testGatewayURL})}
	if hash(workload{harness: before, port: 4500, opNamespace: "op"}) == hash(after) {
		t.Error("turning spec.modelGateway on leaves the pod template's hash as it was")
	}
	r := &Reconciler{}
	creds := func(ca []byte) string {
		t.Helper()
		h, err := r.credentialsHash(context.Background(), gatewayHarness(), "tok", ca)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	if first, second := creds(testCA(t)), creds(testCA(t)); first == second {
		t.Error("a new gateway CA leaves the pods' credentials hash as it was")
	}
}

// egressAllowsPod evaluates the rendered policy's egress rules for a TCP
// connection to a pod with podLabels in namespace ns on port, as an
// enforcing CNI would (selectors by matchLabels).
func egressAllowsPod(np *networkingv1ac.NetworkPolicyApplyConfiguration, ns string, podLabels map[string]string, port int32) bool {
	subset := func(want, have map[string]string) bool {
		for k, v := range want {
			if have[k] != v {
				return false
			}
		}
		return true
	}
	for _, rule := range np.Spec.Egress {
		portOK := len(rule.Ports) == 0
		for _, p := range rule.Ports {
			if (p.Protocol == nil || *p.Protocol == corev1.ProtocolTCP) && (p.Port == nil || p.Port.IntVal == port) {
				portOK = true
			}
		}
		if !portOK {
			continue
		}
		for _, peer := range rule.To {
			if peer.IPBlock != nil || peer.NamespaceSelector == nil || peer.PodSelector == nil {
				continue
			}
			if subset(peer.NamespaceSelector.MatchLabels, map[string]string{corev1.LabelMetadataName: ns}) &&
				subset(peer.PodSelector.MatchLabels, podLabels) {
				return true
			}
		}
	}
	return false
}

// The egress of a harness with spec.modelGateway: the gateway's pods on its
// port and the cluster DNS; the public internet only when the harness
// lists MCP URL prefixes, narrowed by --app-server-egress-cidrs as today.
func TestModelGatewayEgress(t *testing.T) {
	gw := normalized(t, ModelGatewaySettings{URL: testGatewayURL})
	gatewayPod := map[string]string{objects.LabelName: "harness-operator", objects.LabelComponent: "model-gateway"}
	dispatcherPod := map[string]string{objects.LabelName: "harness-operator", objects.LabelComponent: "dispatcher"}
	noMCP := workload{harness: gatewayHarness(), port: 4500, opNamespace: "op", gateway: gw}.networkPolicy()
	mcp := workload{harness: gatewayHarness("https://mcp.example.com/"), port: 4500, opNamespace: "op", gateway: gw}.networkPolicy()
	mcpNarrowed := workload{harness: gatewayHarness("https://mcp.example.com/"), port: 4500, opNamespace: "op", gateway: gw,
		egressCIDRs: []string{"203.0.113.0/24"}}.networkPolicy()
	unset := workload{harness: gatewayHarness("https://mcp.example.com/"), port: 4500, opNamespace: "op"}.networkPolicy()

	for _, tc := range []struct {
		what                           string
		allowed                        func(*networkingv1ac.NetworkPolicyApplyConfiguration) bool
		noMCP, mcp, mcpNarrowed, unset bool
	}{
		{"the gateway's pods on its port", func(np *networkingv1ac.NetworkPolicyApplyConfiguration) bool {
			return egressAllowsPod(np, "op", gatewayPod, 8443)
		}, true, true, true, false},
		{"the gateway's pods on another port", func(np *networkingv1ac.NetworkPolicyApplyConfiguration) bool {
			return egressAllowsPod(np, "op", gatewayPod, 9443)
		}, false, false, false, false},
		{"pods labelled as the gateway in another namespace", func(np *networkingv1ac.NetworkPolicyApplyConfiguration) bool {
			return egressAllowsPod(np, "team-b", gatewayPod, 8443)
		}, false, false, false, false},
		{"the dispatcher's pods", func(np *networkingv1ac.NetworkPolicyApplyConfiguration) bool {
			return egressAllowsPod(np, "op", dispatcherPod, 8443)
		}, false, false, false, false},
		{"the model provider directly", func(np *networkingv1ac.NetworkPolicyApplyConfiguration) bool {
			return egressAllows(np, "104.18.33.45", 443)
		}, false, true, false, false},
		{"an address in --app-server-egress-cidrs", func(np *networkingv1ac.NetworkPolicyApplyConfiguration) bool {
			return egressAllows(np, "203.0.113.7", 443)
		}, false, true, true, false},
		{"the cloud metadata service", func(np *networkingv1ac.NetworkPolicyApplyConfiguration) bool {
			return egressAllows(np, "169.254.169.254", 80)
		}, false, false, false, false},
		{"a Service IP", func(np *networkingv1ac.NetworkPolicyApplyConfiguration) bool {
			return egressAllows(np, "10.96.0.1", 443)
		}, false, false, false, false},
	} {
		for _, c := range []struct {
			name string
			np   *networkingv1ac.NetworkPolicyApplyConfiguration
			want bool
		}{{"without MCP prefixes", noMCP, tc.noMCP}, {"with MCP prefixes", mcp, tc.mcp},
			{"with MCP prefixes, narrowed", mcpNarrowed, tc.mcpNarrowed}, {"without gateway settings", unset, tc.unset}} {
			if got := tc.allowed(c.np); got != c.want {
				t.Errorf("%s: egress to %s allowed = %v, want %v", c.name, tc.what, got, c.want)
			}
		}
	}
	for _, np := range []*networkingv1ac.NetworkPolicyApplyConfiguration{noMCP, mcp, mcpNarrowed, unset} {
		dns := np.Spec.Egress[0]
		if len(dns.To) != 1 || dns.To[0].PodSelector == nil || dns.To[0].PodSelector.MatchLabels["k8s-app"] != "kube-dns" {
			t.Errorf("the first egress rule is not the cluster DNS: %+v", dns)
		}
	}
}
