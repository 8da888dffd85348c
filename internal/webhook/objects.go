package webhook

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// readers are the validators' two views of the cluster.
type readers struct {
	// cached is the manager's informer cache (Namespaces, AgentSessions).
	cached client.Reader
	// live reads from the API server (AgentHarnesses, RuntimePolicies).
	live client.Reader
}

// namespaceNameLabel is the label the API server sets on every namespace.
const namespaceNameLabel = "kubernetes.io/metadata.name"

// namespaceLabels returns every namespace's labels by name.
func namespaceLabels(ctx context.Context, r client.Reader) (map[string]map[string]string, error) {
	var list corev1.NamespaceList
	if err := r.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list Namespaces: %w", err)
	}
	out := make(map[string]map[string]string, len(list.Items))
	for _, ns := range list.Items {
		out[ns.Name] = withNameLabel(ns.Name, ns.Labels)
	}
	return out, nil
}

// withNameLabel returns labels with kubernetes.io/metadata.name set, as the
// API server sets it on every namespace.
func withNameLabel(name string, labels map[string]string) map[string]string {
	out := maps.Clone(labels)
	if out == nil {
		out = map[string]string{}
	}
	out[namespaceNameLabel] = name
	return out
}
