package agentsession

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// TestManagerInputsChanged: the session updates that reach the reconciler are
// those that can change the manager's part of the status; the dispatcher's
// per-turn writes and its finalizer do not.
func TestManagerInputsChanged(t *testing.T) {
	base := func() *v1alpha1.AgentSession {
		return &v1alpha1.AgentSession{
			ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", Generation: 3, ResourceVersion: "10"},
			Spec:       v1alpha1.AgentSessionSpec{ResetGeneration: 1},
			Status: v1alpha1.AgentSessionStatus{
				ObservedGeneration: 3,
				// pinned to codex by a binding of the reset before: no pin until rebound
				AgentHarnessID: "codex",
				NativeBinding:  &v1alpha1.NativeBinding{Generation: 0},
				Policy:         &v1alpha1.SessionPolicy{Runtime: "codex", Source: v1alpha1.PolicySourceProvider, MatchedPolicies: []string{"p"}},
				Conditions: []metav1.Condition{
					{Type: v1alpha1.SessionConditionPolicyResolved, Status: metav1.ConditionTrue, Reason: "PolicyMatched", Message: "m"},
					{Type: v1alpha1.SessionConditionReady, Status: metav1.ConditionTrue, Reason: "Ready", Message: "r"},
				},
			},
		}
	}
	cases := []struct {
		name   string
		change func(*v1alpha1.AgentSession)
		want   bool
	}{
		{"the dispatcher marks a turn active", func(s *v1alpha1.AgentSession) {
			s.Status.ActiveTurn = &v1alpha1.ActiveTurn{RunID: "r1"}
		}, false},
		{"the dispatcher records a turn's end and counters", func(s *v1alpha1.AgentSession) {
			s.Status.LastTurn = &v1alpha1.LastTurn{RunID: "r1", Outcome: v1alpha1.TurnSucceeded}
			s.Status.Counters = &v1alpha1.SessionCounters{Turns: 1}
		}, false},
		{"the dispatcher adds its finalizer", func(s *v1alpha1.AgentSession) {
			s.Finalizers = append(s.Finalizers, v1alpha1.JournalFinalizer)
		}, false},
		{"a condition's lastTransitionTime only", func(s *v1alpha1.AgentSession) {
			s.Status.Conditions[0].LastTransitionTime = metav1.Now()
		}, false},
		{"the spec changes", func(s *v1alpha1.AgentSession) { s.Generation = 4 }, true},
		{"the dispatcher pins a harness", func(s *v1alpha1.AgentSession) {
			s.Status.AgentHarnessID, s.Status.NativeBinding.Generation = "claude", 1
		}, true},
		{"the dispatcher binds the pinned harness after a reset (the pin counts again)", func(s *v1alpha1.AgentSession) {
			s.Status.NativeBinding.Generation = 1
		}, true},
		{"the manager's runtime (its own write's echo, or another's edit)", func(s *v1alpha1.AgentSession) {
			s.Status.Policy.Runtime = "openclaw"
		}, true},
		{"the manager's matched policies", func(s *v1alpha1.AgentSession) {
			s.Status.Policy.MatchedPolicies = nil
		}, true},
		{"the manager's observedGeneration", func(s *v1alpha1.AgentSession) { s.Status.ObservedGeneration = 2 }, true},
		{"a manager condition's reason", func(s *v1alpha1.AgentSession) {
			s.Status.Conditions[1].Status, s.Status.Conditions[1].Reason = metav1.ConditionFalse, "OverrideDenied"
		}, true},
		{"a manager condition removed", func(s *v1alpha1.AgentSession) {
			s.Status.Conditions = s.Status.Conditions[:1]
		}, true},
	}
	// A reconciler that has written nothing yet: every change of the
	// manager's fields is someone else's.
	managerInputsChanged := (&Reconciler{own: newOwnWrites()}).managerInputsChanged()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prev, next := base(), base()
			tc.change(next)
			next.ResourceVersion = "11"
			if got := managerInputsChanged.Update(event.UpdateEvent{ObjectOld: prev, ObjectNew: next}); got != tc.want {
				t.Fatalf("reconcile = %v, want %v", got, tc.want)
			}
		})
	}
	if !managerInputsChanged.Create(event.CreateEvent{Object: base()}) || !managerInputsChanged.Delete(event.DeleteEvent{Object: base()}) {
		t.Fatal("creations and deletions must reach the reconciler")
	}
}

// TestOwnWriteEcho: the update that carries back exactly what this manager
// applied is not reconciled (and is counted); an edit of the same fields by
// someone else, a spec change or a pin arriving with the echo still are.
func TestOwnWriteEcho(t *testing.T) {
	written := func() *v1alpha1.AgentSession {
		return &v1alpha1.AgentSession{
			ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", UID: "u1", Generation: 2, ResourceVersion: "11"},
			Status: v1alpha1.AgentSessionStatus{
				ObservedGeneration: 2,
				Policy:             &v1alpha1.SessionPolicy{Runtime: "openclaw", Source: v1alpha1.PolicySourceProvider, MatchedPolicies: []string{"p"}},
				Conditions: []metav1.Condition{
					{Type: v1alpha1.SessionConditionPolicyResolved, Status: metav1.ConditionTrue, Reason: "PolicyMatched", Message: "asks for openclaw", ObservedGeneration: 2},
					{Type: v1alpha1.SessionConditionReady, Status: metav1.ConditionTrue, Reason: "Ready", Message: "r", ObservedGeneration: 2},
				},
			},
		}
	}
	before := func() *v1alpha1.AgentSession {
		s := written()
		s.ResourceVersion = "10"
		s.Status.Policy = &v1alpha1.SessionPolicy{Runtime: "codex", Source: v1alpha1.PolicySourceProvider, MatchedPolicies: []string{"p"}}
		s.Status.Conditions[0].Message = "asks for codex"
		return s
	}
	cases := []struct {
		name string
		// next is the update's new object; the manager applied written().Status.
		next func() *v1alpha1.AgentSession
		want bool
	}{
		{"the echo of the manager's own write", written, false},
		{"the echo, with only a condition's lastTransitionTime moved", func() *v1alpha1.AgentSession {
			s := written()
			s.Status.Conditions[1].LastTransitionTime = metav1.Now()
			return s
		}, false},
		{"someone else writes another runtime", func() *v1alpha1.AgentSession {
			s := written()
			s.Status.Policy.Runtime = "claude"
			return s
		}, true},
		{"someone else edits a condition's message", func() *v1alpha1.AgentSession {
			s := written()
			s.Status.Conditions[0].Message = "edited"
			return s
		}, true},
		{"someone else removes a matched policy", func() *v1alpha1.AgentSession {
			s := written()
			s.Status.Policy.MatchedPolicies = nil
			return s
		}, true},
		{"the spec changed too", func() *v1alpha1.AgentSession {
			s := written()
			s.Generation = 3
			return s
		}, true},
		{"the dispatcher pinned a harness too", func() *v1alpha1.AgentSession {
			s := written()
			s.Status.AgentHarnessID, s.Status.NativeBinding = "codex", &v1alpha1.NativeBinding{}
			return s
		}, true},
		{"the same status on another session", func() *v1alpha1.AgentSession {
			s := written()
			s.UID = "u2"
			return s
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{own: newOwnWrites()}
			r.own.wrote("u1", &written().Status)
			skipped := testutil.ToFloat64(echoesSkipped)
			got := r.managerInputsChanged().Update(event.UpdateEvent{ObjectOld: before(), ObjectNew: tc.next()})
			if got != tc.want {
				t.Fatalf("reconcile = %v, want %v", got, tc.want)
			}
			if counted := testutil.ToFloat64(echoesSkipped) - skipped; counted != map[bool]float64{false: 1, true: 0}[got] {
				t.Fatalf("echoes counted: %v", counted)
			}
		})
	}

	t.Run("a failed write is forgotten", func(t *testing.T) {
		r := &Reconciler{own: newOwnWrites()}
		r.own.wrote("u1", &written().Status)
		r.own.forget("u1")
		if !r.managerInputsChanged().Update(event.UpdateEvent{ObjectOld: before(), ObjectNew: written()}) {
			t.Fatal("an update after a forgotten write must be reconciled")
		}
	})
	t.Run("a deleted session is forgotten", func(t *testing.T) {
		r := &Reconciler{own: newOwnWrites()}
		r.own.wrote("u1", &written().Status)
		if !r.managerInputsChanged().Delete(event.DeleteEvent{Object: written()}) || len(r.own.digest) != 0 {
			t.Fatalf("deletion: reconciled and forgotten expected, %d digests left", len(r.own.digest))
		}
	})
}
