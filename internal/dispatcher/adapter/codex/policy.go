package codex

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/policy/toolpolicy"
)

// CatalogModel is one model of Codex's catalog (model/list).
type CatalogModel struct {
	// Slug is the model id (Codex's `id`; `model` when they differ, both are
	// kept as Aliases).
	Slug    string
	Aliases []string
	Hidden  bool
	// Efforts are the reasoning efforts the catalog advertises.
	Efforts []string
}

// ModelCatalog is the set of models a connected app-server has metadata for:
// model/list with includeHidden, all pages.
type ModelCatalog struct {
	Models []CatalogModel
}

// LoadModelCatalog reads the server's model catalog (appserver.ListModels:
// includeHidden, every page, bounded).
func LoadModelCatalog(ctx context.Context, c *appserver.Client) (*ModelCatalog, error) {
	models, err := c.ListModels(ctx)
	if err != nil {
		return nil, fmt.Errorf("codex: %w", err)
	}
	cat := &ModelCatalog{}
	for _, m := range models {
		cm := CatalogModel{Slug: m.ID, Aliases: m.Names(), Hidden: m.Hidden, Efforts: m.Efforts}
		if cm.Slug == "" {
			cm.Slug = m.Model
		}
		cat.Models = append(cat.Models, cm)
	}
	return cat, nil
}

// Match returns the catalog models whose metadata Codex may apply to model,
// decided conservatively: every catalog slug that occurs in the model id,
// case-insensitively. Codex 0.169.0 itself strips one leading `namespace/`
// segment and then takes catalog metadata for any id that starts with a
// catalog slug (gpt-5.5-mini, gpt-5.5:latest and foo/gpt-5.5 all get
// gpt-5.5's metadata; xgpt-5.5, a/b/gpt-5.5 and GPT-5.5 do not); the
// substring rule covers those and errs only towards "known", i.e. towards
// failing a restricted turn closed.
func (m *ModelCatalog) Match(model string) []CatalogModel {
	if m == nil {
		return nil
	}
	id := strings.ToLower(model)
	var out []CatalogModel
	for _, cm := range m.Models {
		for _, a := range cm.Aliases {
			if a != "" && strings.Contains(id, strings.ToLower(a)) {
				out = append(out, cm)
				break
			}
		}
	}
	return out
}

// Knows reports whether Codex may apply catalog metadata to model (Match is
// not empty).
func (m *ModelCatalog) Knows(model string) bool { return len(m.Match(model)) > 0 }

// Efforts returns the reasoning efforts the catalog advertises for model:
// those of the longest matching slug, or nil for a model Codex does not know.
func (m *ModelCatalog) Efforts(model string) []string {
	var best *CatalogModel
	matches := m.Match(model)
	for i := range matches {
		if best == nil || len(matches[i].Slug) > len(best.Slug) {
			best = &matches[i]
		}
	}
	if best == nil {
		return nil
	}
	return best.Efforts
}

// CanIsolate reports whether Codex can isolate its native tool surface for
// model, so that a restricted turn's model is offered only the dynamic tools
// of the turn; reason explains a false.
//
// Evidence (Codex 0.169.0, docs/codex-app-server.md "Native tool surface per
// thread", and this package's TestCanIsolateMatchesRecordedRequests): with
// IsolationConfig() a model Codex does not know (fallback metadata) is
// offered only the dynamic tools, and a forced call to a native tool is
// answered "unsupported call" without running. For a model of Codex's
// catalog no option leaves only the dynamic tools: apply_patch stays (as a
// tool for gpt-5.5, inside the code-mode exec tool for gpt-6.x together with
// the MCP-resource helpers). A nil catalog (not read) cannot prove anything
// and yields false.
func CanIsolate(model string, cat *ModelCatalog) (bool, string) {
	if cat == nil {
		return false, "the model catalog of the app-server is unknown"
	}
	if ms := cat.Match(model); len(ms) > 0 {
		slugs := make([]string, len(ms))
		for i, m := range ms {
			slugs[i] = m.Slug
		}
		return false, fmt.Sprintf("model %q matches Codex catalog model %s, for which Codex keeps native tools "+
			"(apply_patch, MCP resource helpers) even with every native tool switched off", model, strings.Join(slugs, ", "))
	}
	return true, ""
}

// IsolationConfig is the thread-level config of a restricted turn: the four
// keys of appserver.NativeToolsOffConfig (shell, view_image, web_search,
// request_user_input off) plus overrides that remove tool sources a pod's
// config.toml may add: `mcp_servers = {}` (a configured MCP server adds its
// tools and the MCP-resource helpers even for models Codex does not know;
// the empty per-thread table removes them — tested), and the features that
// bring apps, plugins, image generation, browser and computer use, memories
// and sub-agents. Codex does not persist thread config: it is sent on every
// thread/start and thread/resume of a restricted turn.
func IsolationConfig() map[string]any {
	cfg := appserver.NativeToolsOffConfig()
	cfg["mcp_servers"] = map[string]any{}
	for _, f := range []string{"apps", "plugins", "image_generation", "browser_use", "browser_use_external",
		"computer_use", "in_app_browser", "tool_suggest", "memories", "goals"} {
		cfg["features."+f] = false
	}
	cfg["agents.enabled"] = false
	return cfg
}

// nativeTool is one tool of Codex's own surface, the core tool ids it
// implements, and the thread config that removes it.
type nativeTool struct {
	name    string
	coreIDs []string
	off     map[string]any // nil: no per-thread key removes it
	catalog bool           // offered only to catalog models
}

// nativeTools is Codex 0.169.0's native surface as this operator observed it
// (docs/codex-app-server.md): fallback-metadata models get exec_command and
// write_stdin, view_image, web_search and request_user_input; catalog models
// also get apply_patch (and, in code mode, the exec tool and MCP helpers).
var nativeTools = []nativeTool{
	{name: "exec_command/write_stdin", coreIDs: []string{"exec", "process"}, off: map[string]any{"features.shell_tool": false}},
	{name: "view_image", coreIDs: []string{"view_image", "read"}, off: map[string]any{"features.view_image": false}},
	{name: "web_search", coreIDs: []string{"web_search"}, off: map[string]any{"web_search": "disabled"}},
	{name: "request_user_input", coreIDs: []string{"ask_user"},
		off: map[string]any{"tools.experimental_request_user_input": map[string]any{"enabled": false}}},
	{name: "apply_patch", coreIDs: []string{"apply_patch", "write", "edit"}, catalog: true},
	{name: "code-mode exec", coreIDs: []string{"exec", "process", "code_execution"}, catalog: true},
}

// SafeDenyConfig returns the thread config that denies the safe-denied core
// tools on Codex's native surface for model (an unrestricted turn keeps the
// rest of the surface). A safe-denied tool whose native equivalent cannot be
// removed for this model — apply_patch, write, edit and exec on a catalog
// model — makes the turn unenforceable: the error is a
// ToolPolicyUnenforceable *wire.Error.
func SafeDenyConfig(model string, cat *ModelCatalog, safeDenied []string) (map[string]any, error) {
	if len(safeDenied) == 0 {
		return nil, nil
	}
	known := cat.Knows(model)
	if cat == nil {
		known = true // unproven: assume the larger surface
	}
	cfg := map[string]any{}
	var stuck []string
	for _, id := range safeDenied {
		id = toolpolicy.Normalize(id)
		for _, nt := range nativeTools {
			if !slices.Contains(nt.coreIDs, id) || (nt.catalog && !known) {
				continue
			}
			if nt.off == nil {
				stuck = append(stuck, fmt.Sprintf("%s (native %s)", id, nt.name))
				continue
			}
			maps.Copy(cfg, nt.off)
		}
	}
	if len(stuck) > 0 {
		return nil, unenforceableForModel(fmt.Sprintf("safe-denied tools cannot be denied on Codex's native surface for model %q: %s",
			model, strings.Join(stuck, ", ")))
	}
	if len(cfg) == 0 {
		return nil, nil
	}
	return cfg, nil
}

// unenforceable is the fail-closed error of rule 6 for a refusal any model
// on Codex would get: scope harness (rule 5; docs/design/contract-rules.md).
func unenforceable(msg string) *wire.Error {
	return wire.Errorf(wire.CodeToolPolicyUnenforceable, wire.ScopeHarness, "%s", msg)
}

// unenforceableForModel is the same refusal when it depends on the model
// (Codex's catalog models keep native tools that others do not): no scope,
// because another model on Codex may run the turn
// (docs/design/contract-rules.md, rule 5).
func unenforceableForModel(msg string) *wire.Error {
	return wire.Errorf(wire.CodeToolPolicyUnenforceable, "", "%s", msg)
}
