// Package snapshot reads what runtime selection needs about one session —
// every AgentHarness, every RuntimePolicy and the session's Namespace — and
// hands it to the pure selection.SnapshotFor. The manager's AgentSession
// controller and the dispatcher's engine read it the same way.
package snapshot

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/policy/selection"
)

// For reads the selection snapshot of session through r. A missing
// Namespace is returned as the reader's NotFound error (wrapped), so callers
// can tell it apart; an invalid policy selector fails the snapshot. opts
// go to both Lists: a caller that only reads the snapshot, and lets it go
// when its call returns, may pass client.UnsafeDisableDeepCopy.
func For(ctx context.Context, r client.Reader, session *v1alpha1.AgentSession, opts ...client.ListOption) (selection.Snapshot, error) {
	var ns corev1.Namespace
	if err := r.Get(ctx, client.ObjectKey{Name: session.Namespace}, &ns); err != nil {
		return selection.Snapshot{}, fmt.Errorf("read Namespace %s: %w", session.Namespace, err)
	}
	var harnesses v1alpha1.AgentHarnessList
	if err := r.List(ctx, &harnesses, opts...); err != nil {
		return selection.Snapshot{}, fmt.Errorf("list AgentHarnesses: %w", err)
	}
	var policies v1alpha1.RuntimePolicyList
	if err := r.List(ctx, &policies, opts...); err != nil {
		return selection.Snapshot{}, fmt.Errorf("list RuntimePolicies: %w", err)
	}
	snap, err := selection.SnapshotFor(Pointers(harnesses.Items), Pointers(policies.Items), ns.Name, ns.Labels, session)
	if err != nil {
		return selection.Snapshot{}, fmt.Errorf("resolve the policies of namespace %s: %w", ns.Name, err)
	}
	return snap, nil
}

// Pointers returns pointers to a typed list's items (into items, not
// copies), as selection and the admission webhooks take them.
func Pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
