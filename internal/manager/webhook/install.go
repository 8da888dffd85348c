package webhook

import (
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
)

// Mode is where the webhook server's certificates come from.
type Mode string

const (
	// ModeSelfManaged: the manager keeps a CA and serving certificate in a
	// Secret, rotates them and injects the CA into the webhook configurations.
	ModeSelfManaged Mode = "self-managed"
	// ModeCertManager: cert-manager issues the certificate (mounted into the
	// certificate directory) and injects the CA; the manager only serves.
	ModeCertManager Mode = "cert-manager"
	// ModeDisabled: no webhooks; only the CRDs' own validation applies.
	ModeDisabled Mode = "disabled"
)

// InstallOptions say how the webhooks get their certificates and what the
// validators enforce beyond the API types.
type InstallOptions struct {
	// Mode is where the serving certificates come from.
	Mode Mode
	// Certs configure self-managed certificates (and name the Secret and DNS
	// name in cert-manager mode).
	Certs CertOptions
	// Issuer names the cert-manager issuer (`Issuer/<name>` or
	// `ClusterIssuer/<name>`; empty creates a self-signed Issuer).
	Issuer string
	// HarnessNamespaces are the only namespaces AgentHarnesses are admitted
	// in (the operator may read Secrets only there). Empty admits none.
	HarnessNamespaces []string
	// AllowInsecureLoopbackExternal admits plain ws:// external servers on a
	// loopback host (AllowInsecureLoopbackExternalFlag, development only).
	AllowInsecureLoopbackExternal bool
	// AccessReviewCacheTTL is how long an allowed SubjectAccessReview of a
	// requester is reused (AccessReviewCacheTTLFlag; reviews.go). 0 reuses
	// none; identical reviews in flight are shared either way.
	AccessReviewCacheTTL time.Duration
}

// Install sets up the admission webhooks and returns a readiness check that
// passes once they serve. With self-managed certificates the webhooks are
// registered only after the rotator has written the certificates and
// injected the CA, so the server never starts without one. In cert-manager
// mode the manager applies the Certificate and the CA injection annotations
// at start-up.
func Install(mgr ctrl.Manager, o InstallOptions) (healthz.Checker, error) {
	if o.AccessReviewCacheTTL < 0 || o.AccessReviewCacheTTL > MaxAccessReviewCacheTTL {
		return nil, fmt.Errorf("%s must be between 0 and %s, got %s", AccessReviewCacheTTLFlag, MaxAccessReviewCacheTTL, o.AccessReviewCacheTTL)
	}
	if o.Mode == ModeDisabled {
		return healthz.Ping, nil
	}
	certs := o.Certs
	var registered atomic.Bool
	var registerErr atomic.Pointer[error]
	register := func() error {
		if err := Setup(mgr, o); err != nil {
			registerErr.Store(&err)
			return err
		}
		registered.Store(true)
		return nil
	}
	checker := func(req *http.Request) error {
		if errp := registerErr.Load(); errp != nil {
			return *errp
		}
		if !registered.Load() {
			return errors.New("webhook certificates are not ready")
		}
		return mgr.GetWebhookServer().StartedChecker()(req)
	}
	if o.Mode == ModeCertManager {
		objs, err := CertManagerObjects(certs, o.Issuer)
		if err != nil {
			return nil, err
		}
		if err := mgr.Add(&certManagerSetup{c: mgr.GetClient(), objs: append(objs, CertManagerAnnotations(certs)...)}); err != nil {
			return nil, fmt.Errorf("add cert-manager setup: %w", err)
		}
		return checker, register()
	}
	// Every replica serves webhooks and needs the files, so rotation does not
	// wait for leadership; concurrent rotations resolve through resourceVersion.
	certs.RequireLeaderElection = false
	ready, err := AddCertRotation(mgr, certs)
	if err != nil {
		return nil, err
	}
	go func() {
		<-ready
		if err := register(); err != nil {
			ctrl.Log.Error(err, "register webhooks")
		}
	}()
	return checker, nil
}
