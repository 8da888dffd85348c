package selection

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// NamespaceIndex answers, for the namespaces of a cluster (name → labels;
// the kubernetes.io/metadata.name label is implied), which of them a policy
// selects and whether two policies overlap. Finding conflicts asks about
// every pair of policies, so it remembers, for each policy (by pointer) it is
// asked about, its converted selector and the namespaces it selects: each
// selector is converted and matched with each namespace once, and a pair
// costs a comparison of two bit sets. The policies must not change while it
// is in use, and it is not safe for concurrent use.
type NamespaceIndex struct {
	names      []string
	namespaces map[string]map[string]string
	memo       map[*v1alpha1.RuntimePolicy]*policyNamespaces
}

// NewNamespaceIndex indexes namespaces (name → labels).
func NewNamespaceIndex(namespaces map[string]map[string]string) *NamespaceIndex {
	return &NamespaceIndex{names: slices.Sorted(maps.Keys(namespaces)), namespaces: namespaces,
		memo: map[*v1alpha1.RuntimePolicy]*policyNamespaces{}}
}

func (x *NamespaceIndex) reach(p *v1alpha1.RuntimePolicy) *policyNamespaces {
	if r, ok := x.memo[p]; ok {
		return r
	}
	r := newPolicyNamespaces(p, x.names, x.namespaces)
	x.memo[p] = r
	return r
}

// Selected returns the names of the namespaces p selects, sorted; an
// invalid namespaceSelector is an error.
func (x *NamespaceIndex) Selected(p *v1alpha1.RuntimePolicy) ([]string, error) {
	r := x.reach(p)
	if r.err != nil {
		return nil, r.err
	}
	if r.every {
		return slices.Clone(x.names), nil
	}
	var out []string
	for i, name := range x.names {
		if r.selected.has(i) {
			out = append(out, name)
		}
	}
	return out, nil
}

// Overlap is the index's OverlapFunc. Two policies overlap — may govern a
// common namespace — when either namespaceSelector is omitted or empty
// (every namespace), when both selectors are the same (they select the same
// namespaces, including ones not created yet), or when some indexed
// namespace is selected by both. It is an approximation, as label selectors
// cannot be intersected in general: two different selectors that no
// existing namespace satisfies both of are treated as disjoint — admission
// may miss such a conflict; the controller finds it when a namespace appears
// or is relabeled. A policy with an invalid selector overlaps nothing (it is
// not in force: Accepted=False).
func (x *NamespaceIndex) Overlap(a, b *v1alpha1.RuntimePolicy) bool {
	if a == nil || b == nil {
		return false
	}
	ra, rb := x.reach(a), x.reach(b)
	switch {
	case ra.err != nil || rb.err != nil:
		return false
	case ra.every || rb.every || ra.selector == rb.selector:
		return true
	}
	return ra.selected.intersects(rb.selected)
}

// policyNamespaces is what a NamespaceIndex knows of one policy.
type policyNamespaces struct {
	// err is why the namespaceSelector is invalid (nil when it is valid).
	err error
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
		return &policyNamespaces{err: err}
	}
	r := &policyNamespaces{every: sel.Empty(), selector: sel.String()}
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

func (s bitSet) has(i int) bool { return s[i/64]&(1<<(i%64)) != 0 }

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
