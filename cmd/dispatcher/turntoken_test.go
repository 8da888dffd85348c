package main

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestTurnTokenSecretRef: the turn-token Secret's namespace is the flag's,
// else $POD_NAMESPACE, else the Lease's; without any, or without a name, the
// start is refused naming the flag to set.
func TestTurnTokenSecretRef(t *testing.T) {
	for name, c := range map[string]struct {
		opts           turnTokenOptions
		podNS, leaseNS string
		want           types.NamespacedName // zero: an error
	}{
		"the flag's namespace":  {turnTokenOptions{defaultTurnTokenSecret, "ops"}, "pod-ns", "lease-ns", types.NamespacedName{Namespace: "ops", Name: defaultTurnTokenSecret}},
		"the pod's namespace":   {turnTokenOptions{defaultTurnTokenSecret, ""}, "pod-ns", "lease-ns", types.NamespacedName{Namespace: "pod-ns", Name: defaultTurnTokenSecret}},
		"the Lease's namespace": {turnTokenOptions{"key", ""}, "", "lease-ns", types.NamespacedName{Namespace: "lease-ns", Name: "key"}},
		"no namespace anywhere": {turnTokenOptions{defaultTurnTokenSecret, ""}, "", "", types.NamespacedName{}},
		"an empty name":         {turnTokenOptions{"", "ops"}, "", "", types.NamespacedName{}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("POD_NAMESPACE", c.podNS)
			got, err := c.opts.secretRef(c.leaseNS)
			if c.want == (types.NamespacedName{}) {
				if err == nil {
					t.Fatalf("accepted: %s", got)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("secretRef = %s, %v; want %s", got, err, c.want)
			}
		})
	}
}
