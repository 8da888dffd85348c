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
	names []string
	// labeled are the namespaces' labels in names' order, each as a
	// labels.Labels that a selector reads through a pointer: passing a value
	// would allocate once per namespace and policy.
	labeled []namedLabels
	memo    map[*v1alpha1.RuntimePolicy]*policyNamespaces
	// bySelector shares what a valid selector selects among the policies
	// that spell it alike (selectorKey): policies often share a selector,
	// and matching it with every namespace is most of the work.
	bySelector map[string]*policyNamespaces
}

// NewNamespaceIndex indexes namespaces (name → labels).
func NewNamespaceIndex(namespaces map[string]map[string]string) *NamespaceIndex {
	names := slices.Sorted(maps.Keys(namespaces))
	labeled := make([]namedLabels, len(names))
	for i, name := range names {
		labeled[i] = namedLabels{name: name, labels: namespaces[name]}
	}
	return &NamespaceIndex{names: names, labeled: labeled, memo: map[*v1alpha1.RuntimePolicy]*policyNamespaces{},
		bySelector: map[string]*policyNamespaces{}}
}

func (x *NamespaceIndex) reach(p *v1alpha1.RuntimePolicy) *policyNamespaces {
	if r, ok := x.memo[p]; ok {
		return r
	}
	var key string
	if ns := p.Spec.NamespaceSelector; ns != nil {
		key = selectorKey(ns)
		if r, ok := x.bySelector[key]; ok {
			x.memo[p] = r
			return r
		}
	}
	r := newPolicyNamespaces(p, x.labeled)
	x.memo[p] = r
	// An invalid selector's error names its policy: it is not shared.
	if p.Spec.NamespaceSelector != nil && r.err == nil {
		x.bySelector[key] = r
	}
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

func newPolicyNamespaces(p *v1alpha1.RuntimePolicy, namespaces []namedLabels) *policyNamespaces {
	sel, err := policySelector(p)
	if err != nil {
		return &policyNamespaces{err: err}
	}
	r := &policyNamespaces{every: sel.Empty(), selector: sel.String()}
	if r.every {
		return r
	}
	r.selected = make(bitSet, (len(namespaces)+63)/64)
	for i := range namespaces {
		if sel.Matches(&namespaces[i]) {
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

var _ labels.Labels = (*namedLabels)(nil)

func (n *namedLabels) Lookup(key string) (string, bool) {
	if v, ok := n.labels[key]; ok {
		return v, true
	}
	if key == namespaceNameLabel {
		return n.name, true
	}
	return "", false
}

func (n *namedLabels) Has(key string) bool {
	_, ok := n.Lookup(key)
	return ok
}

func (n *namedLabels) Get(key string) string {
	v, _ := n.Lookup(key)
	return v
}
