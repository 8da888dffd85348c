package webhook

import (
	"net"
	"net/url"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// AllowInsecureLoopbackExternalFlag is the manager (and dispatcher) flag that
// admits plain ws:// external servers on a loopback host, for development.
const AllowInsecureLoopbackExternalFlag = "--allow-insecure-loopback-external"

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
	path := field.NewPath("spec", "external", "url")
	u, err := url.Parse(e.URL)
	if err != nil {
		return field.ErrorList{field.Invalid(path, e.URL, "must be a wss:// URL")}
	}
	if u.User != nil {
		return field.ErrorList{field.Invalid(path, u.Redacted(), "must not carry userinfo (user:password@host); the token comes from spec.external.tokenSecretRef")}
	}
	switch {
	case u.Scheme == "wss":
		return nil
	case u.Scheme != "ws":
		return field.ErrorList{field.Invalid(path, e.URL, "must be a wss:// URL")}
	case !isLoopbackHost(u.Hostname()):
		return field.ErrorList{field.Invalid(path, e.URL, "must be wss://: plain ws:// is admitted only to a loopback host")}
	case !allowInsecureLoopback:
		return field.ErrorList{field.Invalid(path, e.URL,
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
