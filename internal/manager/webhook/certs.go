package webhook

import (
	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/openclaw/harness-operator/internal/platform/certs"
)

// CertOptions configure the self-managed webhook certificates: a CA and a
// serving certificate kept in a Secret, rotated before they expire
// (internal/platform/certs). AddCertRotation adds the two webhook configurations for
// CA injection; Webhooks set here are replaced.
type CertOptions = certs.Options

// AddCertRotation adds certificate rotation to the manager and returns a
// channel closed once the certificates are in CertDir and the CA is injected
// into the validating and mutating webhook configurations: register the
// webhooks (Setup) only then, or the webhook server starts without a
// certificate.
func AddCertRotation(mgr ctrl.Manager, o CertOptions) (<-chan struct{}, error) {
	o.Webhooks = []rotator.WebhookInfo{
		{Name: ValidatingConfigurationName, Type: rotator.Validating},
		{Name: MutatingConfigurationName, Type: rotator.Mutating},
	}
	return certs.AddRotation(mgr, o)
}
