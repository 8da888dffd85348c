package selection

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// HarnessVisible reports whether sessions of a namespace (its name and labels)
// may use a harness. Both sides must agree:
//   - the harness admits the namespace (spec.allowedNamespaces): Same (the
//     default) its own namespace, All every namespace, Selector the
//     namespaces whose labels match (an empty selector matches every
//     namespace, like All);
//   - a namespace other than the harness's own consents, with the label
//     v1alpha1.AcceptHarnessesLabel(<harness namespace>) = "true", so a
//     harness never captures the sessions of a namespace that did not opt in.
//
// A Selector without a selector, or a mode this build does not know, admits
// nothing. An invalid selector is an error.
func HarnessVisible(h *v1alpha1.AgentHarness, namespace string, nsLabels map[string]string) (bool, error) {
	admitted, err := harnessAdmits(h, namespace, nsLabels)
	if err != nil || !admitted {
		return false, err
	}
	return h.Namespace == namespace || nsLabels[v1alpha1.AcceptHarnessesLabel(h.Namespace)] == v1alpha1.AcceptHarnessesLabelValue, nil
}

// harnessAdmits is the harness's side of HarnessVisible: its allowedNamespaces.
func harnessAdmits(h *v1alpha1.AgentHarness, namespace string, nsLabels map[string]string) (bool, error) {
	an := h.Spec.AllowedNamespaces
	if an == nil {
		return h.Namespace == namespace, nil
	}
	switch an.From {
	case "", v1alpha1.NamespacesFromSame:
		return h.Namespace == namespace, nil
	case v1alpha1.NamespacesFromAll:
		return true, nil
	case v1alpha1.NamespacesFromSelector:
		if an.Selector == nil {
			return false, nil
		}
		sel, err := metav1.LabelSelectorAsSelector(an.Selector)
		if err != nil {
			return false, fmt.Errorf("AgentHarness %s/%s: spec.allowedNamespaces.selector: %w", h.Namespace, h.Name, err)
		}
		return sel.Matches(labels.Set(nsLabels)), nil
	}
	return false, nil
}

// PolicySelects reports whether a RuntimePolicy governs a namespace with these
// labels: an omitted or empty namespaceSelector selects every namespace. An
// invalid selector is an error.
func PolicySelects(p *v1alpha1.RuntimePolicy, nsLabels map[string]string) (bool, error) {
	sel, err := policySelector(p)
	if err != nil {
		return false, err
	}
	return sel.Matches(labels.Set(nsLabels)), nil
}

// policySelector is a RuntimePolicy's namespaceSelector as a Selector: an
// omitted one selects every namespace. Converting it validates every label
// key and value (regular expressions) — with a thousand policies, most of
// the manager's CPU — so valid selectors are converted once and kept
// (selectorCache).
func policySelector(p *v1alpha1.RuntimePolicy) (labels.Selector, error) {
	if p.Spec.NamespaceSelector == nil {
		return labels.Everything(), nil
	}
	key := selectorKey(p.Spec.NamespaceSelector)
	if sel, ok := selectors.get(key); ok {
		return sel, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(p.Spec.NamespaceSelector)
	if err != nil {
		return nil, fmt.Errorf("RuntimePolicy %s: spec.namespaceSelector: %w", p.Name, err)
	}
	selectors.put(key, sel)
	return sel, nil
}

// selectors are the valid selectors converted so far, by content.
var selectors = selectorCache{byKey: map[string]labels.Selector{}}

// maxCachedSelectors bounds selectorCache: past it, it starts over.
const maxCachedSelectors = 4096

// selectorCache keeps converted selectors by their content (selectorKey).
// A converted Selector is only read (Matches, String), so one is shared by
// every caller.
type selectorCache struct {
	mu    sync.RWMutex
	byKey map[string]labels.Selector
}

func (c *selectorCache) get(key string) (labels.Selector, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	sel, ok := c.byKey[key]
	return sel, ok
}

func (c *selectorCache) put(key string, sel labels.Selector) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.byKey) >= maxCachedSelectors {
		clear(c.byKey)
	}
	c.byKey[key] = sel
}

// selectorKey encodes a label selector's content unambiguously (each string
// length-prefixed): equal keys are equal selectors.
func selectorKey(s *metav1.LabelSelector) string {
	b := make([]byte, 0, 64)
	str := func(v string) {
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	b = binary.AppendUvarint(b, uint64(len(s.MatchLabels)))
	for _, k := range slices.Sorted(maps.Keys(s.MatchLabels)) {
		str(k)
		str(s.MatchLabels[k])
	}
	b = binary.AppendUvarint(b, uint64(len(s.MatchExpressions)))
	for _, e := range s.MatchExpressions {
		str(e.Key)
		str(string(e.Operator))
		b = binary.AppendUvarint(b, uint64(len(e.Values)))
		for _, v := range e.Values {
			str(v)
		}
	}
	return string(b)
}
