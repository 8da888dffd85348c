package agentharness

import (
	"slices"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

// Limits of HarnessCapability.excludedModels (api/v1alpha1).
const (
	maxExcludedModels = 256
	maxModelName      = 128
)

// catalogNames are the names of a server's catalog models (id and model
// name, sorted, each once); never nil, so an empty catalog stays known.
func catalogNames(models []appserver.Model) []string {
	names := []string{}
	for _, m := range models {
		names = append(names, m.Names()...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// modelCatalog is the catalog status.capabilities publishes for the
// handshakes that judge the harness (those of VersionSupported): the union
// of their catalogs, so a model any server knows is excluded. It is nil
// (unknown) when there are none, when any of them has not read its catalog,
// or when the union does not fit the API's limits: a part of a catalog
// would make an excluded model look Supported.
func modelCatalog(results []*handshakeResult) []string {
	if len(results) == 0 {
		return nil
	}
	union := []string{}
	for _, res := range results {
		if res == nil || res.err != nil || res.catalog == nil {
			return nil
		}
		union = append(union, res.catalog...)
	}
	slices.Sort(union)
	union = slices.Compact(union)
	if len(union) > maxExcludedModels || slices.ContainsFunc(union, func(n string) bool { return len(n) > maxModelName }) {
		return nil
	}
	return union
}

// judgedCapabilities is status.capabilities once the conditions phase
// judged the servers: the adapter's table with the model catalog applied.
func judgedCapabilities(h *v1alpha1.AgentHarness, results []*handshakeResult) []v1alpha1.HarnessCapability {
	return wire.WithModelCatalog(wire.AdapterCapabilities(h.Spec.Adapter), modelCatalog(results))
}
