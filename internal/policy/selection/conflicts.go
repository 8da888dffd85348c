package selection

import (
	"cmp"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// This file holds the cross-policy rules (docs/api.md, RuntimePolicy;
// docs/controllers.md, RuntimePolicy) that the RuntimePolicy
// controller reports (status.conflicts, Conflicted, ReferencesResolved) and the
// admission webhooks check, so both judge a policy the same way the dispatcher
// resolves it (ResolvePolicy). Everything here is pure: no I/O, no clock.
//
// Keys. An entry of a policy governs a set of sessions, written as a key
// `<agentId or *>/<provider or *>/<model or *>`:
//
//	providers[].runtime              */openai/*
//	providers[].models[] (catalog)   */openai/gpt-5.5
//	models[] "openai/gpt-5.5"        */openai/gpt-5.5
//	models[] "openai/*"              */openai/*
//	models[] "gpt-5.5" (bare)        */*/gpt-5.5   (the model under any provider)
//	agents[main].models[] "…"        main/…        (same shapes, agent main only)
//
// Provider and model are lowercased in keys (they compare case-insensitively,
// as in ResolvePolicy); agent ids are kept as written (they compare exactly).
// Two policies meet at the intersection of two of their entries' keys: a
// provider-wide `openai` entry and a bare `gpt-5.5` entry meet at
// `*/openai/gpt-5.5`. At a key, each policy asks for the runtime of its own
// highest-precedence entry there (ResolvePolicy's precedence within one policy).
//
// Conflicts. At a key where policy P and another policy Q whose namespaces
// overlap (see OverlapFunc) ask for different runtimes:
//
//   - Deny enforces. If a Deny policy governs the key, the oldest Deny policy
//     there decides, whatever the precedence of the entries: every other
//     policy asking for a different runtime loses the key to it with reason
//     DenyPolicyWins — an older Allow policy, a more specific entry, or a newer
//     Deny policy alike. A policy that agrees with the deciding Deny policy
//     loses nothing, even when an older non-enforcing policy disagrees (that
//     one loses to the Deny policy instead).
//   - Otherwise the older wins between entries of the same precedence level
//     (creationTimestamp, then name): the newer loses with OlderPolicyWins.
//     Entries of different levels do not conflict: the more specific one
//     applies by precedence (an exact model ref over a catalog row over
//     `provider/*` over provider-wide), which is layering, not a contradiction.
//
// A policy loses a key to exactly one winner (the one whose runtime applies
// between them: the deciding Deny policy, else the oldest policy at the same
// level), so a policy's conflicts have unique keys, as status.conflicts needs.
// These rules agree with ResolvePolicy whenever the policies involved select
// a common namespace.

// anyProvider is the provider of a key whose entries are all bare model refs:
// the model under a provider no entry names. It is not a valid provider id, so
// no provider-scoped entry, catalog row or `provider/model` ref matches it,
// while bare refs do — exactly ResolvePolicy's treatment of a provider that
// none of the policies names.
const anyProvider = "*"

// PolicyConflict is one key a RuntimePolicy loses to another
// (docs/controllers.md, RuntimePolicy).
type PolicyConflict struct {
	// Key is `<agentId or *>/<provider or *>/<model or *>`, the sessions the
	// two policies disagree about (see the package rules above).
	Key string
	// Loser is the name of the policy whose runtime does not apply.
	Loser string
	// LoserRuntime is the normalized runtime the loser asks for at Key.
	LoserRuntime string
	// Winner is the name of the policy whose runtime applies.
	Winner string
	// WinnerRuntime is the normalized runtime the winner asks for at Key.
	WinnerRuntime string
	// Reason is OlderPolicyWins or DenyPolicyWins.
	Reason v1alpha1.PolicyConditionReason
}

// OverlapFunc reports whether two policies may select a common namespace;
// conflicts are only considered between overlapping policies. It is usually
// the Overlap of a NamespaceIndex of the cluster's namespaces.
type OverlapFunc func(a, b *v1alpha1.RuntimePolicy) bool

// FindConflicts returns every conflict among policies: for each policy, the
// keys it loses, with the winning policy. Nil entries are skipped; a name that
// appears twice counts once (the first). The result is sorted by loser name,
// then key. FindConflicts does not modify policies.
func FindConflicts(policies []*v1alpha1.RuntimePolicy, overlap OverlapFunc) []PolicyConflict {
	set := newPolicySet(uniquePolicies(policies), overlap)
	var out []PolicyConflict
	for _, p := range set.all {
		out = append(out, set.conflictsOf(p)...)
	}
	sortConflicts(out)
	return out
}

// ConflictsFor returns the keys policy loses among policies (it may be in
// the list, by name, or not), sorted by key: what its status.conflicts and
// Conflicted condition report.
func ConflictsFor(policy *v1alpha1.RuntimePolicy, policies []*v1alpha1.RuntimePolicy, overlap OverlapFunc) []PolicyConflict {
	if policy == nil {
		return nil
	}
	out := newPolicySet(withCandidate(policy, policies), overlap).conflictsOf(policy)
	sortConflicts(out)
	return out
}

// ConflictsWith returns what admitting candidate (a new policy, or a new
// version of an existing one) would conflict with among the existing
// policies: the keys candidate loses (Loser == candidate.Name) and the keys
// existing policies would lose to it (Winner == candidate.Name). A candidate
// without a creationTimestamp (a create) is treated as the newest policy; an
// update keeps its own creationTimestamp, so it is judged at its real age as
// the controller will. Existing policies named like candidate are replaced by
// it. Sorted by loser name, then key.
//
// For admission: a conflict the candidate loses with DenyPolicyWins is a new
// entry contradicting a Deny policy (refuse, naming Winner); one it loses with
// OlderPolicyWins is resolved by the controller (warn); one an existing policy
// loses to a candidate Deny policy is a new enforcement (warn).
func ConflictsWith(candidate *v1alpha1.RuntimePolicy, existing []*v1alpha1.RuntimePolicy, overlap OverlapFunc) []PolicyConflict {
	if candidate == nil {
		return nil
	}
	cand := candidate
	if candidate.CreationTimestamp.IsZero() {
		cand = candidate.DeepCopy()
		newest := metav1.Time{}
		for _, p := range existing {
			if p != nil && p.CreationTimestamp.After(newest.Time) {
				newest = p.CreationTimestamp
			}
		}
		cand.CreationTimestamp = metav1.NewTime(newest.Add(time.Second))
	}
	set := newPolicySet(withCandidate(cand, existing), overlap)
	out := set.conflictsOf(cand)
	candDenies := cand.Spec.SessionOverrides == v1alpha1.SessionOverridesDeny
	for _, q := range set.all {
		// q can lose a key to cand only when cand is the deciding Deny
		// policy there or the oldest policy at q's level: a policy that
		// neither enforces nor is older than q never wins against it.
		if q == cand || (!candDenies && !older(cand, q)) || !overlap(q, cand) {
			continue
		}
		for _, c := range set.conflictsOf(q) {
			if c.Winner == cand.Name {
				out = append(out, c)
			}
		}
	}
	sortConflicts(out)
	return out
}

// OverrideDeniedBy reports whether a session's runtimeOverride contradicts an
// enforcing Deny policy (docs/design/contract-rules.md, rule 1:
// OverrideDenied). policies must
// be the RuntimePolicies that select the session's namespace (SnapshotFor or
// PolicySelects); model is the session's `provider/model`. The override is
// normalized (`pi` → openclaw, …); an empty or `auto` override overrides
// nothing and is never denied. When denied, policy is the deciding Deny
// policy and required the runtime it enforces for the session — the check the
// dispatcher makes (Select) for the override.
func OverrideDeniedBy(policies []*v1alpha1.RuntimePolicy, agentID, model string, override v1alpha1.RuntimeID) (policy string, required string, denied bool) {
	ov := NormalizeRuntimeID(string(override))
	if ov == string(v1alpha1.RuntimeAuto) {
		return "", "", false
	}
	provider, m := SplitModel("", model)
	res := ResolvePolicy(policies, PolicyKey{AgentID: agentID, Provider: provider, Model: m})
	if !res.Enforced || res.Runtime == ov {
		return "", "", false
	}
	return res.Policy, res.Runtime, true
}

// PolicyRuntimeIDs returns the normalized runtime ids a policy names in any
// entry (provider-wide, catalog rows, model refs, agent entries), sorted and
// without duplicates.
func PolicyRuntimeIDs(p *v1alpha1.RuntimePolicy) []string {
	if p == nil {
		return nil
	}
	var ids []string
	for _, e := range policyEntries(p) {
		ids = append(ids, NormalizeRuntimeID(string(e.runtime)))
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// BuiltinRuntime reports whether a normalized runtime id resolves without an
// AgentHarness: `auto`, `openclaw`, and the CLI backend aliases
// (`claude-cli`, `google-gemini-cli`; registered or not, such a turn passes
// through to openclaw — docs/design/contract-rules.md, rule 3).
func BuiltinRuntime(id string) bool {
	if id == string(v1alpha1.RuntimeAuto) || id == string(v1alpha1.RuntimeOpenClaw) {
		return true
	}
	_, cli := CLIBackendProvider(id)
	return cli
}

// DeclaredHarnessID returns the harness id an AgentHarness declares
// (spec.harnessId, else metadata.name; trimmed and lowercased) and whether it
// can be selected: false for a reserved id (a built-in runtime id or alias),
// which never resolves a reference. It is the id Select looks harnesses up by.
func DeclaredHarnessID(h *v1alpha1.AgentHarness) (string, bool) {
	if h == nil {
		return "", false
	}
	id, reserved := harnessID(h)
	return id, !reserved
}

// UnresolvedRuntimeIDs returns the runtime ids a policy names that neither
// are built in (BuiltinRuntime) nor satisfy declared — typically "some
// AgentHarness visible to a namespace the policy selects declares this id"
// (DeclaredHarnessID, HarnessVisible). Sorted, without duplicates. Such ids
// are accepted but fail closed at dispatch (HarnessNotRegistered).
func UnresolvedRuntimeIDs(p *v1alpha1.RuntimePolicy, declared func(id string) bool) []string {
	var out []string
	for _, id := range PolicyRuntimeIDs(p) {
		if !BuiltinRuntime(id) && (declared == nil || !declared(id)) {
			out = append(out, id)
		}
	}
	return out
}

// scope is the set of sessions an entry governs: agent "" is every agent,
// provider anyProvider the model under any provider (a bare ref), model "" every
// model of the provider. Provider and model are lowercased.
type scope struct{ agent, provider, model string }

func (s scope) key() string {
	agent, model := s.agent, s.model
	if agent == "" {
		agent = "*"
	}
	if model == "" {
		model = "*"
	}
	return agent + "/" + s.provider + "/" + model
}

func (s scope) policyKey() PolicyKey {
	return PolicyKey{AgentID: s.agent, Provider: s.provider, Model: s.model}
}

// intersect returns the sessions both scopes govern, or false when none.
func intersect(a, b scope) (scope, bool) {
	pick := func(x, y, wildcard string) (string, bool) {
		switch {
		case x == wildcard:
			return y, true
		case y == wildcard, x == y:
			return x, true
		}
		return "", false
	}
	var s scope
	var ok bool
	if s.agent, ok = pick(a.agent, b.agent, ""); !ok {
		return scope{}, false
	}
	if s.provider, ok = pick(a.provider, b.provider, anyProvider); !ok {
		return scope{}, false
	}
	if s.model, ok = pick(a.model, b.model, ""); !ok {
		return scope{}, false
	}
	return s, true
}

// entry is one runtime entry of a policy with the scope it governs.
type entry struct {
	scope   scope
	runtime v1alpha1.RuntimeID
}

// policyEntries lists a policy's entries in spec order.
func policyEntries(p *v1alpha1.RuntimePolicy) []entry {
	var out []entry
	for i := range p.Spec.Providers {
		pr := &p.Spec.Providers[i]
		provider := NormalizeProvider(string(pr.Provider))
		if pr.Runtime != "" {
			out = append(out, entry{scope{provider: provider}, pr.Runtime})
		}
		for _, m := range pr.Models {
			out = append(out, entry{scope{provider: provider, model: strings.ToLower(m.ID)}, m.Runtime})
		}
	}
	for _, m := range p.Spec.Models {
		out = append(out, entry{refScope("", m.Ref), m.Runtime})
	}
	for i := range p.Spec.Agents {
		a := &p.Spec.Agents[i]
		for _, m := range a.Models {
			out = append(out, entry{refScope(a.AgentID, m.Ref), m.Runtime})
		}
	}
	return out
}

// refScope is the scope of a model ref (`provider/model`, `provider/*` or a
// bare model id), as refLevel matches it.
func refScope(agent, ref string) scope {
	provider, model, hasProvider := strings.Cut(ref, "/")
	if !hasProvider {
		return scope{agent: agent, provider: anyProvider, model: strings.ToLower(ref)}
	}
	if model == "*" {
		model = ""
	}
	return scope{agent: agent, provider: NormalizeProvider(provider), model: strings.ToLower(model)}
}

// stand is what one policy asks for at a key.
type stand struct {
	q       *v1alpha1.RuntimePolicy
	level   int
	runtime string
}

// policySet is the policies one search for conflicts looks at, with each
// policy's entries listed once: finding the conflicts of every policy looks
// at every pair of policies.
type policySet struct {
	all     []*v1alpha1.RuntimePolicy
	overlap OverlapFunc
	entries map[*v1alpha1.RuntimePolicy][]entry
}

func newPolicySet(all []*v1alpha1.RuntimePolicy, overlap OverlapFunc) *policySet {
	return &policySet{all: all, overlap: overlap, entries: make(map[*v1alpha1.RuntimePolicy][]entry, len(all))}
}

// entriesOf is policyEntries(p), listed once per set.
func (set *policySet) entriesOf(p *v1alpha1.RuntimePolicy) []entry {
	es, ok := set.entries[p]
	if !ok {
		es = policyEntries(p)
		set.entries[p] = es
	}
	return es
}

// conflictsOf returns the keys p loses among the set's policies (which may
// contain p), in probe order. See the package rules above.
func (set *policySet) conflictsOf(p *v1alpha1.RuntimePolicy) []PolicyConflict {
	var rivals []*v1alpha1.RuntimePolicy
	for _, q := range set.all {
		if q != nil && q != p && q.Name != p.Name && set.overlap(p, q) {
			rivals = append(rivals, q)
		}
	}
	if len(rivals) == 0 {
		return nil
	}

	// The keys where p meets a rival: intersections of their entries.
	own := set.entriesOf(p)
	seen := map[scope]bool{}
	var probes []scope
	for _, q := range rivals {
		for _, f := range set.entriesOf(q) {
			for _, e := range own {
				if s, ok := intersect(e.scope, f.scope); ok && !seen[s] {
					seen[s] = true
					probes = append(probes, s)
				}
			}
		}
	}

	var out []PolicyConflict
	for _, s := range probes {
		key := s.policyKey()
		modelScoped := s.model != ""
		pLevel, pRuntime, _ := bestEntry(p, key, modelScoped)
		if pLevel == levelNone {
			continue
		}
		var deny, sameLevel *stand
		if p.Spec.SessionOverrides == v1alpha1.SessionOverridesDeny {
			deny = &stand{p, pLevel, pRuntime}
		}
		for _, q := range rivals {
			level, rt, _ := bestEntry(q, key, modelScoped)
			if level == levelNone {
				continue
			}
			decides := q.Spec.SessionOverrides == v1alpha1.SessionOverridesDeny && (deny == nil || older(q, deny.q))
			oldest := level == pLevel && older(q, p) && (sameLevel == nil || older(q, sameLevel.q))
			if !decides && !oldest {
				continue
			}
			st := &stand{q, level, rt}
			if decides {
				deny = st
			}
			if oldest {
				sameLevel = st
			}
		}
		var winner *stand
		reason := v1alpha1.PolicyReasonOlderPolicyWins
		switch {
		case deny != nil:
			// The oldest Deny policy decides the key; agreeing with it is enough.
			if deny.q != p && deny.runtime != pRuntime {
				winner, reason = deny, v1alpha1.PolicyReasonDenyPolicyWins
			}
		case sameLevel != nil && sameLevel.runtime != pRuntime:
			winner = sameLevel
		}
		if winner != nil {
			out = append(out, PolicyConflict{
				Key: s.key(), Loser: p.Name, LoserRuntime: pRuntime,
				Winner: winner.q.Name, WinnerRuntime: winner.runtime, Reason: reason,
			})
		}
	}
	return out
}

// uniquePolicies drops nil entries and later duplicates of a name.
func uniquePolicies(policies []*v1alpha1.RuntimePolicy) []*v1alpha1.RuntimePolicy {
	out := make([]*v1alpha1.RuntimePolicy, 0, len(policies))
	names := map[string]bool{}
	for _, p := range policies {
		if p != nil && !names[p.Name] {
			names[p.Name] = true
			out = append(out, p)
		}
	}
	return out
}

// withCandidate returns the policies with those named like candidate replaced by it.
func withCandidate(candidate *v1alpha1.RuntimePolicy, policies []*v1alpha1.RuntimePolicy) []*v1alpha1.RuntimePolicy {
	out := make([]*v1alpha1.RuntimePolicy, 0, len(policies)+1)
	for _, p := range uniquePolicies(policies) {
		if p.Name != candidate.Name {
			out = append(out, p)
		}
	}
	return append(out, candidate)
}

func sortConflicts(cs []PolicyConflict) {
	slices.SortFunc(cs, func(a, b PolicyConflict) int {
		return cmp.Or(strings.Compare(a.Loser, b.Loser), strings.Compare(a.Key, b.Key), strings.Compare(a.Winner, b.Winner))
	})
}
