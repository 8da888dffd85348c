package codex

import (
	"errors"
	"slices"
	"testing"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
)

func TestReasoningEffort(t *testing.T) {
	t.Parallel()
	catalog := []string{"low", "medium", "high", "xhigh", "max", "ultra"}
	upToHigh := []string{"low", "medium", "high"}
	gap := []string{"low", "high"}
	cases := []struct {
		level     string
		supported []string
		want      string
	}{
		{"", nil, ""}, {"adaptive", catalog, ""},
		{"off", nil, "none"}, {"minimal", nil, "minimal"}, {"low", nil, "low"},
		{"medium", nil, "medium"}, {"high", nil, "high"}, {"xhigh", nil, "xhigh"}, {" High ", nil, "high"},
		{"off", catalog, "low"}, {"minimal", catalog, "low"}, {"xhigh", catalog, "xhigh"},
		{"xhigh", upToHigh, "high"}, {"medium", gap, "low"}, {"medium", []string{"turbo"}, "medium"},
	}
	for _, tc := range cases {
		got, err := ReasoningEffort(tc.level, tc.supported)
		if err != nil || got != tc.want {
			t.Errorf("ReasoningEffort(%q, %v) = %q, %v; want %q", tc.level, tc.supported, got, err, tc.want)
		}
	}
	if _, err := ReasoningEffort("max", nil); !errors.Is(err, adapter.ErrInvalidInput) {
		t.Errorf("unknown level: %v", err)
	}
}

func testCatalog() *ModelCatalog {
	return &ModelCatalog{Models: []CatalogModel{
		{Slug: "gpt-5.5", Aliases: []string{"gpt-5.5"}, Efforts: []string{"low", "medium", "high", "xhigh"}},
		{Slug: "gpt-5.5-pro", Aliases: []string{"gpt-5.5-pro"}, Efforts: []string{"high"}},
		{Slug: "gpt-6.1-sol", Aliases: []string{"gpt-6.1-sol"}},
	}}
}

func TestModelCatalogMatch(t *testing.T) {
	t.Parallel()
	cat := testCatalog()
	for _, m := range []string{"gpt-5.5", "gpt-5.5-mini", "GPT-5.5", "foo/gpt-5.5", "a/b/gpt-5.5", "my-gpt-5.5-ft", "gpt-6.1-sol-x"} {
		if !cat.Knows(m) {
			t.Errorf("Knows(%q) = false", m)
		}
		if ok, reason := CanIsolate(m, cat); ok || reason == "" {
			t.Errorf("CanIsolate(%q) = %v %q", m, ok, reason)
		}
	}
	for _, m := range []string{"stub-model", "gpt-5", "llama-3"} {
		if cat.Knows(m) {
			t.Errorf("Knows(%q) = true", m)
		}
		if ok, _ := CanIsolate(m, cat); !ok {
			t.Errorf("CanIsolate(%q) = false", m)
		}
	}
	if got := cat.Efforts("gpt-5.5-pro-2026"); !slices.Equal(got, []string{"high"}) {
		t.Errorf("Efforts picks the longest match: %v", got)
	}
	if cat.Efforts("llama") != nil || (*ModelCatalog)(nil).Knows("x") {
		t.Error("unknown models have no efforts")
	}
}

func TestSafeDenyConfig(t *testing.T) {
	t.Parallel()
	cat := testCatalog()
	cfg, err := SafeDenyConfig("stub-model", cat, []string{"exec", "web_search", "apply_patch", "ask_user", "web_fetch"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"features.shell_tool": false, "web_search": "disabled",
		"tools.experimental_request_user_input": map[string]any{"enabled": false}}
	if len(cfg) != len(want) || cfg["features.shell_tool"] != false || cfg["web_search"] != "disabled" || cfg["tools.experimental_request_user_input"] == nil {
		t.Fatalf("config %v, want %v", cfg, want)
	}
	if cfg, err := SafeDenyConfig("stub-model", cat, []string{"Read"}); err != nil || cfg["features.view_image"] != false {
		t.Fatalf("read → view_image off: %v %v", cfg, err)
	}
	if cfg, err := SafeDenyConfig("stub-model", cat, []string{"browser"}); err != nil || cfg != nil {
		t.Fatalf("a tool Codex does not have natively: %v %v", cfg, err)
	}
	for _, tc := range []struct {
		model string
		cat   *ModelCatalog
		ids   []string
	}{
		{"gpt-5.5", cat, []string{"write"}},
		{"gpt-5.5", cat, []string{"exec"}},
		{"stub-model", nil, []string{"edit"}}, // no catalog: assume the larger surface
	} {
		_, err := SafeDenyConfig(tc.model, tc.cat, tc.ids)
		var se *wire.Error
		if !errors.As(err, &se) || se.Code != wire.CodeToolPolicyUnenforceable {
			t.Errorf("%s %v: %v", tc.model, tc.ids, err)
		}
	}
}

func TestIsolationConfigIncludesNativeToolsOff(t *testing.T) {
	t.Parallel()
	cfg := IsolationConfig()
	for _, k := range []string{"features.shell_tool", "features.view_image", "web_search", "tools.experimental_request_user_input", "mcp_servers"} {
		if _, ok := cfg[k]; !ok {
			t.Errorf("IsolationConfig lacks %s", k)
		}
	}
	cfg["x"] = 1
	if _, ok := IsolationConfig()["x"]; ok {
		t.Error("IsolationConfig must return a fresh map")
	}
}

func TestSameJSON(t *testing.T) {
	t.Parallel()
	if !sameJSON([]byte(`{"a":1,"b":[1,2]}`), []byte(` { "b":[1,2], "a":1 } `)) || sameJSON([]byte(`{"a":1}`), []byte(`{"a":2}`)) {
		t.Fatal("sameJSON")
	}
}
