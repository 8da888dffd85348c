package main

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/policy/selection"
)

// The route facts `kubectl harness turn` sends are the ones it means: for
// openai the official route, which the selection engine itself judges
// official (auto is implicit codex on it: the harness SDK's "exact official HTTPS
// Platform Responses ... route with no authored request override"), and
// none when asked (a pending attempt, which a pin governs).
func TestTurnSendsTheRouteFactsItMeans(t *testing.T) {
	codex := &v1alpha1.AgentHarness{
		ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: "codex"},
		Spec:       v1alpha1.AgentHarnessSpec{HarnessID: "codex", Adapter: v1alpha1.AdapterCodexAppServer},
	}
	snap := selection.Snapshot{Harnesses: []*v1alpha1.AgentHarness{codex}, AssumeReadyWithoutStatus: true}
	cases := []struct {
		name, mode, provider string
		wantRuntime          string
		wantReason           wire.Reason
	}{
		{"openai by default: the official route, where auto is implicit codex", "", "openai", "codex", wire.ReasonForcedPlugin},
		{"openai official: the same", routeFactsOfficial, "openai", "codex", wire.ReasonForcedPlugin},
		{"none: pending, and the openai/* prefix alone never selects codex", routeFactsNone, "openai", "openclaw", wire.ReasonAutoOpenClaw},
		{"another provider has no official route: none", routeFactsOfficial, "acme", "openclaw", wire.ReasonAutoOpenClaw},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			route, err := routeFacts(tc.mode, tc.provider)
			if err != nil {
				t.Fatal(err)
			}
			if (route != nil) != (tc.provider == "openai" && tc.mode != routeFactsNone) {
				t.Fatalf("route = %+v", route)
			}
			d := selection.Select(snap, &wire.Attempt{AgentID: "main", Provider: tc.provider, ModelID: "m", ModelProvider: route})
			if d.Error != nil || d.Runtime != tc.wantRuntime || d.Reason != tc.wantReason {
				t.Errorf("decision = %s/%s (%v), want %s/%s", d.Runtime, d.Reason, d.Error, tc.wantRuntime, tc.wantReason)
			}
		})
	}
	_, err := routeFacts("officiel", "openai")
	var bad *exitError
	if !errors.As(err, &bad) || bad.code != exitBadInput {
		t.Errorf("a misspelt --route-facts: %v, want bad input (exit 2)", err)
	}
}
