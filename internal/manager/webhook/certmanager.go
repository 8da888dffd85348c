package webhook

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// InjectCAFromAnnotation makes cert-manager's CA injector write the CA of a
// Certificate (`namespace/name`) into a webhook configuration's caBundle.
const InjectCAFromAnnotation = "cert-manager.io/inject-ca-from"

// certManagerFieldOwner owns what the manager applies in cert-manager mode.
const certManagerFieldOwner = client.FieldOwner("harness-operator-cert-manager")

// selfSignedIssuerName is the Issuer created when no issuer is configured.
const selfSignedIssuerName = "harness-operator-selfsigned"

// CertManagerObjects renders what cert-manager needs to issue the webhook
// server's certificate into the certificate Secret: a Certificate for the
// webhook's DNS name, and — when issuer is empty (`Kind/name` otherwise, e.g.
// `ClusterIssuer/corp-ca`) — a self-signed Issuer in the same namespace.
func CertManagerObjects(o CertOptions, issuer string) ([]*unstructured.Unstructured, error) {
	if o.SecretNamespace == "" || o.SecretName == "" || o.DNSName == "" {
		return nil, fmt.Errorf("cert-manager certificates: secret namespace and name and the DNS name are required")
	}
	kind, name := "Issuer", selfSignedIssuerName
	var objs []*unstructured.Unstructured
	if issuer == "" {
		objs = append(objs, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cert-manager.io/v1",
			"kind":       "Issuer",
			"metadata":   map[string]any{"name": selfSignedIssuerName, "namespace": o.SecretNamespace, "labels": operatorLabels()},
			"spec":       map[string]any{"selfSigned": map[string]any{}},
		}})
	} else {
		var ok bool
		kind, name, ok = strings.Cut(issuer, "/")
		if !ok || (kind != "Issuer" && kind != "ClusterIssuer") || name == "" {
			return nil, fmt.Errorf("--webhook-cert-manager-issuer: want Issuer/<name> or ClusterIssuer/<name>, got %q", issuer)
		}
	}
	objs = append(objs, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cert-manager.io/v1",
		"kind":       "Certificate",
		"metadata":   map[string]any{"name": o.SecretName, "namespace": o.SecretNamespace, "labels": operatorLabels()},
		"spec": map[string]any{
			"secretName": o.SecretName,
			"dnsNames":   []any{o.DNSName},
			"usages":     []any{"server auth", "digital signature", "key encipherment"},
			"privateKey": map[string]any{"algorithm": "ECDSA", "size": int64(256), "rotationPolicy": "Always"},
			"issuerRef":  map[string]any{"group": "cert-manager.io", "kind": kind, "name": name},
		},
	}})
	return objs, nil
}

// CertManagerAnnotations renders the annotation patches that make cert-manager
// inject the Certificate's CA into the two webhook configurations.
func CertManagerAnnotations(o CertOptions) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, c := range []struct{ kind, name string }{
		{"ValidatingWebhookConfiguration", ValidatingConfigurationName},
		{"MutatingWebhookConfiguration", MutatingConfigurationName},
	} {
		out = append(out, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "admissionregistration.k8s.io/v1",
			"kind":       c.kind,
			"metadata": map[string]any{
				"name":        c.name,
				"annotations": map[string]any{InjectCAFromAnnotation: o.SecretNamespace + "/" + o.SecretName},
			},
		}})
	}
	return out
}

func operatorLabels() map[string]any {
	return map[string]any{"app.kubernetes.io/name": "harness-operator", "app.kubernetes.io/component": "webhook"}
}

// certManagerSetup applies the cert-manager objects and annotations once at
// start-up (server-side apply, owning only these fields), so the operator's
// own Helm values or manifests need not repeat them.
type certManagerSetup struct {
	c    client.Client
	objs []*unstructured.Unstructured
}

var _ manager.LeaderElectionRunnable = (*certManagerSetup)(nil)

// NeedLeaderElection is false: applying the same objects twice is harmless.
func (s *certManagerSetup) NeedLeaderElection() bool { return false }

// Start applies the objects, then returns.
func (s *certManagerSetup) Start(ctx context.Context) error {
	for _, obj := range s.objs {
		if err := s.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), certManagerFieldOwner, client.ForceOwnership); err != nil {
			return fmt.Errorf("apply %s %s for cert-manager (is cert-manager installed?): %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	ctrl.LoggerFrom(ctx).Info("cert-manager Certificate and CA injection annotations applied")
	return nil
}
