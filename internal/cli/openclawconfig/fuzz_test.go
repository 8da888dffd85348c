package openclawconfig

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/openclaw/harness-operator/internal/policy/selection"
	"github.com/openclaw/harness-operator/internal/testutil/crdschema"
)

// FuzzImport: the importer never panics on any file; a refusal says where
// (a parse error, a config path, or that the file has no runtime settings);
// every warning names a config path; and a policy it prints is one the API
// server admits (the CRD's schema and CEL rules) with ids already in the
// normalized form the defaulting webhook would write.
func FuzzImport(f *testing.F) {
	crd, err := crdschema.Load("../../../config/crd/bases/harness.openclaw.dev_runtimepolicies.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		`{models: {providers: {openai: {agentRuntime: {id: "codex"}}}}, agents: {defaults: {model: "openai/gpt-5.6-sol"}}}`,
		`{agents: {defaults: {models: {"anthropic/claude-opus-5": {agentRuntime: {id: "claude-cli"}}}}}}`,
		`{agents: {entries: {"codex-only": {default: true, model: "openai/gpt-5.6-sol", models: {"openai/gpt-5.6-sol": {agentRuntime: {id: "codex"}}}}}}}`,
		`{agents: {list: [{id: "main", models: {"openai/gpt-5.5": {agentRuntime: {id: "codex"}}}}]}}`,
		`{agents: {defaults: {agentRuntime: {id: "codex"}}}, models: {providers: {openai: {agentRuntime: {id: "auto"}}}}}`,
		`{models: {providers: {OpenAI: {models: [{id: "gpt-5.5", agentRuntime: {id: "PI"}}, {id: "gpt-4.1"}]}}}}`,
		`{models: {providers: {codex: {agentRuntime: {id: "codex-app-server"}}}}, agents: {defaults: {model: {primary: "codex/gpt-5", fallbacks: ["Codex/x", 1]}}}}`,
		`// comment
		{agents: {list: [{id: "a"}, {id: "a"}], entries: {a: {}}}, }`,
		`{agents: {list: [{id: " "}]}}`, `{}`, `[]`, `{models: null}`, `{models: {providers: {p: {models: 5}}}}`, `{`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := Import(data, Options{Name: "imported"})
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "parse OpenClaw config: ") && !strings.HasPrefix(msg, "agents") &&
				!strings.HasPrefix(msg, "models.providers") && !strings.HasPrefix(msg, "no runtime settings found") {
				t.Fatalf("the refusal says neither where nor why: %v", err)
			}
			return
		}
		for _, w := range res.Warnings {
			if !strings.HasPrefix(w, "models.providers.") && !strings.HasPrefix(w, "agents.") {
				t.Fatalf("a warning that names no config path: %q", w)
			}
		}
		p := res.Policy
		if err := crd.Default(p); err != nil {
			t.Fatal(err)
		}
		errs, err := crd.Validate(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if len(errs) > 0 {
			t.Fatalf("the imported policy is refused by the API server: %v\nconfig: %q\nspec: %+v", errs.ToAggregate(), data, p.Spec)
		}
		for _, row := range p.Spec.Providers {
			if string(row.Provider) != selection.NormalizeProvider(string(row.Provider)) {
				t.Fatalf("provider %q is not normalized", row.Provider)
			}
		}
	})
}

// TestImportRefusesWhatTheAPIRefuses: a config whose runtime settings would
// print a policy the API server refuses is refused by the import, naming the
// config path the value came from (FuzzImport found the first: a provider
// key that is no provider id).
func TestImportRefusesWhatTheAPIRefuses(t *testing.T) {
	many := func(n int) string {
		var b strings.Builder
		b.WriteString("{models: {providers: {")
		for i := range n {
			fmt.Fprintf(&b, "p%d: {agentRuntime: {id: \"codex\"}},", i)
		}
		b.WriteString("}}}")
		return b.String()
	}
	tests := []struct {
		name, config, wantErr string
	}{
		{name: "a provider key that is no provider id",
			config:  `{models: {providers: {$00000: {agentRuntime: {}}}}}`,
			wantErr: `models.providers.$00000: provider id "$00000" must be lowercase letters`},
		{name: "a runtime id with a space",
			config:  `{models: {providers: {openai: {agentRuntime: {id: "Codex Pro"}}}}}`,
			wantErr: `models.providers.openai.agentRuntime.id: runtime id "Codex Pro" must be lowercase letters`},
		{name: "a model ref with a space",
			config:  `{agents: {defaults: {models: {"openai/gpt 5": {agentRuntime: {id: "codex"}}}}}}`,
			wantErr: `agents.defaults.models["openai/gpt 5"]: model ref "openai/gpt 5" must be provider/model`},
		{name: "a catalog row id with a slash",
			config:  `{models: {providers: {openai: {models: [{id: "a/b", agentRuntime: {id: "codex"}}]}}}}`,
			wantErr: `models.providers.openai.models[0].id: model id "a/b" must be a bare model id`},
		{name: "an agents.entries key that is no agent id",
			config:  `{agents: {entries: {"my agent": {models: {"openai/gpt-5.5": {agentRuntime: {id: "codex"}}}}}}}`,
			wantErr: `agents.entries.my agent: agent id "my agent" must be letters`},
		{name: "an agents.list id that is no agent id",
			config:  `{agents: {list: [{id: "-x", models: {"openai/gpt-5.5": {agentRuntime: {id: "codex"}}}}]}}`,
			wantErr: `agents.list[0].id: agent id "-x" must be letters`},
		{name: "two provider keys that are one provider",
			config:  `{models: {providers: {OpenAI: {agentRuntime: {id: "codex"}}, openai: {agentRuntime: {id: "openclaw"}}}}}`,
			wantErr: `models.providers.openai: provider "openai" is also models.providers.OpenAI`},
		{name: "two model refs that are one ref",
			config:  `{agents: {defaults: {models: {"OpenAI/x": {agentRuntime: {id: "codex"}}, "openai/x": {agentRuntime: {id: "openclaw"}}}}}}`,
			wantErr: `agents.defaults.models["openai/x"]: model ref "openai/x" is also agents.defaults.models["OpenAI/x"]`},
		{name: "two catalog rows for one model",
			config:  `{models: {providers: {openai: {models: [{id: "m", agentRuntime: {id: "codex"}}, {id: "m", agentRuntime: {id: "auto"}}]}}}}`,
			wantErr: `models.providers.openai.models[1].id: model "m" is also models.providers.openai.models[0]`},
		{name: "more providers than a policy holds",
			config:  many(65),
			wantErr: `models.providers: 65 providers set runtimes; a RuntimePolicy holds at most 64`},
	}
	crd, err := crdschema.Load("../../../config/crd/bases/harness.openclaw.dev_runtimepolicies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Import([]byte(tt.config), Options{})
			if err == nil {
				errs, verr := crd.Validate(context.Background(), res.Policy)
				t.Fatalf("imported, want %q; the API server would say: %v %v", tt.wantErr, errs.ToAggregate(), verr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
	if _, err := Import([]byte(many(64)), Options{}); err != nil {
		t.Fatalf("64 providers, the API's limit, refused: %v", err)
	}
}
