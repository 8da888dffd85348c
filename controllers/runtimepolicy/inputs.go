package runtimepolicy

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/policy/selection"
	"github.com/openclaw/harness-operator/internal/policy/snapshot"
)

// inputs is what every policy's status is computed from, evaluated once per
// change and shared by the reconciles that change enqueues. A change of a
// policy or a namespace can change any policy's conflicts, so it enqueues
// every policy; evaluating each of them against all the others in its own
// reconcile made a change cost the square of the number of policies — a
// thousand policies kept the manager's two cores busy for seconds per change
// (docs/benchmarks/operator-scale.md). Now the first reconcile after a change
// evaluates all policies (selection.FindConflicts over a
// selection.NamespaceIndex) and the others read its result.
//
// Each part carries an epoch: the watch handlers advance it, after the cache
// holds the change and before they enqueue the reconciles it causes, so a
// reconcile that sees an evaluation of the current epoch sees one at least as
// new as the change that enqueued it.
type inputs struct {
	// policyEpoch advances on a change of RuntimePolicies or Namespaces.
	policyEpoch atomic.Uint64
	// harnessEpoch advances on a change of AgentHarnesses.
	harnessEpoch atomic.Uint64

	mu        sync.Mutex
	policies  *policyEvaluation
	harnesses *harnessIndex
}

// policyEvaluation is every policy's acceptance, selected namespaces and
// conflicts at one policy epoch.
type policyEvaluation struct {
	epoch    uint64
	policies map[string]*evaluatedPolicy
}

// evaluatedPolicy is what the phases read of one policy's evaluation.
type evaluatedPolicy struct {
	uid        types.UID
	generation int64
	// invalid is why the spec cannot be evaluated (nil when it can).
	invalid error
	// selected are the namespaces the policy selects (shared with the cache:
	// read only).
	selected []*corev1.Namespace
	// conflicts are the keys it loses, sorted by key.
	conflicts []selection.PolicyConflict
}

// harnessIndex is the AgentHarnesses by declared harness id at one harness
// epoch (shared with the cache: read only).
type harnessIndex struct {
	epoch uint64
	byID  map[string][]*v1alpha1.AgentHarness
}

// policiesChanged and harnessesChanged are the watch handlers' word that the
// cache holds a change; they are called before the change's reconciles are
// enqueued.
func (in *inputs) policiesChanged()  { in.policyEpoch.Add(1) }
func (in *inputs) harnessesChanged() { in.harnessEpoch.Add(1) }

// evaluated returns policy's evaluation at the current policy epoch, or
// false when the cache already holds a newer version of it than policy (a
// read that raced a change: the change's own reconcile follows).
func (in *inputs) evaluated(ctx context.Context, r client.Reader, policy *v1alpha1.RuntimePolicy) (*evaluatedPolicy, bool, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	current := func(ev *policyEvaluation) (*evaluatedPolicy, bool) {
		e := ev.policies[policy.Name]
		return e, e != nil && e.uid == policy.UID && e.generation == policy.Generation
	}
	epoch := in.policyEpoch.Load()
	if in.policies != nil && in.policies.epoch == epoch {
		if e, ok := current(in.policies); ok {
			return e, true, nil
		}
	}
	ev, err := evaluatePolicies(ctx, r, epoch)
	if err != nil {
		return nil, false, err
	}
	in.policies = ev
	e, ok := current(ev)
	return e, ok, nil
}

// evaluatePolicies evaluates every policy as the cache holds it.
func evaluatePolicies(ctx context.Context, r client.Reader, epoch uint64) (*policyEvaluation, error) {
	var policies v1alpha1.RuntimePolicyList
	if err := r.List(ctx, &policies, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list RuntimePolicies: %w", err)
	}
	var namespaces corev1.NamespaceList
	if err := r.List(ctx, &namespaces, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list Namespaces: %w", err)
	}
	nsLabels := make(map[string]map[string]string, len(namespaces.Items))
	byName := make(map[string]*corev1.Namespace, len(namespaces.Items))
	for i := range namespaces.Items {
		ns := &namespaces.Items[i]
		nsLabels[ns.Name], byName[ns.Name] = ns.Labels, ns
	}
	// One index for both questions: each selector is matched with each
	// namespace once.
	index := selection.NewNamespaceIndex(nsLabels)
	all := snapshot.Pointers(policies.Items)
	ev := &policyEvaluation{epoch: epoch, policies: make(map[string]*evaluatedPolicy, len(all))}
	for _, p := range all {
		e := &evaluatedPolicy{uid: p.UID, generation: p.Generation}
		var names []string
		names, e.invalid = index.Selected(p)
		for _, name := range names {
			e.selected = append(e.selected, byName[name])
		}
		ev.policies[p.Name] = e
	}
	// FindConflicts sorts by loser, then key: each policy's share stays sorted by key.
	for _, c := range selection.FindConflicts(all, index.Overlap) {
		e := ev.policies[c.Loser]
		e.conflicts = append(e.conflicts, c)
	}
	return ev, nil
}

// harnessesByID returns the AgentHarnesses by declared id at the current
// harness epoch.
func (in *inputs) harnessesByID(ctx context.Context, r client.Reader) (*harnessIndex, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	epoch := in.harnessEpoch.Load()
	if in.harnesses != nil && in.harnesses.epoch == epoch {
		return in.harnesses, nil
	}
	var harnesses v1alpha1.AgentHarnessList
	if err := r.List(ctx, &harnesses, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list AgentHarnesses: %w", err)
	}
	idx := &harnessIndex{epoch: epoch, byID: map[string][]*v1alpha1.AgentHarness{}}
	for i := range harnesses.Items {
		if id, ok := selection.DeclaredHarnessID(&harnesses.Items[i]); ok {
			idx.byID[id] = append(idx.byID[id], &harnesses.Items[i])
		}
	}
	in.harnesses = idx
	return idx, nil
}

// declaredFor reports whether an AgentHarness visible to one of namespaces
// declares id.
func (idx *harnessIndex) declaredFor(namespaces []*corev1.Namespace) func(id string) bool {
	return func(id string) bool {
		return slices.ContainsFunc(idx.byID[id], func(h *v1alpha1.AgentHarness) bool {
			return slices.ContainsFunc(namespaces, func(ns *corev1.Namespace) bool {
				// A harness whose own selector is invalid is visible nowhere.
				visible, err := selection.HarnessVisible(h, ns.Name, ns.Labels)
				return err == nil && visible
			})
		})
	}
}
