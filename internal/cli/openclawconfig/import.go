// Package openclawconfig turns the runtime settings of an OpenClaw config file
// (JSON5, as OpenClaw reads it) into the equivalent RuntimePolicy:
//
//	models.providers.<p>.agentRuntime.id           → spec.providers[] {provider, runtime}
//	models.providers.<p>.models[].agentRuntime.id  → spec.providers[].models[] (catalog rows)
//	agents.defaults.models.<ref>.agentRuntime.id   → spec.models[] {ref, runtime}
//	agents.list[] / agents.entries.<id> .models    → spec.agents[] {agentId, models}
//
// Legacy whole-agent pins (agents.defaults.agentRuntime, a per-agent
// agentRuntime) are ignored, as OpenClaw ignores them, with a warning; so are
// nothing else. Legacy codex/* model refs are imported with a warning.
package openclawconfig

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/titanous/json5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/policy/selection"
)

// Options shape the generated RuntimePolicy.
type Options struct {
	// Name is metadata.name of the policy.
	Name string
	// SessionOverrides is copied to spec.sessionOverrides when set.
	SessionOverrides v1alpha1.SessionOverridePolicy
}

// Result is the imported policy and what the import noticed.
type Result struct {
	// Policy is the equivalent RuntimePolicy.
	Policy *v1alpha1.RuntimePolicy
	// Warnings name each ignored legacy pin, legacy codex/* ref and normalized id,
	// by its path in the config.
	Warnings []string
}

// config is the subset of OpenClaw's config that carries runtime settings.
type config struct {
	Models *struct {
		Providers map[string]providerConfig `json:"providers"`
	} `json:"models"`
	Agents *struct {
		Defaults *agentConfig           `json:"defaults"`
		List     []agentConfig          `json:"list"`
		Entries  map[string]agentConfig `json:"entries"`
	} `json:"agents"`
}

type runtimeRef struct {
	ID string `json:"id"`
}

type providerConfig struct {
	AgentRuntime *runtimeRef    `json:"agentRuntime"`
	Models       []catalogModel `json:"models"`
}

type catalogModel struct {
	ID           string      `json:"id"`
	AgentRuntime *runtimeRef `json:"agentRuntime"`
}

type modelSettings struct {
	AgentRuntime *runtimeRef `json:"agentRuntime"`
}

type agentConfig struct {
	ID           string                   `json:"id"`
	Model        any                      `json:"model"`
	Models       map[string]modelSettings `json:"models"`
	AgentRuntime *runtimeRef              `json:"agentRuntime"`
}

// Import parses an OpenClaw config (JSON5) and returns the equivalent policy.
// A config with no runtime settings is an error: an empty policy means nothing.
func Import(data []byte, opts Options) (*Result, error) {
	var cfg config
	if err := json5.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("parse OpenClaw config: %w", err)
	}
	name := opts.Name
	if name == "" {
		name = "openclaw-config"
	}
	imp := &importer{}
	spec := v1alpha1.RuntimePolicySpec{SessionOverrides: opts.SessionOverrides}

	if cfg.Models != nil {
		seen := map[v1alpha1.ProviderID]string{}
		for _, p := range slices.Sorted(maps.Keys(cfg.Models.Providers)) {
			if row, ok := imp.provider(p, cfg.Models.Providers[p]); ok {
				if prev, dup := seen[row.Provider]; dup {
					imp.refuse("models.providers.%s: provider %q is also models.providers.%s", p, row.Provider, prev)
				}
				seen[row.Provider] = p
				spec.Providers = append(spec.Providers, row)
			}
		}
		imp.tooMany("models.providers", "providers", len(spec.Providers), maxProviders)
	}
	if cfg.Agents != nil {
		if d := cfg.Agents.Defaults; d != nil {
			if d.AgentRuntime != nil {
				imp.warn("agents.defaults.agentRuntime: legacy whole-agent runtime pin ignored (OpenClaw ignores it); put the runtime on a provider or model entry")
			}
			imp.legacyModel("agents.defaults.model", d.Model)
			spec.Models = imp.models("agents.defaults.models", d.Models)
			imp.tooMany("agents.defaults.models", "models", len(spec.Models), maxModels)
		}
		// Per-agent entries, keyed by agent id, remembering where each came from.
		type located struct {
			path  string
			agent agentConfig
		}
		agents := map[string]located{}
		for i, a := range cfg.Agents.List {
			path := fmt.Sprintf("agents.list[%d]", i)
			if strings.TrimSpace(a.ID) == "" {
				return nil, fmt.Errorf("%s.id: required", path)
			}
			if prev, dup := agents[a.ID]; dup {
				return nil, fmt.Errorf("%s.id: agent %q is also %s", path, a.ID, prev.path)
			}
			if !validID(agentIDRE, a.ID, maxAgentID) {
				imp.refuse("%s.id: agent id %q must be letters, digits, '.', '_' or '-', starting with a letter or digit, at most %d", path, a.ID, maxAgentID)
			}
			agents[a.ID] = located{path, a}
		}
		for _, id := range slices.Sorted(maps.Keys(cfg.Agents.Entries)) {
			path := "agents.entries." + id
			if prev, dup := agents[id]; dup {
				return nil, fmt.Errorf("%s: agent %q is also %s", path, id, prev.path)
			}
			if !validID(agentIDRE, id, maxAgentID) {
				imp.refuse("%s: agent id %q must be letters, digits, '.', '_' or '-', starting with a letter or digit, at most %d", path, id, maxAgentID)
			}
			agents[id] = located{path, cfg.Agents.Entries[id]}
		}
		for _, id := range slices.Sorted(maps.Keys(agents)) {
			a := agents[id]
			imp.agent(a.path, a.agent)
			if models := imp.models(a.path+".models", a.agent.Models); len(models) > 0 {
				imp.tooMany(a.path+".models", "models", len(models), maxAgentModels)
				spec.Agents = append(spec.Agents, v1alpha1.AgentRuntimePolicy{AgentID: id, Models: models})
			}
		}
		imp.tooMany("agents", "agents", len(spec.Agents), maxAgents)
	}
	if imp.err != nil {
		return nil, imp.err
	}
	if len(spec.Providers) == 0 && len(spec.Models) == 0 && len(spec.Agents) == 0 {
		return nil, fmt.Errorf("no runtime settings found (models.providers.*.agentRuntime, catalog rows, agents.defaults.models, agents.list[] or agents.entries models)")
	}
	return &Result{
		Policy: &v1alpha1.RuntimePolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "RuntimePolicy"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       spec,
		},
		Warnings: imp.warnings,
	}, nil
}

type importer struct {
	warnings []string
	err      error // the first value the API would refuse (validate.go)
}

func (imp *importer) warn(format string, args ...any) {
	imp.warnings = append(imp.warnings, fmt.Sprintf(format, args...))
}

// runtime normalizes a runtime id the way the API stores it, saying so when
// the spelling changes.
func (imp *importer) runtime(path string, r *runtimeRef) v1alpha1.RuntimeID {
	id := selection.NormalizeRuntimeID(r.ID)
	if !validID(runtimeIDRE, id, maxRuntimeID) {
		imp.refuse("%s.agentRuntime.id: runtime id %q must be lowercase letters, digits and '-', at most %d", path, r.ID, maxRuntimeID)
	}
	if id != r.ID {
		imp.warn("%s.agentRuntime.id: %q written as %q", path, r.ID, id)
	}
	return v1alpha1.RuntimeID(id)
}

func (imp *importer) provider(name string, p providerConfig) (v1alpha1.ProviderRuntimePolicy, bool) {
	path := "models.providers." + name
	row := v1alpha1.ProviderRuntimePolicy{Provider: v1alpha1.ProviderID(selection.NormalizeProvider(name))}
	if !validID(providerIDRE, string(row.Provider), maxProviderID) {
		imp.refuse("%s: provider id %q must be lowercase letters, digits, '.', '_' or '-', at most %d", path, name, maxProviderID)
	}
	if p.AgentRuntime != nil {
		row.Runtime = imp.runtime(path, p.AgentRuntime)
	}
	rows := map[string]int{}
	for i, m := range p.Models {
		if m.AgentRuntime == nil {
			continue // a catalog row without a runtime sets no policy
		}
		field := fmt.Sprintf("%s.models[%d].id", path, i)
		if !validCatalogModelID(m.ID) {
			imp.refuse("%s: model id %q must be a bare model id without '/', '*' or surrounding spaces, at most %d", field, m.ID, maxCatalogModelID)
		}
		if prev, dup := rows[m.ID]; dup {
			imp.refuse("%s: model %q is also %s.models[%d]", field, m.ID, path, prev)
		}
		rows[m.ID] = i
		row.Models = append(row.Models, v1alpha1.ProviderModelRuntime{
			ID:      m.ID,
			Runtime: imp.runtime(fmt.Sprintf("%s.models[%d]", path, i), m.AgentRuntime),
		})
	}
	imp.tooMany(path+".models", "catalog rows", len(row.Models), maxProviderModels)
	if name == "codex" {
		imp.warn("%s: legacy codex provider; new configs use openai/gpt-* model refs", path)
	}
	return row, row.Runtime != "" || len(row.Models) > 0
}

// agent warns about an agent's legacy settings.
func (imp *importer) agent(path string, a agentConfig) {
	if a.AgentRuntime != nil {
		imp.warn("%s.agentRuntime: legacy whole-agent runtime pin ignored (OpenClaw ignores it); put the runtime on the agent's model entry", path)
	}
	imp.legacyModel(path+".model", a.Model)
}

// models converts a `models` map (model ref → settings) into sorted entries.
func (imp *importer) models(path string, models map[string]modelSettings) []v1alpha1.ModelRuntimePolicy {
	var out []v1alpha1.ModelRuntimePolicy
	seen := map[string]string{}
	for _, ref := range slices.Sorted(maps.Keys(models)) {
		field := fmt.Sprintf("%s[%q]", path, ref)
		imp.legacyRef(field, ref)
		if models[ref].AgentRuntime == nil {
			continue
		}
		n := normalizeRef(ref)
		if !validID(modelRefRE, n, maxModelRef) {
			imp.refuse("%s: model ref %q must be provider/model, provider/* or a bare model id (lowercase provider, no spaces), at most %d", field, ref, maxModelRef)
		}
		if prev, dup := seen[n]; dup {
			imp.refuse("%s: model ref %q is also %s", field, n, prev)
		}
		seen[n] = field
		out = append(out, v1alpha1.ModelRuntimePolicy{
			Ref:     n,
			Runtime: imp.runtime(field, models[ref].AgentRuntime),
		})
	}
	return out
}

// legacyModel warns for codex/* refs in a `model` setting, which is a string
// or {primary, fallbacks}.
func (imp *importer) legacyModel(path string, model any) {
	switch m := model.(type) {
	case string:
		imp.legacyRef(path, m)
	case map[string]any:
		if p, ok := m["primary"].(string); ok {
			imp.legacyRef(path+".primary", p)
		}
		if fbs, ok := m["fallbacks"].([]any); ok {
			for i, fb := range fbs {
				if s, ok := fb.(string); ok {
					imp.legacyRef(fmt.Sprintf("%s.fallbacks[%d]", path, i), s)
				}
			}
		}
	}
}

func (imp *importer) legacyRef(path, ref string) {
	if strings.HasPrefix(strings.ToLower(strings.TrimSpace(ref)), "codex/") {
		imp.warn("%s: legacy model ref %q; new configs use openai/gpt-* refs (openclaw doctor --fix repairs them)", path, ref)
	}
}

// normalizeRef lowercases the provider part of a provider/model ref.
func normalizeRef(ref string) string {
	ref = strings.TrimSpace(ref)
	if p, m, ok := strings.Cut(ref, "/"); ok {
		return selection.NormalizeProvider(p) + "/" + m
	}
	return ref
}
