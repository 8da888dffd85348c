package selection

import (
	"maps"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// namespaceNameLabel is the label the API server sets on every namespace.
const namespaceNameLabel = "kubernetes.io/metadata.name"

// SnapshotFor filters every known AgentHarness and RuntimePolicy down to the
// Snapshot of one session namespace: the harnesses visible to it and the
// policies that select it. nsLabels are the namespace's labels; the
// kubernetes.io/metadata.name label is implied, as the API server always sets it.
// An invalid selector fails the whole snapshot (never silently drops a policy).
func SnapshotFor(harnesses []*v1alpha1.AgentHarness, policies []*v1alpha1.RuntimePolicy,
	namespace string, nsLabels map[string]string, session *v1alpha1.AgentSession) (Snapshot, error) {
	withName := maps.Clone(nsLabels)
	if withName == nil {
		withName = map[string]string{}
	}
	if _, ok := withName[namespaceNameLabel]; !ok {
		withName[namespaceNameLabel] = namespace
	}
	s := Snapshot{Session: session}
	for _, h := range harnesses {
		if h == nil {
			continue
		}
		ok, err := HarnessVisible(h, namespace, withName)
		if err != nil {
			return Snapshot{}, err
		}
		if ok {
			s.Harnesses = append(s.Harnesses, h)
		}
	}
	for _, p := range policies {
		if p == nil {
			continue
		}
		ok, err := PolicySelects(p, withName)
		if err != nil {
			return Snapshot{}, err
		}
		if ok {
			s.Policies = append(s.Policies, p)
		}
	}
	return s, nil
}
