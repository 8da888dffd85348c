package selection

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// everyNamespace is an overlap function for policies that all select one namespace.
func everyNamespace(_, _ *v1alpha1.RuntimePolicy) bool { return true }

// noNamespace is an overlap function for policies with disjoint namespaces.
func noNamespace(_, _ *v1alpha1.RuntimePolicy) bool { return false }

// conflictStrings renders conflicts as "loser key loserRuntime -> winner winnerRuntime reason".
func conflictStrings(cs []PolicyConflict) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s %s %s -> %s %s %s", c.Loser, c.Key, c.LoserRuntime, c.Winner, c.WinnerRuntime, c.Reason))
	}
	return out
}

func nsSelector(l map[string]string) popt {
	return func(p *v1alpha1.RuntimePolicy) { p.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: l} }
}

func badSelector() popt {
	return func(p *v1alpha1.RuntimePolicy) {
		p.Spec.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Bogus"}}}
	}
}

func named(name string, p *v1alpha1.RuntimePolicy) *v1alpha1.RuntimePolicy {
	p.Name = name
	return p
}

const (
	olderWins = "OlderPolicyWins"
	denyWins  = "DenyPolicyWins"
)

// Case names that start with "rule N" check that rule of
// docs/design/contract-rules.md; the other policy, harness and session cases
// check what docs/api.md describes (its RuntimePolicy and AgentHarness
// sections, docs/controllers.md for conflicts).
func TestFindConflicts(t *testing.T) {
	type ps = []*v1alpha1.RuntimePolicy
	cases := []struct {
		name     string
		policies ps
		overlap  OverlapFunc
		want     []string
	}{
		{"one key, two runtimes: the newer policy loses to the older",
			ps{policy("a", 0, prov("openai", "codex")), policy("b", 1, prov("openai", "openclaw"))}, nil,
			[]string{"b */openai/* openclaw -> a codex " + olderWins}},
		{"the same runtime for one key is no conflict",
			ps{policy("a", 0, prov("openai", "codex")), policy("b", 1, prov("openai", "codex"))}, nil, nil},
		{"equal creationTimestamps: the name decides",
			ps{policy("b", 0, prov("openai", "openclaw")), policy("a", 0, prov("openai", "codex"))}, nil,
			[]string{"b */openai/* openclaw -> a codex " + olderWins}},
		{"the newer is judged by creationTimestamp, not the name",
			ps{policy("a", 1, prov("openai", "openclaw")), policy("z", 0, prov("openai", "codex"))}, nil,
			[]string{"a */openai/* openclaw -> z codex " + olderWins}},
		{"policies whose namespaces do not overlap do not conflict",
			ps{policy("a", 0, prov("openai", "codex")), policy("b", 1, prov("openai", "openclaw"))}, noNamespace, nil},
		{"precedence: an exact model ref over an older provider-wide entry is layering, not a conflict",
			ps{policy("a", 0, prov("openai", "codex")), policy("b", 1, model("openai/gpt-5.5", "openclaw"))}, nil, nil},
		{"precedence: an exact model ref over an older catalog row of the same model is layering",
			ps{policy("a", 0, prov("openai", "", row{"gpt-5.5", "codex"})), policy("b", 1, model("openai/gpt-5.5", "openclaw"))}, nil, nil},
		{"precedence: provider/* over an older provider-wide entry is layering",
			ps{policy("a", 0, prov("openai", "codex")), policy("b", 1, model("openai/*", "openclaw"))}, nil, nil},
		{"two catalog rows for one provider model conflict",
			ps{policy("a", 0, prov("openai", "", row{"gpt-5.5", "codex"})), policy("b", 1, prov("openai", "", row{"gpt-5.5", "openclaw"}))}, nil,
			[]string{"b */openai/gpt-5.5 openclaw -> a codex " + olderWins}},
		{"two provider/* refs conflict",
			ps{policy("a", 0, model("openai/*", "codex")), policy("b", 1, model("openai/*", "openclaw"))}, nil,
			[]string{"b */openai/* openclaw -> a codex " + olderWins}},
		{"two exact model refs conflict; model ids compare case-insensitively",
			ps{policy("a", 0, model("openai/gpt-5.5", "codex")), policy("b", 1, model("openai/GPT-5.5", "openclaw"))}, nil,
			[]string{"b */openai/gpt-5.5 openclaw -> a codex " + olderWins}},
		{"two bare model refs conflict for the model under any provider",
			ps{policy("a", 0, model("gpt-5.5", "codex")), policy("b", 1, model("gpt-5.5", "openclaw"))}, nil,
			[]string{"b */*/gpt-5.5 openclaw -> a codex " + olderWins}},
		{"precedence: a bare ref under an exact ref of another policy is layering",
			ps{policy("a", 0, model("gpt-5.5", "codex")), policy("b", 1, model("openai/gpt-5.5", "openclaw"))}, nil, nil},
		{"bare refs conflict even where one policy also has an exact ref for a provider",
			ps{policy("a", 0, model("gpt-5.5", "codex"), model("openai/gpt-5.5", "codex")), policy("b", 1, model("gpt-5.5", "openclaw"))}, nil,
			[]string{"b */*/gpt-5.5 openclaw -> a codex " + olderWins}},
		{"the key includes the agent: two entries of one agent conflict",
			ps{policy("a", 0, agent("main", "openai/gpt-5.5", "codex")), policy("b", 1, agent("main", "openai/gpt-5.5", "openclaw"))}, nil,
			[]string{"b main/openai/gpt-5.5 openclaw -> a codex " + olderWins}},
		{"entries of different agents are different keys",
			ps{policy("a", 0, agent("main", "openai/gpt-5.5", "codex")), policy("b", 1, agent("ops", "openai/gpt-5.5", "openclaw"))}, nil, nil},
		{"precedence: an agent entry over an older model entry is layering",
			ps{policy("a", 0, model("openai/gpt-5.5", "codex")), policy("b", 1, agent("main", "openai/gpt-5.5", "openclaw"))}, nil, nil},
		{"runtime ids are compared normalized (pi is openclaw, codex-app-server is codex)",
			ps{policy("a", 0, prov("openai", "pi"), prov("acme", "codex")), policy("b", 1, prov("openai", "openclaw"), prov("acme", "codex-app-server"))}, nil, nil},
		{"a newer Deny policy wins against an older Allow model entry it governs",
			ps{policy("a", 0, model("openai/gpt-5.5", "openclaw")), policy("d", 1, prov("openai", "codex"), deny())}, nil,
			[]string{"a */openai/gpt-5.5 openclaw -> d codex " + denyWins}},
		{"a provider-wide Deny policy governs provider/* of another policy",
			ps{policy("a", 0, model("openai/*", "openclaw")), policy("d", 1, prov("openai", "codex"), deny())}, nil,
			[]string{"a */openai/* openclaw -> d codex " + denyWins}},
		{"a provider-wide Deny policy governs the provider's catalog rows",
			ps{policy("a", 0, prov("openai", "", row{"gpt-5.5", "openclaw"})), policy("d", 1, prov("openai", "codex"), deny())}, nil,
			[]string{"a */openai/gpt-5.5 openclaw -> d codex " + denyWins}},
		{"a provider-wide Deny policy governs agent entries for the provider's models",
			ps{policy("a", 0, agent("main", "openai/gpt-5.5", "openclaw")), policy("d", 1, prov("openai", "codex"), deny())}, nil,
			[]string{"a main/openai/gpt-5.5 openclaw -> d codex " + denyWins}},
		{"a provider-wide Deny policy governs a bare ref under that provider",
			ps{policy("a", 0, model("gpt-5.5", "openclaw")), policy("d", 1, prov("openai", "codex"), deny())}, nil,
			[]string{"a */openai/gpt-5.5 openclaw -> d codex " + denyWins}},
		{"a provider-wide Deny policy wins the provider-wide key of an older policy",
			ps{codexOnly(), named("b", policy("b", -1, prov("openai", "openclaw")))}, nil,
			[]string{"b */openai/* openclaw -> codex-only codex " + denyWins}},
		{"an entry that agrees with the Deny policy is no conflict",
			ps{policy("a", 0, model("openai/gpt-5.5", "codex")), policy("d", 1, prov("openai", "codex"), deny())}, nil, nil},
		{"a Deny policy governs only its providers",
			ps{policy("a", 0, prov("anthropic", "openclaw")), policy("d", 1, prov("openai", "codex"), deny())}, nil, nil},
		{"a Deny policy enforces only where namespaces overlap",
			ps{policy("a", 0, model("openai/gpt-5.5", "openclaw")), policy("d", 1, prov("openai", "codex"), deny())}, noNamespace, nil},
		{"two Deny policies that disagree: the older wins",
			ps{policy("d1", 0, prov("openai", "codex"), deny()), policy("d2", 1, model("openai/gpt-5.5", "openclaw"), deny())}, nil,
			[]string{"d2 */openai/gpt-5.5 openclaw -> d1 codex " + denyWins}},
		{"two Deny policies that agree do not conflict",
			ps{policy("d1", 0, prov("openai", "codex"), deny()), policy("d2", 1, model("openai/gpt-5.5", "codex"), deny())}, nil, nil},
		{"a model-scoped Deny entry governs that model of a broader entry of another policy",
			ps{policy("a", 0, prov("openai", "openclaw")), policy("d", 1, model("openai/gpt-5.5", "codex"), deny())}, nil,
			[]string{"a */openai/gpt-5.5 openclaw -> d codex " + denyWins}},
		{"a Deny policy enforces its own layering: its exact entry beats its provider-wide entry",
			ps{policy("a", 0, model("openai/*", "codex")), policy("d", 1, prov("openai", "codex"), model("openai/gpt-4", "openclaw"), deny())}, nil,
			[]string{"a */openai/gpt-4 codex -> d openclaw " + denyWins}},
		{"a Deny policy enforcing auto contradicts an explicit runtime",
			ps{policy("a", 0, model("openai/gpt-5.5", "codex")), policy("d", 1, prov("openai", "auto"), deny())}, nil,
			[]string{"a */openai/gpt-5.5 codex -> d auto " + denyWins}},
		{"with three policies, the loser is reported against the oldest; one agreeing with it loses nothing",
			ps{policy("a", 0, prov("openai", "codex")), policy("b", 1, prov("openai", "openclaw")), policy("c", 2, prov("openai", "codex"))}, nil,
			[]string{"b */openai/* openclaw -> a codex " + olderWins}},
		{"a policy agreeing with the Deny policy loses nothing to an older disagreeing policy",
			ps{policy("x", 0, prov("openai", "openclaw")), policy("p", 1, prov("openai", "codex")), policy("d", 2, prov("openai", "codex"), deny())}, nil,
			[]string{"x */openai/* openclaw -> d codex " + denyWins}},
		{"one key has one winner: the Deny policy, not an older Allow policy",
			ps{policy("a", 0, prov("openai", "codex")), policy("d", 2, prov("openai", "auto"), deny()), policy("p", 1, prov("openai", "openclaw"))}, nil,
			[]string{"a */openai/* codex -> d auto " + denyWins, "p */openai/* openclaw -> d auto " + denyWins}},
		{"decision: nil policies are skipped",
			ps{nil, policy("a", 0, prov("openai", "codex")), nil, policy("b", 1, prov("openai", "openclaw"))}, nil,
			[]string{"b */openai/* openclaw -> a codex " + olderWins}},
		{"decision: conflicts are sorted by loser, then key",
			ps{policy("a", 0, prov("openai", "codex"), prov("acme", "h1")), policy("c", 1, prov("openai", "openclaw")), policy("b", 1, prov("acme", "h2"), prov("openai", "h2"))}, nil,
			[]string{"b */acme/* h2 -> a h1 " + olderWins, "b */openai/* h2 -> a codex " + olderWins, "c */openai/* openclaw -> a codex " + olderWins}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			overlap := tc.overlap
			if overlap == nil {
				overlap = everyNamespace
			}
			got := conflictStrings(FindConflicts(tc.policies, overlap))
			if !slices.Equal(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
			again := conflictStrings(FindConflicts(tc.policies, overlap))
			if !slices.Equal(got, again) {
				t.Errorf("decision: FindConflicts is not deterministic: %q then %q", got, again)
			}
		})
	}
}

// TestFindConflictsAgreesWithResolvePolicy checks that the winner of each
// reported key is the policy ResolvePolicy decides for a session there.
func TestFindConflictsAgreesWithResolvePolicy(t *testing.T) {
	ps := []*v1alpha1.RuntimePolicy{
		policy("a", 0, prov("openai", "", row{"gpt-5.5", "codex"}), agent("main", "openai/gpt-5.5", "codex")),
		policy("b", 1, prov("openai", "", row{"gpt-5.5", "openclaw"}), model("acme/m", "h1")),
		policy("d", 2, model("acme/*", "h2"), deny()),
		policy("e", 3, agent("main", "openai/gpt-5.5", "openclaw")),
	}
	got := FindConflicts(ps, everyNamespace)
	if len(got) != 3 {
		t.Fatalf("want 3 conflicts, got %q", conflictStrings(got))
	}
	for _, c := range got {
		var key PolicyKey
		switch c.Key {
		case "*/openai/gpt-5.5":
			key = PolicyKey{AgentID: "other", Provider: "openai", Model: "gpt-5.5"}
		case "main/openai/gpt-5.5":
			key = PolicyKey{AgentID: "main", Provider: "openai", Model: "gpt-5.5"}
		case "*/acme/m":
			key = PolicyKey{AgentID: "main", Provider: "acme", Model: "m"}
		default:
			t.Fatalf("unexpected key %q", c.Key)
		}
		r := ResolvePolicy(ps, key)
		if r.Policy != c.Winner || r.Runtime != c.WinnerRuntime {
			t.Errorf("%s: ResolvePolicy decides %s/%s, conflict says %s/%s", c.Key, r.Policy, r.Runtime, c.Winner, c.WinnerRuntime)
		}
	}
}

func TestConflictsFor(t *testing.T) {
	a := policy("a", 0, prov("openai", "codex"))
	b := policy("b", 1, prov("openai", "openclaw"), prov("acme", "h1"))
	c := policy("c", 2, prov("acme", "h2"), model("openai/*", "x"))
	all := []*v1alpha1.RuntimePolicy{a, b, c}
	if got := ConflictsFor(a, all, everyNamespace); len(got) != 0 {
		t.Errorf("the oldest policy loses nothing; got %q", conflictStrings(got))
	}
	want := []string{"c */acme/* h2 -> b h1 " + olderWins}
	if got := conflictStrings(ConflictsFor(c, all, everyNamespace)); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	// A policy not in the list is judged against it.
	if got := conflictStrings(ConflictsFor(policy("n", 9, prov("openai", "y")), all, everyNamespace)); !slices.Equal(got, []string{"n */openai/* y -> a codex " + olderWins}) {
		t.Errorf("got %q", got)
	}
	if ConflictsFor(nil, all, everyNamespace) != nil {
		t.Errorf("nil policy has conflicts")
	}
}

func TestConflictsWith(t *testing.T) {
	fresh := func(name string, opts ...popt) *v1alpha1.RuntimePolicy {
		p := policy(name, 0, opts...)
		p.CreationTimestamp = metav1.Time{}
		return p
	}
	cases := []struct {
		name      string
		candidate *v1alpha1.RuntimePolicy
		existing  []*v1alpha1.RuntimePolicy
		overlap   OverlapFunc
		want      []string
	}{
		{"a second policy mapping openai to openclaw under the Codex-only Deny policy loses with DenyPolicyWins (refused)",
			fresh("second", prov("openai", "openclaw")), []*v1alpha1.RuntimePolicy{codexOnly()}, nil,
			[]string{"second */openai/* openclaw -> codex-only codex " + denyWins}},
		{"a non-enforcing conflicting policy is treated as the newest and loses with OlderPolicyWins (warned)",
			fresh("new", prov("openai", "openclaw")), []*v1alpha1.RuntimePolicy{policy("old", 5, prov("openai", "codex"))}, nil,
			[]string{"new */openai/* openclaw -> old codex " + olderWins}},
		{"a create named before an existing policy is still the newest",
			fresh("a", prov("openai", "openclaw")), []*v1alpha1.RuntimePolicy{policy("z", 0, prov("openai", "codex"))}, nil,
			[]string{"a */openai/* openclaw -> z codex " + olderWins}},
		{"a new Deny policy wins against existing Allow policies (listed with the candidate as winner)",
			fresh("enforce", prov("openai", "codex"), deny()), []*v1alpha1.RuntimePolicy{policy("old", 0, model("openai/gpt-5.5", "openclaw"))}, nil,
			[]string{"old */openai/gpt-5.5 openclaw -> enforce codex " + denyWins}},
		{"a new Deny policy contradicting an older Deny policy loses",
			fresh("d2", prov("openai", "openclaw"), deny()), []*v1alpha1.RuntimePolicy{codexOnly()}, nil,
			[]string{"d2 */openai/* openclaw -> codex-only codex " + denyWins}},
		{"an update keeps its own age: an older policy updated to conflict wins against newer ones",
			policy("old", 0, prov("openai", "openclaw")), []*v1alpha1.RuntimePolicy{policy("old", 0, prov("openai", "codex")), policy("newer", 3, prov("openai", "codex"))}, nil,
			[]string{"newer */openai/* codex -> old openclaw " + olderWins}},
		{"decision: the stored version of the candidate is replaced, never a rival",
			policy("same", 0, prov("openai", "openclaw")), []*v1alpha1.RuntimePolicy{policy("same", 0, prov("openai", "codex"))}, nil, nil},
		{"a Deny policy over other namespaces does not refuse the entry",
			fresh("second", prov("openai", "openclaw")), []*v1alpha1.RuntimePolicy{codexOnly()}, noNamespace, nil},
		{"decision: conflicts among existing policies that do not involve the candidate are not listed",
			fresh("new", prov("acme", "h1")), []*v1alpha1.RuntimePolicy{policy("a", 0, prov("openai", "codex")), policy("b", 1, prov("openai", "openclaw"))}, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			overlap := tc.overlap
			if overlap == nil {
				overlap = everyNamespace
			}
			before := tc.candidate.DeepCopy()
			got := conflictStrings(ConflictsWith(tc.candidate, tc.existing, overlap))
			if !slices.Equal(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
			if !before.CreationTimestamp.Equal(&tc.candidate.CreationTimestamp) {
				t.Errorf("decision: ConflictsWith modified its candidate")
			}
		})
	}
}

func TestNamespaceOverlap(t *testing.T) {
	teamA := map[string]string{"team": "a"}
	prod := map[string]string{"env": "prod"}
	namespaces := map[string]map[string]string{
		"a-dev":  {"team": "a", "env": "dev"},
		"b-prod": {"team": "b", "env": "prod"},
		"agents": nil,
	}
	cases := []struct {
		name string
		a, b *v1alpha1.RuntimePolicy
		ns   map[string]map[string]string
		want bool
	}{
		{"an omitted namespaceSelector selects every namespace, so it overlaps any policy",
			policy("a", 0), policy("b", 0, nsSelector(teamA)), nil, true},
		{"an empty namespaceSelector selects every namespace",
			policy("a", 0, nsSelector(map[string]string{})), policy("b", 0, nsSelector(prod)), nil, true},
		{"decision: equal selectors overlap even before a namespace matches them",
			policy("a", 0, nsSelector(teamA)), policy("b", 0, nsSelector(map[string]string{"team": "a"})), nil, true},
		{"decision: different selectors overlap when a known namespace matches both",
			policy("a", 0, nsSelector(map[string]string{"team": "b"})), policy("b", 0, nsSelector(prod)), namespaces, true},
		{"decision: different selectors no known namespace matches both are disjoint",
			policy("a", 0, nsSelector(teamA)), policy("b", 0, nsSelector(prod)), namespaces, false},
		{"decision: the kubernetes.io/metadata.name label is implied",
			policy("a", 0, nsSelector(map[string]string{"kubernetes.io/metadata.name": "agents"})), policy("b", 0, nsSelector(map[string]string{"kubernetes.io/metadata.name": "agents", "x": ""})),
			map[string]map[string]string{"agents": {"x": ""}}, true},
		{"decision: a policy with an invalid selector overlaps nothing (not in force)",
			policy("a", 0, badSelector()), policy("b", 0), namespaces, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := NewNamespaceIndex(tc.ns).Overlap(tc.a, tc.b); got != tc.want {
				t.Errorf("got %v", got)
			}
			if got := NewNamespaceIndex(tc.ns).Overlap(tc.b, tc.a); got != tc.want {
				t.Errorf("not symmetric: got %v", got)
			}
		})
	}
}

func TestOverrideDeniedBy(t *testing.T) {
	teamDeny := policy("main-codex", 0, agent("main", "openai/gpt-5.5", "codex"), deny())
	cases := []struct {
		name         string
		policies     []*v1alpha1.RuntimePolicy
		agentID      string
		model        string
		override     v1alpha1.RuntimeID
		wantPolicy   string
		wantRequired string
		wantDenied   bool
	}{
		{"runtimeOverride openclaw on an openai model under Codex-only is denied",
			[]*v1alpha1.RuntimePolicy{codexOnly()}, "main", "openai/gpt-5.5", "openclaw", "codex-only", "codex", true},
		{"override aliases are normalized (pi is openclaw)",
			[]*v1alpha1.RuntimePolicy{codexOnly()}, "main", "openai/gpt-5.5", "pi", "codex-only", "codex", true},
		{"an override equal to the enforced runtime (after normalization) is allowed",
			[]*v1alpha1.RuntimePolicy{codexOnly()}, "main", "openai/gpt-5.5", "codex-app-server", "", "", false},
		{"rule 1: an empty override overrides nothing",
			[]*v1alpha1.RuntimePolicy{codexOnly()}, "main", "openai/gpt-5.5", "", "", "", false},
		{"rule 1: auto (and default) overrides nothing",
			[]*v1alpha1.RuntimePolicy{codexOnly()}, "main", "openai/gpt-5.5", "default", "", "", false},
		{"an Allow policy never denies an override",
			[]*v1alpha1.RuntimePolicy{policy("p", 0, prov("openai", "codex"))}, "main", "openai/gpt-5.5", "openclaw", "", "", false},
		{"a Deny policy for another provider does not govern the model",
			[]*v1alpha1.RuntimePolicy{codexOnly()}, "main", "anthropic/claude", "openclaw", "", "", false},
		{"a Deny agent entry governs only that agent",
			[]*v1alpha1.RuntimePolicy{teamDeny}, "other", "openai/gpt-5.5", "openclaw", "", "", false},
		{"a Deny agent entry governs that agent's model",
			[]*v1alpha1.RuntimePolicy{teamDeny}, "main", "openai/gpt-5.5", "openclaw", "main-codex", "codex", true},
		{"a Deny policy enforcing auto denies an explicit override",
			[]*v1alpha1.RuntimePolicy{policy("auto-only", 0, prov("openai", "auto"), deny())}, "main", "openai/gpt-5.5", "codex", "auto-only", "auto", true},
		{"the oldest Deny policy decides what is required",
			[]*v1alpha1.RuntimePolicy{policy("new", 2, prov("openai", "openclaw"), deny()), codexOnly()}, "main", "openai/gpt-5.5", "openclaw", "codex-only", "codex", true},
		{"decision: no policies, nothing denied",
			nil, "main", "openai/gpt-5.5", "openclaw", "", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, req, denied := OverrideDeniedBy(tc.policies, tc.agentID, tc.model, tc.override)
			if p != tc.wantPolicy || req != tc.wantRequired || denied != tc.wantDenied {
				t.Errorf("got %q %q %v", p, req, denied)
			}
		})
	}
}

func TestReferences(t *testing.T) {
	p := policy("p", 0, prov("openai", "codex-app-server", row{"gpt-4", "pi"}), model("acme/*", "h1"),
		model("gpt-5.5", "claude-cli"), agent("main", "openai/gpt-5.5", "auto"), agent("ops", "x/y", "google-gemini-cli"), prov("zeta", "H1"))
	if got := PolicyRuntimeIDs(p); !slices.Equal(got, []string{"auto", "claude-cli", "codex", "google-gemini-cli", "h1", "openclaw"}) {
		t.Errorf("runtime ids of every entry, normalized and deduplicated; got %q", got)
	}
	declared := func(id string) bool { return id == "codex" }
	if got := UnresolvedRuntimeIDs(p, declared); !slices.Equal(got, []string{"h1"}) {
		t.Errorf("rule 3: auto, openclaw and CLI backend aliases always resolve; got %q", got)
	}
	if got := UnresolvedRuntimeIDs(p, nil); !slices.Equal(got, []string{"codex", "h1"}) {
		t.Errorf("without harnesses only built-ins resolve; got %q", got)
	}
	for _, tc := range []struct {
		h      *v1alpha1.AgentHarness
		id     string
		usable bool
	}{
		{harness("codex"), "codex", true},
		{harness("My-Harness", noHarnessID()), "my-harness", true},
		{harness(" Pool "), "pool", true},
		{harness("openclaw"), "openclaw", false},
		{harness("codex-app-server"), "codex-app-server", false},
	} {
		id, usable := DeclaredHarnessID(tc.h)
		if id != tc.id || usable != tc.usable {
			t.Errorf("DeclaredHarnessID(%s) = %q, %v; want %q, %v", tc.h.Name, id, usable, tc.id, tc.usable)
		}
	}
	if id, ok := DeclaredHarnessID(nil); id != "" || ok {
		t.Errorf("nil harness declares %q", id)
	}
	if !BuiltinRuntime("auto") || !BuiltinRuntime("openclaw") || !BuiltinRuntime("claude-cli") || BuiltinRuntime("codex") {
		t.Errorf("rule 3: BuiltinRuntime")
	}
}

// A NamespaceIndex matches a selector that several policies spell alike with
// the namespaces once, and shares the answer; an invalid selector's error
// still names each policy that has it.
func TestNamespaceIndexSharesOnlyValidSelectorsBetweenPolicies(t *testing.T) {
	x := NewNamespaceIndex(map[string]map[string]string{"a": {"team": "x"}, "b": {"team": "y"}, "c": {"team": "x"}})
	team := nsSelector(map[string]string{"team": "x"})
	p1, p2 := policy("p1", 0, team), policy("p2", 1, nsSelector(map[string]string{"team": "x"}))
	for _, p := range []*v1alpha1.RuntimePolicy{p1, p2} {
		if got, err := x.Selected(p); err != nil || !slices.Equal(got, []string{"a", "c"}) {
			t.Errorf("%s selects %v (error %v), want [a c]", p.Name, got, err)
		}
	}
	bad1, bad2 := policy("bad1", 2, badSelector()), policy("bad2", 3, badSelector())
	for _, p := range []*v1alpha1.RuntimePolicy{bad1, bad2} {
		if _, err := x.Selected(p); err == nil || !strings.Contains(err.Error(), "RuntimePolicy "+p.Name+":") {
			t.Errorf("%s: error %v, want one naming RuntimePolicy %s", p.Name, err, p.Name)
		}
	}
}
