package webhook

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// modelGatewayErrors refuses spec.modelGateway.headers values with control
// characters: a line break would let a value add headers of its own to the
// gateway's upstream request. (CEL cannot afford to scan the values: their
// length has no bound in the schema, only in a rule.) Names are checked by
// CEL.
func modelGatewayErrors(h *v1alpha1.AgentHarness) field.ErrorList {
	g := h.Spec.ModelGateway
	if g == nil {
		return nil
	}
	path := field.NewPath("spec", "modelGateway", "headers")
	var errs field.ErrorList
	names := make([]string, 0, len(g.Headers))
	for name := range g.Headers {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !validHeaderValue(g.Headers[name]) {
			// The value is not echoed: it may be what the author meant to keep.
			errs = append(errs, field.Invalid(path.Key(name), "", "a header value must not hold control characters (line breaks, NUL, DEL; a tab is allowed)"))
		}
	}
	return errs
}

// validHeaderValue: visible characters, spaces and tabs (RFC 9110's
// field-value), and bytes of UTF-8 (obs-text).
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c == 0x7f || c < 0x20 && c != '\t' {
			return false
		}
	}
	return true
}
