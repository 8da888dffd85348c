package selection

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPolicySelectorCache checks that converted selectors are shared by
// content only: a selector is never answered with another one's conversion,
// and an invalid one is refused every time.
func TestPolicySelectorCache(t *testing.T) {
	in := func(key string, values ...string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpIn, Values: values}
	}
	cases := []struct {
		name  string
		a, b  *metav1.LabelSelector
		equal bool
	}{
		{"decision: the same labels in another map order are one selector",
			&metav1.LabelSelector{MatchLabels: map[string]string{"team": "a", "env": "prod"}},
			&metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod", "team": "a"}}, true},
		{"decision: where a key ends and its value begins is part of the content",
			&metav1.LabelSelector{MatchLabels: map[string]string{"ab": "c"}},
			&metav1.LabelSelector{MatchLabels: map[string]string{"a": "bc"}}, false},
		{"decision: values of an expression are not merged with the next expression",
			&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{in("a", "x", "y"), in("b", "z")}},
			&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{in("a", "x"), in("y", "b", "z")}}, false},
		{"decision: match labels and expressions are told apart",
			&metav1.LabelSelector{MatchLabels: map[string]string{"a": "x"}},
			&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{in("a", "x")}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := selectorKey(tc.a) == selectorKey(tc.b); got != tc.equal {
				t.Errorf("same key: got %v, want %v", got, tc.equal)
			}
		})
	}

	labels := map[string]string{"team": "a"}
	valid := policy("valid", 0, nsSelector(labels))
	bad := policy("bad", 0, badSelector())
	for range 2 { // the second round is answered from the cache
		if ok, err := PolicySelects(valid, labels); err != nil || !ok {
			t.Errorf("a valid selector selects its namespace: got %v, %v", ok, err)
		}
		if _, err := PolicySelects(bad, labels); err == nil {
			t.Errorf("an invalid selector is an error, every time")
		}
	}
}
