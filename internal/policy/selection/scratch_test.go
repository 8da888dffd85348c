package selection

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// Select reuses its working memory between calls (enginePool) and backs a
// decision's small parts with one allocation (decisionParts). These tests pin
// that neither shows in a decision: a later call never changes an earlier
// decision, and whatever ran before, a decision is the one a fresh call makes.

// wideSnapshot has harnesses with duplicate ids, reserved ids and priorities
// far apart, policies that match three at once, and a retry set of five
// routes: more than decisionParts holds inline.
func wideSnapshot() (Snapshot, *wire.Attempt) {
	support := func(priority int32) hopt {
		return written(v1alpha1.HarnessSupport{
			Providers: []v1alpha1.ProviderID{"acme"}, Priority: ptr.To(priority),
			RoutePolicy: v1alpha1.RoutePolicyAny, RequestTransportOverrides: v1alpha1.RequestTransportOverridesSupported,
		})
	}
	hs := []*v1alpha1.AgentHarness{
		harness("zeta", support(1000)), harness("alpha", support(-1000)), harness("mid", support(0)),
		harness("dup", support(5), created(2), objName("agents", "dup-new")), harness("dup", support(7), created(1)),
		harness("openclaw", support(9)), harness("beta", support(1000)), harness("a-very-long-harness-id-1", support(3)),
		harness("a-very-long-harness-id-0", support(3)),
	}
	ps := []*v1alpha1.RuntimePolicy{
		policy("p3", 3, prov("acme", "auto")), policy("p1", 1, model("acme/m1", "auto")), policy("p2", 2, agent("main", "acme/m1", "auto")),
	}
	var routes []wire.ModelProvider
	for i := range 5 {
		routes = append(routes, acmeRoute(func(mp *wire.ModelProvider) { mp.BaseURL = fmt.Sprintf("https://%d.acme.example/v1", i) }))
	}
	return Snapshot{Harnesses: hs, Policies: ps}, attempt("acme", "m1", withRetrySet(routes...))
}

func TestSelectDecisionsDoNotShareMemoryWithLaterCalls(t *testing.T) {
	wide, wideAttempt := wideSnapshot()
	bench, benchAttempt := benchSnapshot(64)
	first := Select(wide, wideAttempt)
	if len(first.Routes) != 5 || len(first.MatchedPolicies) != 3 || first.HarnessRef == nil || first.ToolPolicy == nil {
		t.Fatalf("the wide decision should have 5 routes, 3 matched policies, a harness and a tool verdict: %+v", first)
	}
	small := Select(bench, benchAttempt)
	if len(small.Routes) != 3 || len(small.MatchedPolicies) != 1 || small.HarnessRef == nil || small.ToolPolicy == nil {
		t.Fatalf("the bench decision should fit decisionParts inline: %+v", small)
	}
	firstCopy, smallCopy := deepCopyDecision(first), deepCopyDecision(small)
	for range 3 {
		Select(bench, benchAttempt)
		Select(wide, wideAttempt)
		Select(Snapshot{}, &wire.Attempt{Provider: "openai", ModelID: "gpt-5.5"})
	}
	if !reflect.DeepEqual(first, firstCopy) {
		t.Errorf("a later Select changed an earlier decision:\n got %+v\nwant %+v", first, firstCopy)
	}
	if !reflect.DeepEqual(small, smallCopy) {
		t.Errorf("a later Select changed an earlier decision:\n got %+v\nwant %+v", small, smallCopy)
	}
	if again := Select(wide, wideAttempt); !reflect.DeepEqual(again, firstCopy) {
		t.Errorf("the same inputs after other calls decided differently:\n got %+v\nwant %+v", again, firstCopy)
	}
}

// deepCopyDecision copies everything a decision points to.
func deepCopyDecision(d wire.Decision) wire.Decision {
	c := d
	c.Candidates = slices.Clone(d.Candidates)
	c.Routes = slices.Clone(d.Routes)
	c.MatchedPolicies = slices.Clone(d.MatchedPolicies)
	if d.HarnessRef != nil {
		c.HarnessRef = ptr.To(*d.HarnessRef)
	}
	if d.ToolPolicy != nil {
		tp := *d.ToolPolicy
		tp.SafeDeniedTools, tp.Reasons = slices.Clone(tp.SafeDeniedTools), slices.Clone(tp.Reasons)
		c.ToolPolicy = &tp
	}
	return c
}

// Candidates come by priority, highest first, then by id, then by age,
// whatever order the snapshot lists the harnesses in and however far apart
// the priorities are (orderByPriority counts close priorities out and sorts
// others; Select skips sorting views that are already in order).
func TestSelectListsCandidatesByPriorityThenIDWhateverTheSnapshotOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// Four priority levels, step apart: the same priority, spans of 15 and
	// 255 (counted out), 258 and more (sorted).
	for _, step := range []int32{0, 5, 85, 86, 1 << 20} {
		var hs []*v1alpha1.AgentHarness
		for i := range 40 {
			prio := int32(rng.IntN(4))*step - 2*step
			opts := []hopt{written(v1alpha1.HarnessSupport{Providers: []v1alpha1.ProviderID{"acme"}, Priority: ptr.To(prio)})}
			id := fmt.Sprintf("h%02d", rng.IntN(30)) // some ids repeat
			if i%7 == 0 {
				id = strings.Repeat("x", 9) + id // ids longer than a prefix key
			}
			opts = append(opts, created(rng.IntN(3)), objName("agents", fmt.Sprintf("obj-%02d", i)))
			hs = append(hs, harness(id, opts...))
		}
		want := referenceOrder(hs)
		sorted := slices.Clone(hs)
		slices.SortFunc(sorted, func(a, b *v1alpha1.AgentHarness) int {
			return slices.Index(want, a) - slices.Index(want, b)
		})
		reversed := slices.Clone(sorted)
		slices.Reverse(reversed)
		var decisions []wire.Decision
		for _, order := range [][]*v1alpha1.AgentHarness{hs, sorted, reversed} {
			d := Select(Snapshot{Harnesses: order}, attempt("acme", "m1"))
			var got []*v1alpha1.AgentHarness
			for _, c := range d.Candidates {
				got = append(got, objectNamed(hs, c.HarnessRef.Name))
			}
			if !slices.Equal(got, want) {
				t.Errorf("priorities %d apart: candidates %v, want %v", step, names(got), names(want))
			}
			decisions = append(decisions, d)
		}
		for _, d := range decisions[1:] {
			if !reflect.DeepEqual(d, decisions[0]) {
				t.Errorf("priorities %d apart: the snapshot's order changed the decision:\n%+v\n%+v", step, d, decisions[0])
			}
		}
	}
}

// referenceOrder is the candidates' order written plainly: a stable sort by
// priority (highest first) of the harnesses sorted by id, then age.
func referenceOrder(hs []*v1alpha1.AgentHarness) []*v1alpha1.AgentHarness {
	out := slices.Clone(hs)
	slices.SortStableFunc(out, func(a, b *v1alpha1.AgentHarness) int {
		return cmp.Or(strings.Compare(a.Spec.HarnessID, b.Spec.HarnessID),
			a.CreationTimestamp.Compare(b.CreationTimestamp.Time), strings.Compare(a.Name, b.Name))
	})
	slices.SortStableFunc(out, func(a, b *v1alpha1.AgentHarness) int {
		return cmp.Compare(*b.Spec.Support.Priority, *a.Spec.Support.Priority)
	})
	return out
}

func objectNamed(hs []*v1alpha1.AgentHarness, name string) *v1alpha1.AgentHarness {
	for _, h := range hs {
		if h.Name == name {
			return h
		}
	}
	return nil
}

func names(hs []*v1alpha1.AgentHarness) []string {
	var out []string
	for _, h := range hs {
		out = append(out, fmt.Sprintf("%s(%s,%d)", h.Spec.HarnessID, h.Name, *h.Spec.Support.Priority))
	}
	return out
}

// A retry set longer than the routes whose names are prepared once
// (namedRoutes) still names each route in its reasons.
func TestSelectNamesEveryRouteOfALongRetrySet(t *testing.T) {
	hs := []*v1alpha1.AgentHarness{harness("h1", written(v1alpha1.HarnessSupport{
		Providers: []v1alpha1.ProviderID{"acme"}, RoutePolicy: v1alpha1.RoutePolicyAny,
		RequestTransportOverrides: v1alpha1.RequestTransportOverridesUnsupportedWithFallback,
	}))}
	var routes []wire.ModelProvider
	for i := range namedRoutes + 3 {
		routes = append(routes, acmeRoute(func(mp *wire.ModelProvider) { mp.BaseURL = fmt.Sprintf("https://%d.acme.example/v1", i) }))
	}
	last := len(routes) - 1
	routes[last].RequestTransportOverrides = wire.TransportOverridesPresent
	d := Select(Snapshot{Harnesses: hs}, attempt("acme", "m1", withRetrySet(routes...)))
	want := fmt.Sprintf("modelProviders[%d]: %s", last, reasonTransportOverrides)
	if len(d.Candidates) != 1 || d.Candidates[0].Reason != want {
		t.Fatalf("candidates %+v, want h1 refused with %q", d.Candidates, want)
	}
	if len(d.Routes) != len(routes) || d.Routes[last].Route != fmt.Sprintf("modelProviders[%d]", last) {
		t.Fatalf("routes %+v, want %d named routes", d.Routes, len(routes))
	}
}
