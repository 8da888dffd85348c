package selection

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// benchSnapshot has n registered harnesses for provider acme with mixed
// auto-selection modes, priorities, route policies and tool-policy
// declarations, 8 policies (one of them matching the attempt with auto), and a
// 3-route retry set every route of which the winner supports.
func benchSnapshot(n int) (Snapshot, *wire.Attempt) {
	var hs []*v1alpha1.AgentHarness
	for i := range n {
		id := fmt.Sprintf("h%03d", i)
		s := v1alpha1.HarnessSupport{
			Providers:                 []v1alpha1.ProviderID{"acme", "other"},
			Priority:                  ptr.To(int32(i % 17)),
			RequestTransportOverrides: v1alpha1.RequestTransportOverridesUnsupportedWithFallback,
			RoutePolicy:               v1alpha1.RoutePolicyMustListHarness,
			PreparedAuth:              &v1alpha1.PreparedAuthSupport{APIKeyModes: []string{"api-key"}},
		}
		var opts []hopt
		switch i % 4 {
		case 1:
			s.RoutePolicy = v1alpha1.RoutePolicyAny
			opts = append(opts, exact("browser"))
		case 2:
			opts = append(opts, autoSel(v1alpha1.AutoSelectionListed, "acme", "other"))
		case 3:
			opts = append(opts, autoSel(v1alpha1.AutoSelectionExplicitOnly))
		}
		hs = append(hs, harness(id, append(opts, written(s), label("Harness "+id))...))
	}
	ps := []*v1alpha1.RuntimePolicy{
		policy("acme-auto", 0, prov("acme", "auto", row{"m2", "openclaw"}, row{"m3", "h001"})),
		policy("openai-codex", 1, prov("openai", "codex"), deny()),
		policy("anthropic-cli", 2, model("anthropic/claude-opus-5", "claude-cli"), model("anthropic/*", "openclaw")),
		policy("agents", 3, agent("ops", "acme/m1", "h002"), agent("main", "other/m9", "h003")),
		policy("bare", 4, model("m7", "openclaw"), model("m8", "h004")),
		policy("google", 5, prov("google", "google-gemini-cli")),
		policy("other", 6, prov("other", "h005", row{"m1", "openclaw"})),
		policy("acme-late", 7, model("acme/m4", "h006")),
	}
	route := func(url string) wire.ModelProvider {
		return wire.ModelProvider{
			API: "acme-chat", BaseURL: url, RequestTransportOverrides: wire.TransportOverridesNone,
			RuntimePolicy: &wire.RouteRuntimePolicy{CompatibleIDs: []string{"h000", "h002", "h004", "h008"}},
			PreparedAuth:  &wire.PreparedAuth{Source: wire.AuthSourceDirect, Mode: "api-key", Requirement: wire.AuthRequirementAPIKey},
		}
	}
	a := &wire.Attempt{
		RunID: "run-1", AgentID: "main", Provider: "acme", ModelID: "m1",
		ModelProviders: []wire.ModelProvider{route("https://a.acme.example/v1"), route("https://b.acme.example/v1"), route("https://c.acme.example/v1")},
		ToolPolicy:     &wire.ToolPolicy{Profile: "coding", Layers: []wire.ToolPolicyLayer{{Name: "agent", Deny: []string{"browser"}}}},
	}
	return Snapshot{Harnesses: hs, Policies: ps}, a
}

func BenchmarkSelect(b *testing.B) {
	s, a := benchSnapshot(64)
	if d := Select(s, a); d.Error != nil || d.Reason != wire.ReasonAutoPlugin || len(d.Candidates) != 64 || len(d.Routes) != 3 ||
		d.ToolPolicy == nil || len(d.ToolPolicy.SafeDeniedTools) != 1 {
		b.Fatalf("unexpected decision %+v", d)
	}
	b.ReportAllocs()
	for b.Loop() {
		Select(s, a)
	}
}

// sparseSnapshot is benchSnapshot(8) (the winner, h005, and four other
// supporters) plus n-8 harnesses that do not match the attempt, each refused
// for a different reason in turn: a route that does not list it, a provider it
// does not support, an explicit-only or listed-elsewhere autoSelection, an
// api-key mode it does not declare. Whatever n, the decision is the same.
func sparseSnapshot(n int) (Snapshot, *wire.Attempt) {
	s, a := benchSnapshot(8)
	for i := range n - 8 {
		id := fmt.Sprintf("x%04d", i)
		sup := v1alpha1.HarnessSupport{
			Providers:   []v1alpha1.ProviderID{"acme"},
			Priority:    ptr.To(int32(i % 23)),
			RoutePolicy: v1alpha1.RoutePolicyMustListHarness,
		}
		var opts []hopt
		switch i % 5 {
		case 1:
			sup.Providers = []v1alpha1.ProviderID{"other"}
		case 2:
			opts = append(opts, autoSel(v1alpha1.AutoSelectionExplicitOnly))
		case 3:
			opts = append(opts, autoSel(v1alpha1.AutoSelectionListed, "other"))
		case 4:
			sup.RoutePolicy = v1alpha1.RoutePolicyAny
			sup.PreparedAuth = &v1alpha1.PreparedAuthSupport{APIKeyModes: []string{"key-file"}}
		}
		s.Harnesses = append(s.Harnesses, harness(id, append(opts, written(sup))...))
	}
	return s, a
}

// nonMatchingSizes are the harness counts of sparseSnapshot that the
// benchmark and the allocation test compare. The smallest already has every
// kind of refusal: a route's reason that names it is built once per kind
// (route.reason), so allocations are bounded by routes × kinds, and from 16
// harnesses on they are the same whatever the number that does not match.
var nonMatchingSizes = []int{16, 64, 512}

// BenchmarkSelectNonMatching shows the cost of harnesses that do not match:
// allocs/op is the same at every size (TestSelectAllocationsDoNotGrowWithNonMatchingHarnesses
// holds it), ns/op grows with the candidates listed.
func BenchmarkSelectNonMatching(b *testing.B) {
	for _, n := range nonMatchingSizes {
		b.Run(fmt.Sprintf("harnesses=%d", n), func(b *testing.B) {
			s, a := sparseSnapshot(n)
			if d := Select(s, a); d.Error != nil || d.Runtime != "h005" || len(d.Candidates) != n || supported(d) != 5 {
				b.Fatalf("unexpected decision: runtime %q, error %v, %d candidates, %d supported", d.Runtime, d.Error, len(d.Candidates), supported(d))
			}
			b.ReportAllocs()
			for b.Loop() {
				Select(s, a)
			}
		})
	}
}

// TestSelectAllocationsDoNotGrowWithNonMatchingHarnesses: a namespace that sees
// many harnesses that cannot run its turns pays no allocation for each of them
// (the selection goal, docs/benchmarks/selection.md). Allocation counts are
// deterministic; this is not a timing assertion.
func TestSelectAllocationsDoNotGrowWithNonMatchingHarnesses(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not deterministic under the race detector (sync.Pool drops items)")
	}
	var first float64
	for i, n := range nonMatchingSizes {
		s, a := sparseSnapshot(n)
		if got := supported(Select(s, a)); got != 5 {
			t.Fatalf("%d harnesses: %d supported candidates, want the same 5 at every size", n, got)
		}
		allocs := testing.AllocsPerRun(20, func() { Select(s, a) })
		if i == 0 {
			first = allocs
		} else if allocs != first {
			t.Errorf("allocs per Select: %v with %d harnesses, %v with %d (of which the same 5 match): want equal",
				first, nonMatchingSizes[0], allocs, n)
		}
		t.Logf("allocs/op with %d harnesses: %v", n, allocs)
	}
}

// TestSelectAllocatesAtMostEightTimesPerDecision: BenchmarkSelect's turn (64
// harnesses, a retry set of three routes, a tool policy) allocates what its
// decision holds — the candidates, one block for the small parts — and what
// the tool-policy evaluation allocates; the working memory is reused
// (enginePool). The selection goal is at most 8 (docs/benchmarks/selection.md).
// Allocation counts are deterministic; this is not a timing assertion.
func TestSelectAllocatesAtMostEightTimesPerDecision(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not deterministic under the race detector (sync.Pool drops items)")
	}
	s, a := benchSnapshot(64)
	if allocs := testing.AllocsPerRun(20, func() { Select(s, a) }); allocs > 8 {
		t.Errorf("Select allocates %v times per call, want at most 8", allocs)
	}
}

func supported(d wire.Decision) int {
	k := 0
	for _, c := range d.Candidates {
		if c.Supported {
			k++
		}
	}
	return k
}

// BenchmarkPolicyConflicts is the cost of the cross-policy checks as
// policies grow, in the shape of the admission benchmark's seed
// (BenchmarkAdmission): n policies mapping openai to codex, all with one
// selector that none of 52 namespaces matches — every pair overlaps, as
// equal selectors do. evaluate-all is what the RuntimePolicy controller
// computes once per change of policies or namespaces (every policy's
// conflicts); admit-one is what the RuntimePolicy webhook computes for one
// create.
func BenchmarkPolicyConflicts(b *testing.B) {
	namespaces := map[string]map[string]string{}
	for i := range 52 {
		namespaces[fmt.Sprintf("ns-%02d", i)] = map[string]string{"team": fmt.Sprint(i % 10)}
	}
	seed := nsSelector(map[string]string{"bench-never": "true"})
	for _, n := range []int{100, 1000} {
		var ps []*v1alpha1.RuntimePolicy
		for i := range n {
			ps = append(ps, policy(fmt.Sprintf("seed-%d", i), i, prov("openai", "codex"), seed))
		}
		b.Run(fmt.Sprintf("policies=%d/evaluate-all", n), func(b *testing.B) {
			for b.Loop() {
				FindConflicts(ps, NewNamespaceIndex(namespaces).Overlap)
			}
		})
		candidate := policy("candidate", 0, prov("openai", "codex"), seed)
		candidate.CreationTimestamp = metav1.Time{} // a create
		b.Run(fmt.Sprintf("policies=%d/admit-one", n), func(b *testing.B) {
			for b.Loop() {
				ConflictsWith(candidate, ps, NewNamespaceIndex(namespaces).Overlap)
			}
		})
	}
}
