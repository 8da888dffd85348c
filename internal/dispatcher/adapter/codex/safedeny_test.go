package codex

import (
	"slices"
	"testing"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/policy/toolpolicy"
)

// The OpenClaw plugin declares wire.SafeDenyTools safe to deny: for each
// name this adapter must deny the tool by itself on every model — a catalog
// model, a model Codex does not know, and an unread catalog (the larger
// surface) — without refusing the turn: the host tool of that name is not
// offered, and a native equivalent is switched off for the thread.
func TestPluginSafeDenyToolsAreEnforcedOnEveryModel(t *testing.T) {
	t.Parallel()
	cat := testCatalog()
	for _, name := range wire.SafeDenyTools() {
		if !toolpolicy.IsCoreTool(name) {
			t.Errorf("%q is not a canonical OpenClaw core tool id: it would cover nothing", name)
		}
		for _, m := range []struct {
			model string
			cat   *ModelCatalog
		}{{"gpt-5.5", cat}, {"gpt-6.1-sol", cat}, {"stub-model", cat}, {"stub-model", nil}} {
			if _, err := SafeDenyConfig(m.model, m.cat, []string{name}); err != nil {
				t.Errorf("%s on %s (catalog read: %v): %v", name, m.model, m.cat != nil, err)
			}
		}
		in := adapter.TurnInput{
			Tools:           []wire.HostTool{{Name: name, Description: "d"}, {Name: "kb_search", Description: "d"}},
			SafeDeniedTools: []string{name},
		}
		var offered []string
		for _, tool := range offeredTools(in) {
			offered = append(offered, tool.Name)
		}
		if !slices.Equal(offered, []string{"kb_search"}) {
			t.Errorf("safe-denied %s: host tools offered %v, want [kb_search]", name, offered)
		}
	}
}
