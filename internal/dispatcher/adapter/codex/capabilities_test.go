package codex

import (
	"strings"
	"testing"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// A decision answers for its attempt's model. The rule: capabilities are
// reported per model, so a gateway sees which models can have one
// (docs/dispatcher-api.md, "Capabilities: what the selected harness offers").
// A ModelDependent capability is Supported for a model the
// published catalog proves Codex does not know (CanIsolate: no catalog name
// occurs in the id), Unsupported for one it knows — the message names the
// model and why — and stays ModelDependent while the catalog is unknown or
// the model is not given. Other capabilities are never changed.
func TestCapabilitiesForResolvesModelDependentPerModel(t *testing.T) {
	t.Parallel()
	catalog := []string{"gpt-5.5", "gpt-6.1-sol"}
	perModel := func(excluded []string) v1alpha1.HarnessCapability {
		return v1alpha1.HarnessCapability{Name: v1alpha1.CapabilityIsolatedCompletion,
			Support: v1alpha1.CapabilityModelDependent, Message: "rule", ExcludedModels: excluded}
	}
	cases := []struct {
		name     string
		cap      v1alpha1.HarnessCapability
		model    string
		want     v1alpha1.CapabilitySupport
		message  []string // substrings of the resolved message
		excluded bool     // the resolved entry still lists the catalog
	}{
		{"a model outside the catalog can have it", perModel(catalog), "stub-model", v1alpha1.CapabilitySupported,
			[]string{`"stub-model"`, "outside"}, false},
		{"a catalog model cannot, and the message says which and why", perModel(catalog), "gpt-6.1-sol",
			v1alpha1.CapabilityUnsupported, []string{`"gpt-6.1-sol"`, "catalog model gpt-6.1-sol", "native tools"}, false},
		{"Codex's prefix rule: an id that contains a catalog name is known", perModel(catalog), "openai-proxy/GPT-5.5-mini",
			v1alpha1.CapabilityUnsupported, []string{`"openai-proxy/GPT-5.5-mini"`, "gpt-5.5"}, false},
		{"a near name outside the catalog can have it", perModel(catalog), "gpt-5", v1alpha1.CapabilitySupported, nil, false},
		{"an unknown catalog stays per model", perModel(nil), "stub-model", v1alpha1.CapabilityModelDependent, []string{"rule"}, false},
		{"no model stays per model, with the catalog", perModel(catalog), "", v1alpha1.CapabilityModelDependent, []string{"rule"}, true},
		{"Supported is kept", v1alpha1.HarnessCapability{Name: v1alpha1.CapabilityTurns, Support: v1alpha1.CapabilitySupported},
			"gpt-5.5", v1alpha1.CapabilitySupported, nil, false},
		{"Unsupported is kept", v1alpha1.HarnessCapability{Name: v1alpha1.CapabilityMCP, Support: v1alpha1.CapabilityUnsupported,
			Message: "absent"}, "stub-model", v1alpha1.CapabilityUnsupported, []string{"absent"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := []v1alpha1.HarnessCapability{tc.cap}
			got := CapabilitiesFor(in, tc.model)
			if len(got) != 1 || got[0].Name != tc.cap.Name || got[0].Support != tc.want {
				t.Fatalf("CapabilitiesFor(%+v, %q) = %+v, want support %s", tc.cap, tc.model, got, tc.want)
			}
			for _, m := range tc.message {
				if !strings.Contains(got[0].Message, m) {
					t.Errorf("message %q lacks %q", got[0].Message, m)
				}
			}
			if (len(got[0].ExcludedModels) > 0) != tc.excluded {
				t.Errorf("excludedModels %v", got[0].ExcludedModels)
			}
			if in[0].Support != tc.cap.Support || len(in[0].ExcludedModels) != len(tc.cap.ExcludedModels) {
				t.Errorf("the published capabilities were modified: %+v", in[0])
			}
		})
	}
	if CapabilitiesFor(nil, "x") != nil {
		t.Error("no capabilities resolve to none")
	}
}
