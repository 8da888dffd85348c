package webhook

import (
	"strings"
	"testing"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// An allowed MCP URL prefix must be written as Codex's URL parser writes
// it, or it would admit nothing; a prefix the harness already had is left
// alone on update, so the harness's other changes still go through.
func TestMCPPrefixErrors(t *testing.T) {
	harness := func(prefixes ...string) *v1alpha1.AgentHarness {
		h := &v1alpha1.AgentHarness{}
		h.Spec.MCP = &v1alpha1.HarnessMCP{AllowedURLPrefixes: prefixes}
		return h
	}
	for _, tc := range []struct {
		name    string
		old, h  *v1alpha1.AgentHarness
		field   string // "" admitted
		message string
	}{
		{"no mcp", nil, &v1alpha1.AgentHarness{}, "", ""},
		{"canonical prefixes", nil, harness("https://mcp.example.com/tools/", "http://127.0.0.1:18080/allowed"), "", ""},
		{"an uppercase host", nil, harness("https://mcp.example.com/", "https://MCP.example.com/tools/"),
			"spec.mcp.allowedURLPrefixes[1]", `"https://mcp.example.com/tools/"`},
		{"the default port", nil, harness("https://mcp.example.com:443/tools/"), "spec.mcp.allowedURLPrefixes[0]", `"https://mcp.example.com/tools/"`},
		{"a backslash", nil, harness(`https://mcp.example.com/tools\`), "spec.mcp.allowedURLPrefixes[0]", `'\'`},
		{"a dot segment", nil, harness("https://mcp.example.com/a/../tools/"), "spec.mcp.allowedURLPrefixes[0]", ".."},
		{"a query", nil, harness("https://mcp.example.com/tools/?x=1"), "spec.mcp.allowedURLPrefixes[0]", "query"},
		{"an invalid prefix kept by an update", harness("https://MCP.example.com/tools/"),
			harness("https://MCP.example.com/tools/", "https://mcp.example.com/other/"), "", ""},
		{"an invalid prefix added by an update", harness("https://mcp.example.com/tools/"),
			harness("https://mcp.example.com/tools/", "https://MCP.example.com/other/"), "spec.mcp.allowedURLPrefixes[1]", "canonical"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := mcpPrefixErrors(tc.old, tc.h)
			if tc.field == "" {
				if len(errs) > 0 {
					t.Fatalf("refused: %v", errs)
				}
				return
			}
			if len(errs) != 1 || errs[0].Field != tc.field || !strings.Contains(errs[0].Detail, tc.message) {
				t.Fatalf("errs = %v, want one naming %s with %q", errs, tc.field, tc.message)
			}
		})
	}
}
