package modelgateway

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/dispatcher/modelcred"
	"github.com/openclaw/harness-operator/internal/testutil"
)

// kubeHarness creates, in ns, the managed AgentHarness name with mg (nil:
// without spec.modelGateway) and returns the credential's view of it.
func kubeHarness(ctx context.Context, t *testing.T, c client.Client, ns, name string, mg *v1alpha1.ModelGateway) modelcred.Harness {
	t.Helper()
	h := &v1alpha1.AgentHarness{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.AgentHarnessSpec{
			HarnessID: "codex", Adapter: v1alpha1.AdapterCodexAppServer,
			AppServer:    &v1alpha1.AppServerWorkload{Image: "codex@sha256:" + strings.Repeat("a", 64)},
			ModelGateway: mg,
		},
	}
	if err := c.Create(ctx, h); err != nil {
		t.Fatalf("create AgentHarness %s/%s: %v", ns, name, err)
	}
	return modelcred.Harness{Namespace: ns, Name: name, UID: string(h.UID)}
}

func kubeSecret(ctx context.Context, t *testing.T, c client.Client, ns, name string, data map[string]string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data}
	if err := c.Create(ctx, s); err != nil {
		t.Fatalf("create Secret %s/%s: %v", ns, name, err)
	}
	return s
}

func gatewaySpec(secret, key string) *v1alpha1.ModelGateway {
	return &v1alpha1.ModelGateway{
		BaseURL:             "https://models.example.test/v1",
		CredentialSecretRef: v1alpha1.SecretKeyReference{Name: secret, Key: key},
		QueryParams:         map[string]string{"api-version": "2025-04-01"},
		Headers:             map[string]string{"X-Org": "team-a"},
	}
}

// TestKubeUpstreams runs against a real API server: the harness and its
// Secret are read as they are at each request; a harness deleted and
// created again, one without spec.modelGateway, and a credential that is
// missing, empty or not one line are refused, each naming the harness and
// the field and never the value.
func TestKubeUpstreams(t *testing.T) {
	env, err := testutil.StartEnv()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	c := env.Client
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "modelgateway-"}}
	if err := c.Create(ctx, nsObj); err != nil {
		t.Fatal(err)
	}
	ns := nsObj.Name
	ups := KubeUpstreams{Reader: c}

	secret := kubeSecret(ctx, t, c, ns, "provider", map[string]string{"api-key": "sk-first\n"})
	h := kubeHarness(ctx, t, c, ns, "codex", gatewaySpec("provider", "api-key"))

	t.Run("control: the harness's upstream and credential", func(t *testing.T) {
		u, err := ups.Upstream(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		if u.BaseURL.String() != "https://models.example.test/v1" || u.Credential != "sk-first" ||
			u.QueryParams.Get("api-version") != "2025-04-01" || u.Headers["X-Org"] != "team-a" {
			t.Fatalf("Upstream = %s %q %v %v; want the harness's spec and the Secret's value without its newline",
				u.BaseURL, u.Credential, u.QueryParams, u.Headers)
		}
	})

	t.Run("a rotated key is read at the next request", func(t *testing.T) {
		secret.StringData = map[string]string{"api-key": "sk-second"}
		if err := c.Update(ctx, secret); err != nil {
			t.Fatal(err)
		}
		if u, err := ups.Upstream(ctx, h); err != nil || u.Credential != "sk-second" {
			t.Fatalf("after the Secret changed: %v; want the new key", err)
		}
	})

	refused := func(t *testing.T, h modelcred.Harness, wants ...string) {
		t.Helper()
		u, err := ups.Upstream(ctx, h)
		if err == nil {
			t.Fatalf("Upstream = %+v, want a refusal", u.BaseURL)
		}
		for _, want := range append(wants, h.Namespace+"/"+h.Name) {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("refusal %q does not name %q", err, want)
			}
		}
		for _, value := range []string{"sk-", "line-one", "line-two"} {
			if strings.Contains(err.Error(), value) {
				t.Errorf("refusal %q shows the credential", err)
			}
		}
	}

	t.Run("a harness deleted and created again under its name", func(t *testing.T) {
		kubeSecret(ctx, t, c, ns, "again", map[string]string{"api-key": "sk-again"})
		old := kubeHarness(ctx, t, c, ns, "again", gatewaySpec("again", "api-key"))
		if err := c.Delete(ctx, &v1alpha1.AgentHarness{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "again"}}); err != nil {
			t.Fatal(err)
		}
		refused(t, old, "does not exist")
		now := kubeHarness(ctx, t, c, ns, "again", gatewaySpec("again", "api-key"))
		refused(t, old, "UID", old.UID, now.UID)
		if u, err := ups.Upstream(ctx, now); err != nil || u.Credential != "sk-again" {
			t.Fatalf("control: the new harness's own credential: %v", err)
		}
	})

	t.Run("a harness without spec.modelGateway", func(t *testing.T) {
		refused(t, kubeHarness(ctx, t, c, ns, "direct", nil), "spec.modelGateway")
	})

	kubeSecret(ctx, t, c, ns, "bad", map[string]string{
		"empty": "", "newline": "\n", "lines": "line-one\nline-two", "crlf": "line-one\r\n", "space": "sk- spaced",
	})
	for i, tc := range []struct{ name, secret, key, want string }{
		{"a Secret that does not exist", "missing", "api-key", "which does not exist"},
		{"a key the Secret does not have", "bad", "api-key", `no key "api-key"`},
		{"an empty value", "bad", "empty", "is empty"},
		{"a value that is only a newline", "bad", "newline", "is empty"},
		{"a value of two lines", "bad", "lines", "more than one line"},
		{"a value ending in CRLF", "bad", "crlf", "more than one line"},
		{"a value with a space", "bad", "space", "a space or a control character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "bad-" + strconv.Itoa(i)
			refused(t, kubeHarness(ctx, t, c, ns, name, gatewaySpec(tc.secret, tc.key)), "spec.modelGateway.credentialSecretRef", tc.want)
		})
	}
}
