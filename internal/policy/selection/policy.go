package selection

import (
	"slices"
	"strings"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// NormalizeRuntimeID returns the canonical form of a runtime id: trimmed and
// lowercased, empty and `default` → `auto`, `pi` → `openclaw`,
// `codex-app-server` → `codex`.
func NormalizeRuntimeID(id string) string {
	return canonicalRuntimeID(strings.ToLower(strings.TrimSpace(id)))
}

// canonicalRuntimeID is NormalizeRuntimeID of an id already trimmed and
// lowercased (harnessID has done both; Select does it once per harness).
func canonicalRuntimeID(n string) string {
	switch n {
	case "", "default":
		return string(v1alpha1.RuntimeAuto)
	case "pi":
		return string(v1alpha1.RuntimeOpenClaw)
	case "codex-app-server":
		return string(v1alpha1.RuntimeCodex)
	}
	return n
}

// NormalizeProvider returns the canonical form of a provider id: trimmed and
// lowercased (provider ids compare case-insensitively).
func NormalizeProvider(p string) string { return strings.ToLower(strings.TrimSpace(p)) }

// CLIBackendProvider returns the provider a CLI backend alias runs
// (`claude-cli` → anthropic, `google-gemini-cli` → google), or false when the
// normalized runtime id is not a CLI backend alias.
func CLIBackendProvider(runtime string) (string, bool) {
	switch runtime {
	case "claude-cli":
		return "anthropic", true
	case "google-gemini-cli":
		return "google", true
	}
	return "", false
}

// SplitModel returns the normalized provider and the model id of an attempt's
// provider and modelId. An empty provider is taken from a `provider/model`
// model id; a model id that repeats the given provider as its prefix loses it.
func SplitModel(provider, model string) (string, string) {
	p := NormalizeProvider(provider)
	m := strings.TrimSpace(model)
	if p == "" {
		if i := strings.IndexByte(m, '/'); i > 0 {
			return NormalizeProvider(m[:i]), m[i+1:]
		}
		return "", m
	}
	if len(m) > len(p) && m[len(p)] == '/' && strings.EqualFold(m[:len(p)], p) {
		return p, m[len(p)+1:]
	}
	return p, m
}

// PolicyKey is what runtime policy is resolved for: one agent's provider and
// model. An empty Provider means unknown.
type PolicyKey struct {
	// AgentID is the OpenClaw agent id.
	AgentID string
	// Provider is the normalized provider id, or empty when unknown.
	Provider string
	// Model is the model id without the provider prefix.
	Model string

	// agentWildcard and defaultsWildcard are, for an unknown provider, the
	// one provider that the agent's own `provider/*` entries, and the
	// top-level ones, name (ResolvePolicy sets them; empty when none or
	// several do).
	agentWildcard, defaultsWildcard string
}

// wildcardMatches reports whether a `provider/*` entry of provider applies;
// agent says whether the entry is the agent's own.
func (k PolicyKey) wildcardMatches(provider string, agent bool) bool {
	want := k.Provider
	if want == "" {
		want = k.defaultsWildcard
		if agent {
			want = k.agentWildcard
		}
	}
	return want != "" && strings.EqualFold(provider, want)
}

// PolicyResolution is what runtime policy asks for, without route facts.
type PolicyResolution struct {
	// Runtime is the normalized runtime id; `auto` when no entry applies.
	Runtime string
	// Source is the kind of entry that decided it (`default` when none).
	Source v1alpha1.PolicySource
	// Policy is the name of the deciding RuntimePolicy; empty when none.
	Policy string
	// Enforced is true when a Deny policy governs the key: Runtime is then its
	// runtime, and no override, pin or other policy may resolve differently.
	Enforced bool
	// MatchedPolicies are the policies with an entry for the key, the deciding
	// policy first, then the others oldest first.
	MatchedPolicies []string
	// Provider is the provider of the deciding `provider/model` or
	// `provider/*` entry when the key's provider was empty (OpenClaw matches
	// such entries for an empty caller provider and reports the entry's
	// provider as matchedProvider); else empty.
	Provider string
}

// Precedence levels of policy entries, highest first, in OpenClaw's order
// (resolveModelRuntimePolicy): model entries (the agent's own, then the
// defaults: spec.agents[].models, then spec.models; an exact
// `provider/model` ref before a bare `model` ref), then catalog rows, then
// `provider/*` model entries (the agent's own, then the defaults), then the
// provider-wide runtime.
const (
	levelAgentExact = iota
	levelAgentBare
	levelModelExact
	levelModelBare
	levelCatalog
	levelAgentWildcard
	levelProviderWildcard
	levelProvider
	levelNone
)

func levelSource(level int) v1alpha1.PolicySource {
	switch level {
	case levelAgentExact, levelAgentBare, levelAgentWildcard:
		return v1alpha1.PolicySourceAgent
	case levelModelExact, levelModelBare:
		return v1alpha1.PolicySourceModel
	case levelCatalog:
		return v1alpha1.PolicySourceCatalog
	case levelProviderWildcard:
		return v1alpha1.PolicySourceProviderWildcard
	case levelProvider:
		return v1alpha1.PolicySourceProvider
	}
	return v1alpha1.PolicySourceDefault
}

// runtimeSourceOf maps a policy source to the decision's runtime source:
// every model entry (agent, model, catalog, and `provider/*`, which OpenClaw
// reports with source `model`) is model-scoped, the provider-wide runtime
// provider-scoped.
func runtimeSourceOf(src v1alpha1.PolicySource) v1alpha1.RuntimeSource {
	switch src {
	case v1alpha1.PolicySourceAgent, v1alpha1.PolicySourceModel, v1alpha1.PolicySourceCatalog, v1alpha1.PolicySourceProviderWildcard:
		return v1alpha1.RuntimeSourceModel
	case v1alpha1.PolicySourceProvider:
		return v1alpha1.RuntimeSourceProvider
	}
	return v1alpha1.RuntimeSourceImplicit
}

// ResolvePolicy merges the RuntimePolicies that select the session's namespace
// for one key (docs/api.md, RuntimePolicy). Precedence: agent entry > exact
// model ref (then a bare model ref) > catalog row > agent `provider/*` >
// `provider/*` > provider-wide > auto. Two policies at the same level: the
// older wins (creationTimestamp, then name). A Deny policy that governs the key
// enforces: the oldest such policy decides, whatever the level of the other
// entries.
//
// With an unknown provider (a bare model id), as OpenClaw's
// resolveModelRuntimePolicy: the agent's own model entries are searched
// first, then the top-level ones, each on its own. In each, a model id that
// matches entries of two providers — a bare entry beside a
// `provider/model` one counts as a provider of its own — is ambiguous: then
// no policy applies at all (auto; nothing is refused, no `provider/*` entry
// is tried), and the top-level entries do not rescue an ambiguous agent.
// An agent's entry therefore beats a conflicting top-level one. Catalog rows
// and provider-wide entries never match an unknown provider. A `provider/*`
// entry matches when the wildcard entries of its kind (the agent's, or the
// top-level ones) name one provider only. Provider reports the deciding
// prefixed entry's provider. ResolvePolicy is pure and does not modify
// policies.
func ResolvePolicy(policies []*v1alpha1.RuntimePolicy, key PolicyKey) PolicyResolution {
	return resolvePolicy(policies, key, nil)
}

// resolvePolicy is ResolvePolicy; storage, when not nil, returns the slice
// (empty, with capacity n) that MatchedPolicies lists n names in.
func resolvePolicy(policies []*v1alpha1.RuntimePolicy, key PolicyKey, storage func(n int) []string) PolicyResolution {
	modelScoped := key.Model != ""
	if key.Provider == "" {
		if key.Model != "" && ambiguousModel(policies, key) {
			return PolicyResolution{Runtime: string(v1alpha1.RuntimeAuto), Source: v1alpha1.PolicySourceDefault}
		}
		key.agentWildcard = wildcardProvider(policies, key, true)
		key.defaultsWildcard = wildcardProvider(policies, key, false)
	}

	winner, deny := -1, -1
	winnerLevel, winnerRuntime, denyRuntime := levelNone, "", ""
	winnerProvider, denyProvider := "", ""
	denyLevel := levelNone
	// The matching policies' indices, so that listing them does not match
	// every policy a second time; a namespace is usually selected by few.
	var matchedBuf [16]int32
	matched := matchedBuf[:0]
	for i, p := range policies {
		if p == nil {
			continue
		}
		level, rt, provider := bestEntry(p, key, modelScoped)
		if level == levelNone {
			continue
		}
		matched = append(matched, int32(i))
		if level < winnerLevel || (level == winnerLevel && older(p, policies[winner])) {
			winner, winnerLevel, winnerRuntime, winnerProvider = i, level, rt, provider
		}
		if p.Spec.SessionOverrides == v1alpha1.SessionOverridesDeny && (deny < 0 || older(p, policies[deny])) {
			deny, denyLevel, denyRuntime, denyProvider = i, level, rt, provider
		}
	}
	res := PolicyResolution{Runtime: string(v1alpha1.RuntimeAuto), Source: v1alpha1.PolicySourceDefault}
	if len(matched) == 0 {
		return res
	}
	if deny >= 0 {
		winner, winnerLevel, winnerRuntime, winnerProvider = deny, denyLevel, denyRuntime, denyProvider
		res.Enforced = true
	}
	res.Runtime = winnerRuntime
	res.Source = levelSource(winnerLevel)
	res.Policy = policies[winner].Name
	if key.Provider == "" {
		res.Provider = winnerProvider
	}

	// The deciding policy first, then the others oldest first.
	others := slices.DeleteFunc(matched, func(i int32) bool { return int(i) == winner })
	slices.SortFunc(others, func(a, b int32) int { return comparePolicyAge(policies[a], policies[b]) })
	if storage != nil {
		res.MatchedPolicies = storage(len(others) + 1)
	} else {
		res.MatchedPolicies = make([]string, 0, len(others)+1)
	}
	res.MatchedPolicies = append(res.MatchedPolicies, res.Policy)
	for _, i := range others {
		res.MatchedPolicies = append(res.MatchedPolicies, policies[i].Name)
	}
	return res
}

// older reports whether a is older than b (creationTimestamp, then name).
func older(a, b *v1alpha1.RuntimePolicy) bool { return comparePolicyAge(a, b) < 0 }

func comparePolicyAge(a, b *v1alpha1.RuntimePolicy) int {
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// bestEntry returns the highest-precedence entry of one policy for key
// (levelNone when none applies), its normalized runtime and, for an unknown
// provider, the provider its ref names (empty for a bare ref). Within one
// policy and level the first entry in list order counts.
func bestEntry(p *v1alpha1.RuntimePolicy, key PolicyKey, modelScoped bool) (int, string, string) {
	level, rt, prov := levelNone, "", ""
	consider := func(l int, runtime v1alpha1.RuntimeID, ref string) {
		if l < level {
			level, rt = l, NormalizeRuntimeID(string(runtime))
			prov = ""
			if p, _, ok := strings.Cut(ref, "/"); ok && key.Provider == "" {
				prov = NormalizeProvider(p)
			}
		}
	}
	for i := range p.Spec.Agents {
		a := &p.Spec.Agents[i]
		if a.AgentID != key.AgentID {
			continue
		}
		for j := range a.Models {
			if l := refLevel(a.Models[j].Ref, key, modelScoped, levelAgentExact); l != levelNone {
				consider(l, a.Models[j].Runtime, a.Models[j].Ref)
			}
		}
	}
	for i := range p.Spec.Models {
		if l := refLevel(p.Spec.Models[i].Ref, key, modelScoped, levelModelExact); l != levelNone {
			consider(l, p.Spec.Models[i].Runtime, p.Spec.Models[i].Ref)
		}
	}
	for i := range p.Spec.Providers {
		pr := &p.Spec.Providers[i]
		providerMatches := key.Provider != "" && strings.EqualFold(string(pr.Provider), key.Provider)
		// Catalog rows and provider-wide entries apply to their provider
		// only: never to an unknown one.
		if modelScoped && providerMatches {
			for j := range pr.Models {
				if strings.EqualFold(pr.Models[j].ID, key.Model) {
					consider(levelCatalog, pr.Models[j].Runtime, "")
				}
			}
		}
		if providerMatches && pr.Runtime != "" {
			consider(levelProvider, pr.Runtime, "")
		}
	}
	return level, rt, prov
}

// refLevel returns the level of a model ref for key, relative to base (the
// exact level of agent or model entries), or levelNone when it does not match.
// `provider/*` ranks below catalog rows, the agent's own above the top-level
// ones (wildcardMatches says which provider it applies to).
func refLevel(ref string, key PolicyKey, modelScoped bool, base int) int {
	provider, model, hasProvider := strings.Cut(ref, "/")
	if !hasProvider {
		if modelScoped && strings.EqualFold(ref, key.Model) {
			return base + 1
		}
		return levelNone
	}
	if model == "*" {
		if !key.wildcardMatches(provider, base == levelAgentExact) {
			return levelNone
		}
		if base == levelAgentExact {
			return levelAgentWildcard
		}
		return levelProviderWildcard
	}
	if modelScoped && strings.EqualFold(model, key.Model) &&
		(key.Provider == "" || strings.EqualFold(provider, key.Provider)) {
		return base
	}
	return levelNone
}

// wildcardProvider is, for an unknown provider, the one provider that the
// `provider/*` entries of one kind name (the agent's own when agent, else
// the top-level ones), or empty when none or several do: OpenClaw searches
// the agent's entries, then the defaults, takes the provider from a lone
// match and skips a kind whose matches name two providers.
func wildcardProvider(policies []*v1alpha1.RuntimePolicy, key PolicyKey, agent bool) string {
	found := ""
	consider := func(ref string) bool {
		provider, model, ok := strings.Cut(ref, "/")
		if !ok || model != "*" {
			return true
		}
		provider = NormalizeProvider(provider)
		if found != "" && found != provider {
			found = ""
			return false
		}
		found = provider
		return true
	}
	if !eachModelRef(policies, key.AgentID, agent, consider) {
		return ""
	}
	return found
}

// eachModelRef calls fn with every model entry's ref of one kind that
// applies to the agent — the agent's own entries when agent, else the
// top-level ones — in policy order, until fn returns false; it reports
// whether fn never did.
func eachModelRef(policies []*v1alpha1.RuntimePolicy, agentID string, agent bool, fn func(ref string) bool) bool {
	for _, p := range policies {
		if p == nil {
			continue
		}
		if !agent {
			for _, m := range p.Spec.Models {
				if !fn(m.Ref) {
					return false
				}
			}
			continue
		}
		for i := range p.Spec.Agents {
			if p.Spec.Agents[i].AgentID != agentID {
				continue
			}
			for _, m := range p.Spec.Agents[i].Models {
				if !fn(m.Ref) {
					return false
				}
			}
		}
	}
	return true
}

// ambiguousModel reports whether, with an unknown provider, the model id is
// ambiguous where OpenClaw looks for it: in the agent's own model entries,
// or — when none of those match — in the top-level ones. A kind is ambiguous
// when its entries for the model id name two providers, a bare entry
// counting as a provider of its own (empty).
func ambiguousModel(policies []*v1alpha1.RuntimePolicy, key PolicyKey) bool {
	for _, agent := range []bool{true, false} {
		first, matched, ambiguous := "", false, false
		eachModelRef(policies, key.AgentID, agent, func(ref string) bool {
			provider, model, ok := strings.Cut(ref, "/")
			if !ok {
				provider, model = "", ref
			}
			if model == "*" || !strings.EqualFold(model, key.Model) {
				return true
			}
			provider = NormalizeProvider(provider)
			if matched && provider != first {
				ambiguous = true
				return false
			}
			first, matched = provider, true
			return true
		})
		if matched {
			return ambiguous
		}
	}
	return false
}
