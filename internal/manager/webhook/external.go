package webhook

import (
	"net"
	"net/url"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/harness/externalserver"
	"github.com/openclaw/harness-operator/internal/platform/netguard"
)

// AllowInsecureLoopbackExternalFlag is the manager (and dispatcher) flag that
// admits plain ws:// external servers on a loopback host, for development.
const AllowInsecureLoopbackExternalFlag = "--" + netguard.AllowInsecureLoopbackFlag

// externalURLErrors refuses a plain ws:// external.url unless the manager
// runs with AllowInsecureLoopbackExternalFlag and the host is loopback: the
// capability token travels in the upgrade request, so anything else must be
// wss://. The CRD already refuses ws:// to other hosts and userinfo; this
// adds what the CRD cannot know, the manager's flag.
func externalURLErrors(h *v1alpha1.AgentHarness, allowInsecureLoopback bool) field.ErrorList {
	e := h.Spec.External
	if e == nil {
		return nil
	}
	var errs field.ErrorList
	if len(e.CABundle) > 0 {
		if _, err := externalserver.CertPool(e.CABundle); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("spec", "external", "caBundle"), "(PEM)", "must hold at least one PEM certificate"))
		}
	}
	return append(errs, externalURLFieldErrors(e.URL, allowInsecureLoopback)...)
}

// externalURLFieldErrors judges spec.external.url.
func externalURLFieldErrors(rawURL string, allowInsecureLoopback bool) field.ErrorList {
	path := field.NewPath("spec", "external", "url")
	u, err := url.Parse(rawURL)
	if err != nil {
		return field.ErrorList{field.Invalid(path, rawURL, "must be a wss:// URL")}
	}
	if u.User != nil {
		return field.ErrorList{field.Invalid(path, u.Redacted(), "must not carry userinfo (user:password@host); the token comes from spec.external.tokenSecretRef")}
	}
	switch {
	case u.Scheme == "wss":
		return nil
	case u.Scheme != "ws":
		return field.ErrorList{field.Invalid(path, rawURL, "must be a wss:// URL")}
	case !isLoopbackHost(u.Hostname()):
		return field.ErrorList{field.Invalid(path, rawURL, "must be wss://: plain ws:// is admitted only to a loopback host")}
	case !allowInsecureLoopback:
		return field.ErrorList{field.Invalid(path, rawURL,
			"must be wss://: plain ws:// to a loopback host is admitted only when the manager runs with "+AllowInsecureLoopbackExternalFlag+" (development)")}
	}
	return nil
}

// isLoopbackHost: localhost or a loopback IP literal. Other names are not
// resolved here; a name could resolve elsewhere later.
func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
