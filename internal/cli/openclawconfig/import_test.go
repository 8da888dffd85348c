package openclawconfig

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

func TestImport(t *testing.T) {
	tests := []struct {
		name         string
		config       string
		opts         Options
		wantSpec     string // YAML of the expected spec
		wantWarnings []string
		wantErr      string
	}{
		{
			name:     "seed: Codex-only embedded runs set models.providers.openai.agentRuntime.id",
			config:   `{models: {providers: {openai: {agentRuntime: {id: "codex"}}}}, agents: {defaults: {model: "openai/gpt-5.6-sol"}}}`,
			opts:     Options{SessionOverrides: v1alpha1.SessionOverridesDeny},
			wantSpec: "providers:\n- provider: openai\n  runtime: codex\nsessionOverrides: Deny\n",
		},
		{
			name:     "seed: a CLI backend for one canonical model goes on that model entry",
			config:   `{agents: {defaults: {models: {"anthropic/claude-opus-5": {agentRuntime: {id: "claude-cli"}}}}}}`,
			wantSpec: "models:\n- ref: anthropic/claude-opus-5\n  runtime: claude-cli\n",
		},
		{
			name:     "seed: per-agent overrides use the same model-scoped shape (agents.entries)",
			config:   `{agents: {entries: {"codex-only": {default: true, model: "openai/gpt-5.6-sol", models: {"openai/gpt-5.6-sol": {agentRuntime: {id: "codex"}}}}}}}`,
			wantSpec: "agents:\n- agentId: codex-only\n  models:\n  - ref: openai/gpt-5.6-sol\n    runtime: codex\n",
		},
		{
			name:     "agents.list[] entries import like agents.entries",
			config:   `{agents: {list: [{id: "main", models: {"openai/gpt-5.5": {agentRuntime: {id: "codex"}}}}]}}`,
			wantSpec: "agents:\n- agentId: main\n  models:\n  - ref: openai/gpt-5.5\n    runtime: codex\n",
		},
		{
			name:         "seed: legacy whole-agent runtime examples are ignored (with a warning)",
			config:       `{agents: {defaults: {agentRuntime: {id: "codex"}}}, models: {providers: {openai: {agentRuntime: {id: "auto"}}}}}`,
			wantSpec:     "providers:\n- provider: openai\n  runtime: auto\n",
			wantWarnings: []string{"agents.defaults.agentRuntime: legacy whole-agent runtime pin ignored"},
		},
		{
			name:         "seed: a per-agent agentRuntime is a legacy whole-agent pin too",
			config:       `{agents: {list: [{id: "a", agentRuntime: {id: "codex"}, models: {"openai/gpt-5.5": {agentRuntime: {id: "openclaw"}}}}]}}`,
			wantSpec:     "agents:\n- agentId: a\n  models:\n  - ref: openai/gpt-5.5\n    runtime: openclaw\n",
			wantWarnings: []string{"agents.list[0].agentRuntime: legacy whole-agent runtime pin ignored"},
		},
		{
			name:     "provider catalog rows with a runtime become providers[].models",
			config:   `{models: {providers: {openai: {models: [{id: "gpt-5.5", agentRuntime: {id: "codex"}}, {id: "gpt-4.1"}]}}}}`,
			wantSpec: "providers:\n- models:\n  - id: gpt-5.5\n    runtime: codex\n  provider: openai\n",
		},
		{
			name:         "runtime aliases are stored normalized (pi, codex-app-server, default), with a warning",
			config:       `{models: {providers: {OpenAI: {agentRuntime: {id: "Codex-App-Server"}}, google: {agentRuntime: {id: "pi"}}, xai: {agentRuntime: {id: "default"}}}}}`,
			wantSpec:     "providers:\n- provider: openai\n  runtime: codex\n- provider: google\n  runtime: openclaw\n- provider: xai\n  runtime: auto\n",
			wantWarnings: []string{`"Codex-App-Server" written as "codex"`, `"pi" written as "openclaw"`, `"default" written as "auto"`},
		},
		{
			name: "seed: legacy codex/* refs remain accepted, with a warning wherever they appear",
			config: `{agents: {defaults: {model: {primary: "codex/gpt-5", fallbacks: ["openai/gpt-5.5", "codex/gpt-4"]},
			  models: {"codex/gpt-5": {agentRuntime: {id: "codex"}}}}}}`,
			wantSpec: "models:\n- ref: codex/gpt-5\n  runtime: codex\n",
			wantWarnings: []string{
				`agents.defaults.model.primary: legacy model ref "codex/gpt-5"`,
				`agents.defaults.model.fallbacks[1]: legacy model ref "codex/gpt-4"`,
				`agents.defaults.models["codex/gpt-5"]: legacy model ref "codex/gpt-5"`,
			},
		},
		{
			name:    "fail visibly: an agent in both agents.list and agents.entries is ambiguous",
			config:  `{agents: {list: [{id: "a", models: {"x/y": {agentRuntime: {id: "codex"}}}}], entries: {a: {models: {}}}}}`,
			wantErr: `agents.entries.a: agent "a" is also agents.list[0]`,
		},
		{
			name:    "fail visibly: agents.list[] without an id names the field",
			config:  `{agents: {list: [{models: {"x/y": {agentRuntime: {id: "codex"}}}}]}}`,
			wantErr: "agents.list[0].id: required",
		},
		{
			name:    "fail visibly: a config without runtime settings makes no empty policy",
			config:  `{agents: {defaults: {model: "openai/gpt-5.5"}}}`,
			wantErr: "no runtime settings found",
		},
		{
			name:    "fail visibly: malformed JSON5",
			config:  `{models: {providers: `,
			wantErr: "parse OpenClaw config",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Import([]byte(tt.config), tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := yaml.Marshal(res.Policy.Spec)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.wantSpec {
				t.Errorf("spec:\n%s\nwant:\n%s", got, tt.wantSpec)
			}
			if len(res.Warnings) != len(tt.wantWarnings) {
				t.Fatalf("warnings %q, want %d matching %q", res.Warnings, len(tt.wantWarnings), tt.wantWarnings)
			}
			for i, w := range tt.wantWarnings {
				if !strings.Contains(res.Warnings[i], w) {
					t.Errorf("warning %d = %q, want it to contain %q", i, res.Warnings[i], w)
				}
			}
			if res.Policy.Name != "openclaw-config" || res.Policy.Kind != "RuntimePolicy" {
				t.Errorf("policy %s %q, want RuntimePolicy openclaw-config", res.Policy.Kind, res.Policy.Name)
			}
		})
	}
}
