// Package conditions holds the status discipline the controllers share: a
// condition keeps its lastTransitionTime while its status stays, two
// conditions are the same when everything but that time is, one
// StatusWriter applies a controller's own status fields and records an Event
// per condition transition, and one naming rule gives field managers and
// Event reporters their names.
package conditions

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Set puts c into desired. c.LastTransitionTime is the time of this
// reconcile; it is replaced by the current condition's time when current
// (the status as read) has the condition with the same status, so a
// recomputed status does not move the transition time.
func Set(desired *[]metav1.Condition, current []metav1.Condition, c metav1.Condition) {
	if cur := meta.FindStatusCondition(current, c.Type); cur != nil && cur.Status == c.Status {
		c.LastTransitionTime = cur.LastTransitionTime
	}
	meta.SetStatusCondition(desired, c)
}

// Same reports whether a and b are the same condition, ignoring
// lastTransitionTime; two absent conditions are the same.
func Same(a, b *metav1.Condition) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Type == b.Type && a.Status == b.Status && a.Reason == b.Reason &&
		a.Message == b.Message && a.ObservedGeneration == b.ObservedGeneration
}

// SameTypes reports whether a and b hold the same conditions of the given
// types (Same for each).
func SameTypes(a, b []metav1.Condition, types ...string) bool {
	for _, typ := range types {
		if !Same(meta.FindStatusCondition(a, typ), meta.FindStatusCondition(b, typ)) {
			return false
		}
	}
	return true
}

// Types lists the condition types of cs.
func Types(cs []metav1.Condition) []string {
	types := make([]string, len(cs))
	for i, c := range cs {
		types[i] = c.Type
	}
	return types
}
