package webhook

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/policy/selection"
	"github.com/openclaw/harness-operator/internal/policy/snapshot"
)

// readers are the validators' view of the cluster: the manager's informer
// cache, and for the kinds whose admission depends on each other (harness
// ids, policy conflicts) the objects this server admitted that the cache
// may not show yet.
type readers struct {
	cached client.Reader
	// live reads from the API server: only the RuntimePolicy validator, whose
	// refusals must not see a Deny policy deleted a moment ago (policies are
	// written rarely; harnesses and sessions are the creates that come in
	// bulk).
	live      client.Reader
	harnesses *admitted[*v1alpha1.AgentHarness]
	policies  *admitted[*v1alpha1.RuntimePolicy]
}

func newReaders(cached, live client.Reader) readers {
	return readers{cached: cached, live: live,
		harnesses: newAdmitted[*v1alpha1.AgentHarness](), policies: newAdmitted[*v1alpha1.RuntimePolicy]()}
}

// follow keeps the admitted objects informed by the cache's informers.
func (r readers) follow(ctx context.Context, informers cache.Informers) error {
	for _, f := range []struct {
		obj     client.Object
		handler toolscache.ResourceEventHandler
	}{
		{&v1alpha1.AgentHarness{}, r.harnesses.eventHandler()},
		{&v1alpha1.RuntimePolicy{}, r.policies.eventHandler()},
	} {
		informer, err := informers.GetInformer(ctx, f.obj)
		if err != nil {
			return fmt.Errorf("informer of %T: %w", f.obj, err)
		}
		if _, err := informer.AddEventHandler(f.handler); err != nil {
			return fmt.Errorf("follow %T: %w", f.obj, err)
		}
	}
	return nil
}

// harnessIDField indexes the cache's AgentHarnesses by the harness id each
// declares (effectiveHarnessID): the checks of one id read the harnesses of
// that id, not every harness (with thousands of harnesses, copying and
// sorting all of them under the validator's lock made 50 concurrent creates
// queue for it: docs/benchmarks/admission.md).
const harnessIDField = "webhook.harness.openclaw.dev/harnessId"

// harnessIDs is the index function of harnessIDField.
func harnessIDs(obj client.Object) []string {
	h, ok := obj.(*v1alpha1.AgentHarness)
	if !ok {
		return nil
	}
	return []string{effectiveHarnessID(h)}
}

// indexHarnessIDs adds harnessIDField to the cache behind the readers.
func indexHarnessIDs(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &v1alpha1.AgentHarness{}, harnessIDField, harnessIDs); err != nil {
		return fmt.Errorf("index AgentHarnesses by harness id: %w", err)
	}
	return nil
}

// policyRuntimeIDField indexes the cache's RuntimePolicies by the runtime
// ids their entries name (selection.PolicyRuntimeIDs): the AgentHarness
// validator asks whether any policy names a harness id, and with a thousand
// policies listing, sorting and reading every one of them on each harness
// create was its largest cost (docs/benchmarks/admission.md).
const policyRuntimeIDField = "webhook.harness.openclaw.dev/runtimeId"

// policyRuntimeIDs is the index function of policyRuntimeIDField.
func policyRuntimeIDs(obj client.Object) []string {
	p, ok := obj.(*v1alpha1.RuntimePolicy)
	if !ok {
		return nil
	}
	return selection.PolicyRuntimeIDs(p)
}

// indexPolicyRuntimeIDs adds policyRuntimeIDField to the cache behind the readers.
func indexPolicyRuntimeIDs(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &v1alpha1.RuntimePolicy{}, policyRuntimeIDField, policyRuntimeIDs); err != nil {
		return fmt.Errorf("index RuntimePolicies by runtime id: %w", err)
	}
	return nil
}

// policiesNaming returns the RuntimePolicies with an entry for runtime id:
// the cache's (through policyRuntimeIDField) with what this server admitted
// on top. The objects are shared with the cache: read only.
func (r readers) policiesNaming(ctx context.Context, id string) ([]*v1alpha1.RuntimePolicy, error) {
	var list v1alpha1.RuntimePolicyList
	if err := r.cached.List(ctx, &list, client.MatchingFields{policyRuntimeIDField: id}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list RuntimePolicies naming runtime %q: %w", id, err)
	}
	// An admitted policy the cache does not show yet may name id, and an
	// admitted update may have dropped it.
	return slices.DeleteFunc(r.policies.merge(snapshot.Pointers(list.Items)), func(p *v1alpha1.RuntimePolicy) bool {
		return !slices.Contains(selection.PolicyRuntimeIDs(p), id)
	}), nil
}

// harnessesWithID returns the AgentHarnesses that declare id, ordered by
// namespace and name: the cache's (through harnessIDField) with what this
// server admitted on top. The objects are shared with the cache: read only.
func (r readers) harnessesWithID(ctx context.Context, id string) ([]*v1alpha1.AgentHarness, error) {
	var list v1alpha1.AgentHarnessList
	if err := r.cached.List(ctx, &list, client.MatchingFields{harnessIDField: id}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list AgentHarnesses of harness id %q: %w", id, err)
	}
	// An admitted update may have moved a cached harness to another id.
	merged := slices.DeleteFunc(r.harnesses.merge(snapshot.Pointers(list.Items)), func(h *v1alpha1.AgentHarness) bool {
		return effectiveHarnessID(h) != id
	})
	return sortedByKey(merged), nil
}

// listPolicies returns every RuntimePolicy, ordered by name, from from
// (r.cached or r.live). The objects may be shared with the cache: read only.
func (r readers) listPolicies(ctx context.Context, from client.Reader) ([]*v1alpha1.RuntimePolicy, error) {
	var list v1alpha1.RuntimePolicyList
	if err := from.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list RuntimePolicies: %w", err)
	}
	return sortedByKey(r.policies.merge(snapshot.Pointers(list.Items))), nil
}

// cachedObject reads the cache's object under obj's key into into, or
// returns nil when the cache has none.
func cachedObject[T object](ctx context.Context, r client.Reader, obj, into T) (T, error) {
	var none T
	err := r.Get(ctx, client.ObjectKeyFromObject(obj), into, client.UnsafeDisableDeepCopy)
	switch {
	case apierrors.IsNotFound(err):
		return none, nil
	case err != nil:
		return none, fmt.Errorf("read %s from the cache: %w", client.ObjectKeyFromObject(obj), err)
	}
	return into, nil
}

// sortedByKey orders objects as the API server lists them, so messages that
// name one of several objects name the same one every time.
func sortedByKey[T client.Object](objs []T) []T {
	slices.SortFunc(objs, func(a, b T) int {
		return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
	return objs
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
