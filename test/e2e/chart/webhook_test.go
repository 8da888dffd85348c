//go:build e2e

package chart

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"github.com/openclaw/harness-operator/internal/manager/webhook"
)

// webhookSecretName is the manager's default --webhook-secret-name, which the
// chart passes explicitly.
const webhookSecretName = "harness-operator-webhook-tls"

// TestWebhookConfigurationsMatchGo compares the rendered webhook
// configurations with the ones internal/manager/webhook builds, in service mode
// (self-managed and cert-manager certificates) and in URL mode.
func TestWebhookConfigurationsMatchGo(t *testing.T) {
	service := webhook.ServiceClientConfig(releaseNamespace, fullname+"-webhook", 443)
	cases := []struct {
		valueSet      string
		clientConfig  func(string) admissionregistrationv1.WebhookClientConfig
		wantInjectCA  bool
		wantServiceOn bool
	}{
		{"defaults", service, false, true},
		{"cert-manager", service, true, true},
		{"webhook-url", webhook.URLClientConfig("https://127.0.0.1:9443"), false, false},
	}
	for _, c := range cases {
		t.Run(c.valueSet, func(t *testing.T) {
			objs := objectsOf(t, c.valueSet)
			wantV, wantM := webhook.Configurations(c.clientConfig)

			var gotV admissionregistrationv1.ValidatingWebhookConfiguration
			find(t, objs, "ValidatingWebhookConfiguration", "", webhook.ValidatingConfigurationName).decode(t, &gotV)
			var gotM admissionregistrationv1.MutatingWebhookConfiguration
			find(t, objs, "MutatingWebhookConfiguration", "", webhook.MutatingConfigurationName).decode(t, &gotM)

			if !equality.Semantic.DeepEqual(gotV.Webhooks, wantV.Webhooks) {
				t.Errorf("validating webhooks differ from webhook.Configurations:\nchart:\n%s\ngo:\n%s", toYAML(t, gotV.Webhooks), toYAML(t, wantV.Webhooks))
			}
			if !equality.Semantic.DeepEqual(gotM.Webhooks, wantM.Webhooks) {
				t.Errorf("mutating webhooks differ from webhook.Configurations:\nchart:\n%s\ngo:\n%s", toYAML(t, gotM.Webhooks), toYAML(t, wantM.Webhooks))
			}

			// cert-manager's CA injector reads the annotation the manager
			// would also apply; self-managed mode injects by name and needs
			// no annotation.
			want := map[string]string(nil)
			if c.wantInjectCA {
				patches := webhook.CertManagerAnnotations(webhook.CertOptions{SecretNamespace: releaseNamespace, SecretName: webhookSecretName})
				want = patches[0].GetAnnotations()
				if got := patches[1].GetAnnotations(); !equality.Semantic.DeepEqual(got, want) {
					t.Fatalf("the two annotation patches differ: %v, %v", want, got)
				}
			}
			for kind, got := range map[string]map[string]string{"validating": gotV.Annotations, "mutating": gotM.Annotations} {
				if !equality.Semantic.DeepEqual(got, want) {
					t.Errorf("%s configuration annotations = %v, want %v", kind, got, want)
				}
			}
			if got := has(objs, "Service", releaseNamespace, fullname+"-webhook"); got != c.wantServiceOn {
				t.Errorf("webhook Service rendered = %v, want %v", got, c.wantServiceOn)
			}
		})
	}

	t.Run("disabled", func(t *testing.T) {
		objs := objects(t, writeValues(t, "webhook:\n  certMode: disabled\n"))
		for _, kind := range []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
			for _, o := range objs {
				if o.Kind == kind {
					t.Errorf("certMode disabled rendered %s %s", kind, o.Name)
				}
			}
		}
		if has(objs, "Service", releaseNamespace, fullname+"-webhook") {
			t.Error("certMode disabled rendered the webhook Service")
		}
	})
}

// TestWebhookServiceReachesManager checks the webhook Service routes port 443
// to the manager's webhook port, and the manager's certificate is for the
// Service's DNS name.
func TestWebhookServiceReachesManager(t *testing.T) {
	for _, valueSet := range []string{"defaults", "cert-manager"} {
		t.Run(valueSet, func(t *testing.T) {
			objs := objectsOf(t, valueSet)
			svc := service(t, objs, fullname+"-webhook")
			if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 443 || svc.Spec.Ports[0].TargetPort.String() != "webhook" {
				t.Errorf("webhook Service ports = %+v, want 443 -> webhook", svc.Spec.Ports)
			}
			mgr := deployment(t, objs, fullname+"-manager")
			if !selects(svc.Spec.Selector, mgr.Spec.Template.Labels) {
				t.Errorf("webhook Service selector %v does not select the manager pods %v", svc.Spec.Selector, mgr.Spec.Template.Labels)
			}
			c := mgr.Spec.Template.Spec.Containers[0]
			if p := containerPort(c, "webhook"); p != 9443 {
				t.Errorf("manager webhook container port = %d, want 9443", p)
			}
			args := argMap(c.Args)
			if got, want := args["--webhook-dns-name"], fullname+"-webhook."+releaseNamespace+".svc"; got != want {
				t.Errorf("--webhook-dns-name = %q, want %q", got, want)
			}
			if got := args["--webhook-secret-name"]; got != webhookSecretName {
				t.Errorf("--webhook-secret-name = %q, want %q", got, webhookSecretName)
			}
		})
	}
}

func toYAML(t *testing.T, v any) string {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
