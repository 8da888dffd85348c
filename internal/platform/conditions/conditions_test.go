package conditions

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSetKeepsTransitionTimeWhileStatusStays(t *testing.T) {
	earlier := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := metav1.NewTime(earlier.Add(time.Hour))
	current := []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "A", LastTransitionTime: earlier}}
	for _, tc := range []struct {
		status metav1.ConditionStatus
		want   metav1.Time
	}{
		{metav1.ConditionTrue, earlier}, // same status, new reason: the transition time stays
		{metav1.ConditionFalse, now},    // a transition
	} {
		var desired []metav1.Condition
		Set(&desired, current, metav1.Condition{Type: "Ready", Status: tc.status, Reason: "B", LastTransitionTime: now})
		if len(desired) != 1 || !desired[0].LastTransitionTime.Equal(&tc.want) || desired[0].Reason != "B" {
			t.Errorf("status %s: %+v, want lastTransitionTime %v and reason B", tc.status, desired, tc.want)
		}
	}
	var desired []metav1.Condition
	Set(&desired, nil, metav1.Condition{Type: "New", Status: metav1.ConditionTrue, Reason: "C", LastTransitionTime: now})
	if !desired[0].LastTransitionTime.Equal(&now) {
		t.Errorf("a new condition: %+v, want lastTransitionTime now", desired[0])
	}
}

func TestSameIgnoresOnlyTransitionTime(t *testing.T) {
	base := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "R", Message: "m", ObservedGeneration: 2}
	moved := base
	moved.LastTransitionTime = metav1.Now()
	if !Same(&base, &moved) {
		t.Error("conditions differing only in lastTransitionTime are not Same")
	}
	for name, change := range map[string]func(*metav1.Condition){
		"status":             func(c *metav1.Condition) { c.Status = metav1.ConditionFalse },
		"reason":             func(c *metav1.Condition) { c.Reason = "Other" },
		"message":            func(c *metav1.Condition) { c.Message = "other" },
		"observedGeneration": func(c *metav1.Condition) { c.ObservedGeneration = 3 },
	} {
		other := base
		change(&other)
		if Same(&base, &other) {
			t.Errorf("conditions differing in %s are Same", name)
		}
	}
	if !Same(nil, nil) || Same(&base, nil) {
		t.Error("absent conditions: only two absent ones are Same")
	}
	if !SameTypes([]metav1.Condition{base}, []metav1.Condition{moved}, "Ready", "Absent") {
		t.Error("SameTypes over equal lists")
	}
	if SameTypes([]metav1.Condition{base}, nil, "Ready") {
		t.Error("SameTypes with a missing condition")
	}
}
