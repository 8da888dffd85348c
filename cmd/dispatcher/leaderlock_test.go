package main

import (
	"testing"

	"k8s.io/client-go/rest"
)

func TestLeaderLockIsHeldUnderThePodsName(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	env := func(pod string) func(string) string {
		return func(name string) string {
			if name == podNameEnv {
				return pod
			}
			return ""
		}
	}
	lock, err := leaderLock(cfg, "harness-operator-system", env("harness-operator-dispatcher-7d9f-abcde"))
	if err != nil {
		t.Fatal(err)
	}
	if lock == nil || lock.Identity() != "harness-operator-dispatcher-7d9f-abcde" {
		t.Fatalf("lock %v: want one held under the pod's name", lock)
	}
	if got, want := lock.Describe(), "harness-operator-system/"+leaderElectionID; got != want {
		t.Fatalf("lock %q, want the Lease %q", got, want)
	}
	for name, tc := range map[string]struct{ pod, ns string }{
		"no pod name (make run)": {ns: "default"},
		"no namespace":           {pod: "p"},
	} {
		if lock, err := leaderLock(cfg, tc.ns, env(tc.pod)); err != nil || lock != nil {
			t.Errorf("%s: lock %v, %v; want controller-runtime's own", name, lock, err)
		}
	}
}
