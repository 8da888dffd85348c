package selection

import (
	"testing"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// The OpenClaw plugin sends the denies OpenClaw left to the harness
// (pluginHarnessToolPolicySafeDeniedTools) as a deny layer of their own:
// the selected harness must enforce them itself, or the turn is refused per
// turn with ToolPolicyUnenforceable scoped to the harness (OpenClaw then
// tries its next candidate). The policy is never relaxed.
func TestPluginSafeDeniedLayer(t *testing.T) {
	pol := []*v1alpha1.RuntimePolicy{codexPol()}
	forwarded := func(names ...string) aopt {
		return tools(wire.ToolPolicy{Layers: []wire.ToolPolicyLayer{{Name: "openclaw-safe-denied", Deny: names}}})
	}
	cases := []selectCase{
		{
			name: "a harness without Exact refuses the turn, scoped to the harness",
			hs:   []*v1alpha1.AgentHarness{harness("codex", label("Codex"))}, ps: pol,
			a:    attempt("openai", gpt, forwarded(wire.SafeDenyWebSearch, wire.SafeDenySessionStatus)),
			code: wire.CodeToolPolicyUnenforceable, source: v1alpha1.RuntimeSourceProvider, msg: "Codex" + toolMsg,
			check: wantTools(true),
		},
		{
			name: "a harness declaring Exact and listing every name runs it, the names to deny on its own surface",
			hs:   []*v1alpha1.AgentHarness{harness("codex", exact(wire.SafeDenyWebSearch, wire.SafeDenySessionStatus, wire.SafeDenyMessage))}, ps: pol,
			a:       attempt("openai", gpt, forwarded(wire.SafeDenyWebSearch, wire.SafeDenySessionStatus)),
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceProvider,
			check: wantTools(false, wire.SafeDenySessionStatus, wire.SafeDenyWebSearch),
		},
		{
			name: "a harness declaring Exact without one of the names runs it restricted (isolated)",
			hs:   []*v1alpha1.AgentHarness{harness("codex", exact(wire.SafeDenyWebSearch))}, ps: pol,
			a:       attempt("openai", gpt, forwarded(wire.SafeDenyWebSearch, wire.SafeDenySessionStatus)),
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceProvider,
			check: wantTools(true),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { runSelectCase(t, tc) })
	}
}
