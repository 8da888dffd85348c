package selection

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

func TestSnapshotFor(t *testing.T) {
	same := &v1alpha1.AgentHarness{ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: "same"}}
	other := &v1alpha1.AgentHarness{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "other"}}
	all := &v1alpha1.AgentHarness{ObjectMeta: metav1.ObjectMeta{Namespace: "shared", Name: "all"},
		Spec: v1alpha1.AgentHarnessSpec{AllowedNamespaces: &v1alpha1.AllowedNamespaces{From: v1alpha1.NamespacesFromAll}}}
	byName := &v1alpha1.AgentHarness{ObjectMeta: metav1.ObjectMeta{Namespace: "shared", Name: "by-name"},
		Spec: v1alpha1.AgentHarnessSpec{AllowedNamespaces: &v1alpha1.AllowedNamespaces{
			From:     v1alpha1.NamespacesFromSelector,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "agents"}},
		}}}
	everywhere := &v1alpha1.RuntimePolicy{ObjectMeta: metav1.ObjectMeta{Name: "everywhere"}}
	teamA := &v1alpha1.RuntimePolicy{ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
		Spec: v1alpha1.RuntimePolicySpec{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}}}
	broken := &v1alpha1.RuntimePolicy{ObjectMeta: metav1.ObjectMeta{Name: "broken"},
		Spec: v1alpha1.RuntimePolicySpec{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Bogus"}}}}}

	acceptsShared := map[string]string{v1alpha1.AcceptHarnessesLabel("shared"): "true"}
	tests := []struct {
		name          string
		policies      []*v1alpha1.RuntimePolicy
		labels        map[string]string
		wantHarnesses []string
		wantPolicies  []string
		wantErr       bool
	}{
		{
			name:          "allowedNamespaces Same, All and a selector on the implied name label; empty namespaceSelector selects every namespace",
			policies:      []*v1alpha1.RuntimePolicy{everywhere, teamA},
			labels:        acceptsShared,
			wantHarnesses: []string{"same", "all", "by-name"},
			wantPolicies:  []string{"everywhere"},
		},
		{
			name:          "a policy's namespaceSelector matches the namespace's labels",
			policies:      []*v1alpha1.RuntimePolicy{everywhere, teamA},
			labels:        map[string]string{"team": "a", v1alpha1.AcceptHarnessesLabel("shared"): "true"},
			wantHarnesses: []string{"same", "all", "by-name"},
			wantPolicies:  []string{"everywhere", "team-a"},
		},
		{
			name:          "tenancy: without consent only the namespace's own harnesses are in its snapshot",
			policies:      []*v1alpha1.RuntimePolicy{everywhere},
			wantHarnesses: []string{"same"},
			wantPolicies:  []string{"everywhere"},
		},
		{
			name:     "fail closed: an invalid selector fails the snapshot instead of dropping the policy",
			policies: []*v1alpha1.RuntimePolicy{broken},
			wantErr:  true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := SnapshotFor([]*v1alpha1.AgentHarness{same, other, all, byName, nil}, tt.policies, "agents", tt.labels, nil)
			if tt.wantErr {
				if err == nil {
					t.Fatal("want an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var hs, ps []string
			for _, h := range s.Harnesses {
				hs = append(hs, h.Name)
			}
			for _, p := range s.Policies {
				ps = append(ps, p.Name)
			}
			if !slices.Equal(hs, tt.wantHarnesses) || !slices.Equal(ps, tt.wantPolicies) {
				t.Fatalf("harnesses %v policies %v, want %v %v", hs, ps, tt.wantHarnesses, tt.wantPolicies)
			}
		})
	}
}
