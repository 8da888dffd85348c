package webhook

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// mcpPrefixErrors refuses an entry of spec.mcp.allowedURLPrefixes that is
// not an MCP URL in the canonical form Codex requests
// (wire.ValidMCPURLPrefix): the dispatcher compares a turn's canonical URL
// with it as a string, so such a prefix would silently admit nothing. The
// CRD's pattern cannot tell (it allows an uppercase host or a `\`). An
// entry the harness already had (old, on update) is left alone: the
// dispatcher ignores it, and refusing it would block every other change.
func mcpPrefixErrors(old, h *v1alpha1.AgentHarness) field.ErrorList {
	if h.Spec.MCP == nil {
		return nil
	}
	had := map[string]bool{}
	if old != nil && old.Spec.MCP != nil {
		for _, p := range old.Spec.MCP.AllowedURLPrefixes {
			had[p] = true
		}
	}
	path := field.NewPath("spec", "mcp", "allowedURLPrefixes")
	var errs field.ErrorList
	for i, p := range h.Spec.MCP.AllowedURLPrefixes {
		if had[p] {
			continue
		}
		if err := wire.ValidMCPURLPrefix(p); err != nil {
			errs = append(errs, field.Invalid(path.Index(i), p, err.Error()))
		}
	}
	return errs
}
