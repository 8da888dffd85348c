package selection

import (
	"testing"

	"k8s.io/utils/ptr"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// Select answers a route that repeats an earlier route's support facts with
// that route's answer (route.same); these cases pin that each route of a
// retry set is still decided on the facts in which it differs.
func TestSelectDecidesEachRouteOfARetrySetOnItsOwnFacts(t *testing.T) {
	support := func(priority int32, policy v1alpha1.RoutePolicyRequirement) hopt {
		return written(v1alpha1.HarnessSupport{
			Providers:                 []v1alpha1.ProviderID{"acme"},
			Priority:                  ptr.To(priority),
			RoutePolicy:               policy,
			RequestTransportOverrides: v1alpha1.RequestTransportOverridesUnsupportedWithFallback,
			PreparedAuth:              &v1alpha1.PreparedAuthSupport{APIKeyModes: []string{"api-key"}},
		})
	}
	hs := []*v1alpha1.AgentHarness{harness("h1", support(5, v1alpha1.RoutePolicyAny)), harness("h2", support(1, v1alpha1.RoutePolicyMustListHarness))}
	url := func(u string) ropt { return func(mp *wire.ModelProvider) { mp.BaseURL = u } }
	apiKey := auth(wire.AuthSourceDirect, "api-key", wire.AuthRequirementAPIKey)
	for _, tc := range []struct {
		name   string
		routes []wire.ModelProvider
		check  func(*testing.T, wire.Decision)
	}{
		{
			name:   "routes that differ only in base URL agree",
			routes: []wire.ModelProvider{acmeRoute(apiKey), acmeRoute(apiKey, url("https://b.acme.example/v1"))},
			check:  all(wantRoutes("modelProviders[0]=h1/auto_plugin", "modelProviders[1]=h1/auto_plugin"), wantCand("h1", true, "")),
		},
		{
			name:   "a route whose prepared auth mode the harness does not declare is refused",
			routes: []wire.ModelProvider{acmeRoute(apiKey), acmeRoute(auth(wire.AuthSourceDirect, "oauth", wire.AuthRequirementAPIKey))},
			check: all(wantRoutes("modelProviders[0]=h1/auto_plugin", "modelProviders[1]=openclaw/auto_openclaw"),
				wantCand("h1", false, "modelProviders[1]: "+reasonAuthAPIKey)),
		},
		{
			name:   "a route whose prepared auth source does not satisfy the requirement is refused",
			routes: []wire.ModelProvider{acmeRoute(apiKey), acmeRoute(auth(wire.AuthSourceNone, "api-key", wire.AuthRequirementAPIKey))},
			check: all(wantRoutes("modelProviders[0]=h1/auto_plugin", "modelProviders[1]=openclaw/auto_openclaw"),
				wantCand("h1", false, "modelProviders[1]: "+reasonAuthAPIKey)),
		},
		{
			name:   "a route whose route policy lists other harnesses is refused by a harness that must be listed",
			routes: []wire.ModelProvider{acmeRoute(apiKey, compat("h2")), acmeRoute(apiKey, compat("h1"))},
			check: all(wantRoutes("modelProviders[0]=h1/auto_plugin", "modelProviders[1]=h1/auto_plugin"),
				wantCand("h1", true, ""), wantCand("h2", false, "modelProviders[1]: "+reasonRouteNotListed)),
		},
		{
			name:   "a route without a route policy is refused by a harness that must be listed",
			routes: []wire.ModelProvider{acmeRoute(apiKey, compat("h2")), acmeRoute(apiKey)},
			check:  wantCand("h2", false, "modelProviders[1]: "+reasonRouteUndeclared),
		},
		{
			name: "a route that repeats the first after a different one takes the first's answer",
			routes: []wire.ModelProvider{acmeRoute(apiKey), acmeRoute(apiKey, overrides(), url("https://b.acme.example/v1")),
				acmeRoute(apiKey, url("https://c.acme.example/v1"))},
			check: all(wantRoutes("modelProviders[0]=h1/auto_plugin", "modelProviders[1]=openclaw/auto_openclaw", "modelProviders[2]=h1/auto_plugin"),
				wantCand("h1", false, "modelProviders[1]: "+reasonTransportOverrides)),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Select(Snapshot{Harnesses: hs}, attempt("acme", "m1", withRetrySet(tc.routes...)))
			if d.Error != nil {
				t.Fatalf("unexpected error %s: %s", d.Error.Code, d.Error.Message)
			}
			tc.check(t, d)
		})
	}
}
