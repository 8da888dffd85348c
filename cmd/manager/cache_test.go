package main

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// TestTrimSession: the cached session keeps every field the manager reads
// (spec, labels and other annotations, its own status part, the
// dispatcher's pin) and loses managedFields, kubectl's last-applied copy
// and the dispatcher's per-turn status.
func TestTrimSession(t *testing.T) {
	kept := func() *v1alpha1.AgentSession {
		return &v1alpha1.AgentSession{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "u", Generation: 2, ResourceVersion: "7",
				Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": "kept"},
				Finalizers: []string{v1alpha1.JournalFinalizer}},
			Spec: v1alpha1.AgentSessionSpec{AgentID: "main", SessionKey: "agent:main:s", SessionID: "s", Model: "openai/gpt-5",
				RuntimeOverride: "codex", ResetGeneration: 1},
			Status: v1alpha1.AgentSessionStatus{
				ObservedGeneration: 2,
				Policy:             &v1alpha1.SessionPolicy{Runtime: "codex", Source: v1alpha1.PolicySourceOverride, MatchedPolicies: []string{"p"}},
				Conditions:         []metav1.Condition{{Type: v1alpha1.SessionConditionReady, Status: metav1.ConditionTrue, Reason: "Ready", Message: "m"}},
				AgentHarnessID:     "codex",
				NativeBinding:      &v1alpha1.NativeBinding{Generation: 1},
			},
		}
	}
	full := kept()
	full.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "harness-operator-dispatcher"}}
	full.Annotations[corev1.LastAppliedConfigAnnotation] = `{"spec":{}}`
	full.Status.LastSelection = &v1alpha1.LastSelection{}
	full.Status.ActiveTurn = &v1alpha1.ActiveTurn{RunID: "r1"}
	full.Status.LastTurn = &v1alpha1.LastTurn{RunID: "r0", Outcome: v1alpha1.TurnSucceeded}
	full.Status.Counters = &v1alpha1.SessionCounters{Turns: 3}

	got, err := trimSession(full)
	if err != nil {
		t.Fatal(err)
	}
	if want := kept(); !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("trimmed session:\n got %+v\nwant %+v", got, want)
	}

	t.Run("a tombstone passes", func(t *testing.T) {
		tomb := toolscache.DeletedFinalStateUnknown{Key: "ns/s", Obj: kept()}
		if got, err := trimSession(tomb); err != nil || !equality.Semantic.DeepEqual(got, tomb) {
			t.Fatalf("tombstone: %+v, %v", got, err)
		}
	})
	t.Run("the sessions' transform is the cache's", func(t *testing.T) {
		opts := cacheOptions(nil)
		for obj, by := range opts.ByObject {
			if _, ok := obj.(*v1alpha1.AgentSession); ok && by.Transform != nil {
				out, err := by.Transform(full.DeepCopy())
				if err != nil || out.(*v1alpha1.AgentSession).Status.Counters != nil {
					t.Fatalf("the cache's AgentSession transform does not trim: %v", err)
				}
				return
			}
		}
		t.Fatal("no AgentSession transform in the cache options")
	})
}
