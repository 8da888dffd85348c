//go:build e2e

package chart

import (
	"testing"
)

// TestExternalDialPolicyReachesBothComponents checks externalServers renders
// the same --external-refused-cidrs and --external-allowed-cidrs on the
// manager and the dispatcher (both dial spec.external.url, so a policy on one
// alone would leave the other open), and that empty lists render no flag: the
// binaries' default then refuses every private and shared range.
func TestExternalDialPolicyReachesBothComponents(t *testing.T) {
	cases := []struct {
		name    string
		objs    func(t *testing.T) []object
		refused string // "-": absent
		allowed string
	}{
		{"defaults", func(t *testing.T) []object { return objectsOf(t, "defaults") }, "-", "-"},
		{"both lists", func(t *testing.T) []object { return objectsOf(t, "opt-ins") }, "10.0.0.0/8,fd00::/8", "10.20.30.40/32"},
		{"an exception to the default list", func(t *testing.T) []object {
			return objects(t, writeValues(t, "externalServers:\n  allowedCIDRs: [10.96.0.10/32]\n"))
		}, "-", "10.96.0.10/32"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			objs := c.objs(t)
			for _, component := range []string{"manager", "dispatcher"} {
				args := argMap(deployment(t, objs, fullname+"-"+component).Spec.Template.Spec.Containers[0].Args)
				for flag, want := range map[string]string{"--external-refused-cidrs": c.refused, "--external-allowed-cidrs": c.allowed} {
					got, ok := args[flag]
					switch {
					case want == "-" && ok:
						t.Errorf("%s has %s=%s, want it absent (the binary's default)", component, flag, got)
					case want != "-" && got != want:
						t.Errorf("%s %s = %q (set %v), want %q", component, flag, got, ok, want)
					}
				}
			}
		})
	}
}
