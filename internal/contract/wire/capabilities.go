package wire

import (
	"slices"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// codexIsolationModels is the rule by which Codex 0.169.0 can prove an empty
// native tool surface (internal/dispatcher/adapter/codex CanIsolate): only for models
// it has no catalog metadata for.
const codexIsolationModels = "only models outside the app-server's Codex model catalog (model/list): Codex keeps " +
	"native tools (apply_patch, MCP resource helpers) for catalog models, so a request for one is refused with " +
	"ToolPolicyUnenforceable before any model request"

// AdapterCapabilities lists what a harness driven by adapter a offers, in
// the order of v1alpha1's HarnessCapabilityName constants. The AgentHarness
// controller publishes it as status.capabilities and the dispatcher puts it
// in every decision for the selected harness, so the two never disagree. An
// unknown adapter offers nothing. It returns a new slice each call.
func AdapterCapabilities(a v1alpha1.HarnessAdapter) []v1alpha1.HarnessCapability {
	if a != v1alpha1.AdapterCodexAppServer {
		return nil
	}
	yes := func(n v1alpha1.HarnessCapabilityName) v1alpha1.HarnessCapability {
		return v1alpha1.HarnessCapability{Name: n, Support: v1alpha1.CapabilitySupported}
	}
	perModel := func(n v1alpha1.HarnessCapabilityName) v1alpha1.HarnessCapability {
		return v1alpha1.HarnessCapability{Name: n, Support: v1alpha1.CapabilityModelDependent, Message: codexIsolationModels}
	}
	return []v1alpha1.HarnessCapability{
		yes(v1alpha1.CapabilityTurns),
		yes(v1alpha1.CapabilityHostTools),
		yes(v1alpha1.CapabilityInterrupt),
		yes(v1alpha1.CapabilityApprovals),
		yes(v1alpha1.CapabilityUserInput),
		yes(v1alpha1.CapabilityMCP),
		yes(v1alpha1.CapabilityReseed),
		perModel(v1alpha1.CapabilityIsolatedCompletion),
		perModel(v1alpha1.CapabilitySettledTurnFinalization),
		// Locked sessions, for subjects the harness lists in spec.delegates
		// and RBAC grants the verb delegate (docs/dispatcher-api.md).
		yes(v1alpha1.CapabilityDelegatedExecution),
		// Refused visibly where they cannot hold: AuthProfileNotIsolated,
		// AuthProfileUnsupported.
		{Name: v1alpha1.CapabilityAuthProfiles, Support: v1alpha1.CapabilitySupported, Message: "a turn's authProfile " +
			"authenticates its session's model requests on a harness that admits only its own namespace and whose Codex " +
			"model provider is declared in its config (the built-in openai provider cannot carry another key)"},
	}
}

// WithModelCatalog applies the model catalog the handshakes of a harness's
// servers read (catalog: every model name, sorted; nil when no handshake
// read it) to the ModelDependent capabilities of caps, in place, and
// returns caps: an unknown catalog leaves them ModelDependent with no
// excludedModels (the adapter decides each request against the live
// catalog), an empty one makes them Supported (no model is excluded), any
// other lists it as their excludedModels.
func WithModelCatalog(caps []v1alpha1.HarnessCapability, catalog []string) []v1alpha1.HarnessCapability {
	for i := range caps {
		c := &caps[i]
		switch {
		case c.Support != v1alpha1.CapabilityModelDependent || catalog == nil:
		case len(catalog) == 0:
			c.Support, c.Message = v1alpha1.CapabilitySupported, "the app-server's model catalog is empty"
		default:
			c.ExcludedModels = slices.Clone(catalog)
		}
	}
	return caps
}

// CapabilityOf returns the support of capability n in caps (Unsupported when
// it is not listed: absent is never assumed present).
func CapabilityOf(caps []v1alpha1.HarnessCapability, n v1alpha1.HarnessCapabilityName) v1alpha1.CapabilitySupport {
	for _, c := range caps {
		if c.Name == n {
			return c.Support
		}
	}
	return v1alpha1.CapabilityUnsupported
}
