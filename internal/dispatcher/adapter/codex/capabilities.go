package codex

import (
	"fmt"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// CapabilitiesFor resolves a harness's published capabilities
// (status.capabilities) for one model, so that a decision answers for its
// attempt's model. A ModelDependent capability with excludedModels (the
// catalog the manager's handshakes read) becomes Supported when CanIsolate
// proves the model outside that catalog and Unsupported, with CanIsolate's
// reason naming the model, when it is not; without excludedModels (catalog
// unknown) or without a model it stays ModelDependent, and the adapter
// decides the request against the live catalog. A resolved capability
// lists no excludedModels. The other capabilities are copied as they are;
// caps is not modified.
//
// Resolution only informs the gateway: at run time Complete and Turn read
// the server's live catalog and remain the authority.
func CapabilitiesFor(caps []v1alpha1.HarnessCapability, model string) []v1alpha1.HarnessCapability {
	if caps == nil {
		return nil
	}
	out := make([]v1alpha1.HarnessCapability, len(caps))
	for i, c := range caps {
		out[i] = c
		if c.Support != v1alpha1.CapabilityModelDependent || len(c.ExcludedModels) == 0 || model == "" {
			continue
		}
		cat := &ModelCatalog{Models: make([]CatalogModel, len(c.ExcludedModels))}
		for j, n := range c.ExcludedModels {
			cat.Models[j] = CatalogModel{Slug: n, Aliases: []string{n}}
		}
		out[i].ExcludedModels = nil
		if ok, reason := CanIsolate(model, cat); ok {
			out[i].Support = v1alpha1.CapabilitySupported
			out[i].Message = fmt.Sprintf("model %q is outside the app-server's Codex model catalog, so Codex offers it no native tools", model)
		} else {
			out[i].Support = v1alpha1.CapabilityUnsupported
			out[i].Message = reason
		}
	}
	return out
}
