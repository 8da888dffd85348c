package selection

import (
	"k8s.io/utils/ptr"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// AdapterDefault is what an adapter declares for an AgentHarness that omits a
// block (docs/api.md, AgentHarness). The admission defaulter writes it into the
// object so `kubectl get -o yaml` shows the truth; Select and offline explain
// apply the same values to objects that were not defaulted.
type AdapterDefault struct {
	// Support replaces an omitted spec.support as a whole; a written block is
	// the declaration and is never merged with it.
	Support v1alpha1.HarnessSupport
	// ConversationToolPolicyNativeTools replaces an omitted
	// spec.conversationToolPolicyNativeTools.
	ConversationToolPolicyNativeTools []v1alpha1.ToolID
}

// AdapterDefaults returns a fresh copy of the adapter's defaults, or false for
// an adapter without defaults. It is the single source of these values.
//
// codex-app-server: providers [codex, openai], priority 100, request-transport
// overrides UnsupportedWithFallback, route policy MustListHarness, native
// providers [codex], subscription modes [oauth, token], api-key modes
// [api-key, api_key], native tools [exec, process, read, write, edit,
// apply_patch]. conversationToolPolicySupport is never defaulted to Exact.
func AdapterDefaults(adapter v1alpha1.HarnessAdapter) (AdapterDefault, bool) {
	switch adapter {
	case v1alpha1.AdapterCodexAppServer:
		return AdapterDefault{
			Support: v1alpha1.HarnessSupport{
				Providers:                 []v1alpha1.ProviderID{"codex", "openai"},
				Priority:                  ptr.To[int32](100),
				RequestTransportOverrides: v1alpha1.RequestTransportOverridesUnsupportedWithFallback,
				RoutePolicy:               v1alpha1.RoutePolicyMustListHarness,
				NativeProviders:           []v1alpha1.ProviderID{"codex"},
				PreparedAuth: &v1alpha1.PreparedAuthSupport{
					SubscriptionModes: []string{"oauth", "token"},
					APIKeyModes:       []string{"api-key", "api_key"},
				},
			},
			ConversationToolPolicyNativeTools: []v1alpha1.ToolID{"exec", "process", "read", "write", "edit", "apply_patch"},
		}, true
	}
	return AdapterDefault{}, false
}

// codexDefaults is AdapterDefaults(codex-app-server), computed once so Select
// does not copy it per harness. Select only reads it.
var codexDefaults, _ = AdapterDefaults(v1alpha1.AdapterCodexAppServer)

// adapterDefaults returns the shared, read-only defaults of an adapter, or nil.
func adapterDefaults(adapter v1alpha1.HarnessAdapter) *AdapterDefault {
	if adapter == v1alpha1.AdapterCodexAppServer {
		return &codexDefaults
	}
	return nil
}
