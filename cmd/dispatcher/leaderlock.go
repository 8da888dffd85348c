package main

import (
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// leaderLock is the leader-election Lease lock held under the pod's name
// ($POD_NAME) instead of controller-runtime's default identity (the host
// name and a random suffix): a dispatcher whose container restarts in the
// same Pod — a crash, an OOM kill — takes its Lease back at once rather than
// waiting for it to expire (up to 15 s), during which a lone dispatcher
// serves nothing. Pod names are unique in a namespace, so two live
// processes never share the identity. It is nil (controller-runtime's lock)
// without $POD_NAME or a namespace, e.g. under `make run`.
func leaderLock(cfg *rest.Config, namespace string, getenv func(string) string) (resourcelock.Interface, error) {
	pod := getenv(podNameEnv)
	if pod == "" || namespace == "" {
		return nil, nil
	}
	cfg = rest.AddUserAgent(rest.CopyConfig(cfg), "leader-election")
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	coordination, err := coordinationv1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return resourcelock.New(resourcelock.LeasesResourceLock, namespace, leaderElectionID, core, coordination,
		resourcelock.ResourceLockConfig{Identity: pod})
}
