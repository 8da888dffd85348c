package main

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// cacheOptions are the manager's cache settings: Secrets only in
// secretNamespaces, and cached objects without what nothing in the manager
// reads. At 10,000 sessions the cache is most of the manager's memory
// (docs/benchmarks/operator-scale.md).
func cacheOptions(secretNamespaces map[string]cache.Config) cache.Options {
	return cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}:         {Namespaces: secretNamespaces},
			&v1alpha1.AgentSession{}: {Transform: trimSession},
		},
		// Nothing the manager runs reads managedFields (it applies what it
		// writes from scratch), and every writer of an AgentSession adds an
		// entry.
		DefaultTransform: cache.TransformStripManagedFields(),
	}
}

// trimSession drops from a cached AgentSession what the manager never
// reads: managedFields, kubectl's last-applied annotation (a copy of the
// spec) and the dispatcher's per-turn part of the status (lastSelection,
// activeTurn, lastTurn, counters). The manager reads a session's spec, its
// own part of the status and the dispatcher's pin (agentHarnessId,
// nativeBinding); it writes only its own part by server-side apply, so a
// trimmed field is never written back. The admission webhooks judge the
// objects of the request, not the cache.
func trimSession(obj any) (any, error) {
	obj, err := cache.TransformStripManagedFields()(obj)
	if err != nil {
		return obj, err
	}
	s, ok := obj.(*v1alpha1.AgentSession)
	if !ok {
		return obj, nil
	}
	if _, ok := s.Annotations[corev1.LastAppliedConfigAnnotation]; ok {
		annotations := make(map[string]string, len(s.Annotations)-1)
		for k, v := range s.Annotations {
			if k != corev1.LastAppliedConfigAnnotation {
				annotations[k] = v
			}
		}
		s.Annotations = annotations
	}
	s.Status.LastSelection, s.Status.ActiveTurn, s.Status.LastTurn, s.Status.Counters = nil, nil, nil, nil
	return s, nil
}
