package selection

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// NamespaceOverlap returns the OverlapFunc of a cluster whose namespaces are
// namespaces (name → labels; the kubernetes.io/metadata.name label is
// implied). Two policies overlap — may govern a common namespace — when
// either namespaceSelector is omitted or empty (every namespace), when both
// selectors are the same (they select the same namespaces, including ones
// not created yet), or when some namespace of namespaces is selected by both.
// It is an approximation, as label selectors cannot be intersected in
// general: two different selectors that no existing namespace satisfies both
// of are treated as disjoint — admission may miss such a conflict; the
// controller finds it when a namespace appears or is relabeled. A policy with
// an invalid selector overlaps nothing (it is not in force: Accepted=False).
//
// Finding conflicts asks about every pair of policies, so the function
// remembers, for each policy (by pointer) it is asked about, its converted
// selector and the namespaces it selects: each selector is converted and
// matched with each namespace once, and a pair costs a comparison of two
// bit sets. The policies must not change while it is in use, and it is not
// safe for concurrent use.
func NamespaceOverlap(namespaces map[string]map[string]string) OverlapFunc {
	names := slices.Sorted(maps.Keys(namespaces))
	memo := map[*v1alpha1.RuntimePolicy]*policyNamespaces{}
	reach := func(p *v1alpha1.RuntimePolicy) *policyNamespaces {
		if r, ok := memo[p]; ok {
			return r
		}
		r := newPolicyNamespaces(p, names, namespaces)
		memo[p] = r
		return r
	}
	return func(a, b *v1alpha1.RuntimePolicy) bool {
		if a == nil || b == nil {
			return false
		}
		ra, rb := reach(a), reach(b)
		switch {
		case !ra.valid || !rb.valid:
			return false
		case ra.every || rb.every || ra.selector == rb.selector:
			return true
		}
		return ra.selected.intersects(rb.selected)
	}
}

// policyNamespaces is what NamespaceOverlap knows of one policy.
type policyNamespaces struct {
	// valid is false for an invalid namespaceSelector.
	valid bool
	// every: the selector is omitted or empty.
	every bool
	// selector is the converted selector in its canonical text form
	// (requirements sorted), so equal selectors compare equal as strings.
	selector string
	// selected are the namespaces it selects, by index in sorted order.
	selected bitSet
}

func newPolicyNamespaces(p *v1alpha1.RuntimePolicy, names []string, namespaces map[string]map[string]string) *policyNamespaces {
	sel, err := policySelector(p)
	if err != nil {
		return &policyNamespaces{}
	}
	r := &policyNamespaces{valid: true, every: sel.Empty(), selector: sel.String()}
	if r.every {
		return r
	}
	r.selected = make(bitSet, (len(names)+63)/64)
	for i, name := range names {
		if sel.Matches(namedLabels{name: name, labels: namespaces[name]}) {
			r.selected.set(i)
		}
	}
	return r
}

// bitSet is a set of small non-negative integers.
type bitSet []uint64

func (s bitSet) set(i int) { s[i/64] |= 1 << (i % 64) }

func (s bitSet) intersects(o bitSet) bool {
	for i := range min(len(s), len(o)) {
		if s[i]&o[i] != 0 {
			return true
		}
	}
	return false
}

// namedLabels are a namespace's labels with the kubernetes.io/metadata.name
// label the API server sets on every namespace (as SnapshotFor adds it),
// without copying the map for every namespace a selector is matched with.
type namedLabels struct {
	name   string
	labels map[string]string
}

var _ labels.Labels = namedLabels{}

func (n namedLabels) Lookup(key string) (string, bool) {
	if v, ok := n.labels[key]; ok {
		return v, true
	}
	if key == namespaceNameLabel {
		return n.name, true
	}
	return "", false
}

func (n namedLabels) Has(key string) bool {
	_, ok := n.Lookup(key)
	return ok
}

func (n namedLabels) Get(key string) string {
	v, _ := n.Lookup(key)
	return v
}
