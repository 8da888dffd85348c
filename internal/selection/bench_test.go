package selection

import (
	"fmt"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/wire"
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

// TestSelectAllocsScaleLinearly checks that allocations per candidate are
// bounded by a constant: going from 8 to 64 harnesses adds at most
// perCandidate allocations for each added harness (not a timing assertion).
func TestSelectAllocsScaleLinearly(t *testing.T) {
	const perCandidate = 1.0
	allocs := func(n int) float64 {
		s, a := benchSnapshot(n)
		return testing.AllocsPerRun(50, func() { Select(s, a) })
	}
	a8, a64 := allocs(8), allocs(64)
	if slope := (a64 - a8) / (64 - 8); slope > perCandidate {
		t.Errorf("allocs: %v for 8 harnesses, %v for 64: %.2f per added candidate, want <= %v", a8, a64, slope, perCandidate)
	}
	t.Logf("allocs/op: 8 harnesses %v, 64 harnesses %v", a8, a64)
}
