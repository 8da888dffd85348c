package wire

import (
	"slices"
	"testing"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// status.capabilities shows which models can have a ModelDependent
// capability: the catalog the handshakes read is what they cannot have; an
// empty catalog excludes nothing; an unknown one is left to the adapter at
// run time and never listed as if it were empty.
func TestWithModelCatalogListsTheCatalogAsExcludedModels(t *testing.T) {
	catalog := []string{"gpt-5.5", "gpt-6.1-sol"}
	cases := []struct {
		name     string
		catalog  []string
		want     v1alpha1.CapabilitySupport
		excluded []string
	}{
		{"a known catalog is excluded", catalog, v1alpha1.CapabilityModelDependent, catalog},
		{"an empty catalog excludes no model", []string{}, v1alpha1.CapabilitySupported, nil},
		{"an unknown catalog lists nothing and stays per model", nil, v1alpha1.CapabilityModelDependent, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			caps := WithModelCatalog(AdapterCapabilities(v1alpha1.AdapterCodexAppServer), tc.catalog)
			for _, c := range caps {
				switch c.Name {
				case v1alpha1.CapabilityIsolatedCompletion, v1alpha1.CapabilitySettledTurnFinalization:
					if c.Support != tc.want || !slices.Equal(c.ExcludedModels, tc.excluded) {
						t.Errorf("%s = %s excluding %v, want %s excluding %v", c.Name, c.Support, c.ExcludedModels, tc.want, tc.excluded)
					}
				default:
					if c.ExcludedModels != nil || c.Support == v1alpha1.CapabilityModelDependent {
						t.Errorf("%s is not per model: %+v", c.Name, c)
					}
				}
			}
		})
	}
}
