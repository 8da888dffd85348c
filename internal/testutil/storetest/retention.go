package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

var retentionBehaviours = []behaviour{
	{name: "RunIDsStayClaimedForTheRetention", cfg: Config{MaxAge: time.Hour}, test: testRetentionAge},
	{name: "ANamespaceAtItsRunBoundRefusesNewRunIDs", cfg: Config{MaxNamespaceRuns: 2}, test: testNamespaceBound},
	{name: "PrunedPayloadsAreAnsweredNeverRunAgain", cfg: Config{MaxRuns: 1}, test: testPrunedPayload},
}

func prune(t *testing.T, st store.Store) store.PruneReport {
	t.Helper()
	rep, err := st.Prune()
	if err != nil {
		t.Fatalf("Prune: %v", err)
	}
	return rep
}

// testRetentionAge: an ended runId replays until the maximum age after its
// end, and only then is free again.
func testRetentionAge(t *testing.T, e *env) {
	s := session("team-a", 1)
	lease := acquire(t, e.st, s, "dispatcher-a")
	finish(t, claimNew(t, e.st, lease, "run-1", "body"))
	e.clock.Step(time.Hour - time.Minute)
	if rep := prune(t, e.st); rep.Forgotten != 0 {
		t.Fatalf("Prune before the maximum age = %+v, want nothing forgotten", rep)
	}
	claim(t, e.st, lease, "run-1", "body", store.BeginReplay)
	e.clock.Step(2 * time.Minute)
	if rep := prune(t, e.st); rep.Forgotten != 1 {
		t.Fatalf("Prune after the maximum age = %+v, want the run forgotten", rep)
	}
	_, err := e.st.FindRun(s, "run-1")
	wantErr(t, "FindRun of a forgotten run", err, store.ErrNotFound)
	claimNew(t, e.st, lease, "run-1", "another body")
}

// testNamespaceBound: a namespace holding its bound of runs gets no new
// runId — Admit says so before any work — while its known runIds are still
// answered, other namespaces are not affected, and deleting a session makes
// room.
func testNamespaceBound(t *testing.T, e *env) {
	s1, s2, s3 := session("team-a", 1), session("team-a", 2), session("team-a", 3)
	l1, l2 := acquire(t, e.st, s1, "dispatcher-a"), acquire(t, e.st, s2, "dispatcher-a")
	finish(t, claimNew(t, e.st, l1, "run-1", "body"))
	finish(t, claimNew(t, e.st, l2, "run-2", "body"))

	_, _, err := e.st.Claim(l1, "run-3", digest("body"), store.Requester{})
	var le *store.RetentionLimitError
	if !errors.As(err, &le) || !errors.Is(err, store.ErrRetentionLimitReached) || le.Namespace != "team-a" || le.Runs != 2 || le.Limit != 2 {
		t.Fatalf("Claim of a new runId in a full namespace: %v (%+v), want a *RetentionLimitError for team-a at 2 of 2", err, le)
	}
	wantErr(t, "Admit of a full namespace", e.st.Admit(s3), store.ErrRetentionLimitReached)
	claim(t, e.st, l1, "run-1", "body", store.BeginReplay)
	if usage, err := e.st.Usage(); err != nil || usage["team-a"].Runs != 2 {
		t.Fatalf("Usage = %+v, %v; want 2 runs in team-a", usage, err)
	}
	if err := e.st.Admit(session("team-b", 1)); err != nil {
		t.Fatalf("Admit of another namespace: %v", err)
	}
	release(t, e.st, l2)
	if err := e.st.DeleteSession(s2); err != nil {
		t.Fatalf("DeleteSession: %v", err)
	}
	claimNew(t, e.st, l1, "run-3", "body")
}

// testPrunedPayload: a run whose payload retention pruned is answered as
// pruned — by FindRun and Claim alike — and never claimed again; another
// request with its runId is still a conflict.
func testPrunedPayload(t *testing.T, e *env) {
	s := session("team-a", 1)
	lease := acquire(t, e.st, s, "dispatcher-a")
	finish(t, claimNew(t, e.st, lease, "run-1", "body"))
	e.clock.Step(time.Second)
	finish(t, claimNew(t, e.st, lease, "run-2", "body"))
	if rep := prune(t, e.st); rep.PayloadsPruned != 1 {
		t.Fatalf("Prune = %+v, want one payload pruned", rep)
	}
	_, err := e.st.FindRun(s, "run-1")
	var pe *store.RunPrunedError
	if !errors.As(err, &pe) || pe.State != store.StateFinished || pe.RunID != "run-1" {
		t.Fatalf("FindRun of a pruned run: %v, want a *RunPrunedError of the finished run", err)
	}
	_, _, err = e.st.Claim(lease, "run-1", digest("body"), store.Requester{})
	wantErr(t, "Claim of a pruned run", err, store.ErrRunPayloadPruned)
	_, _, err = e.st.Claim(lease, "run-1", digest("other body"), store.Requester{})
	wantErr(t, "Claim of a pruned run with another body", err, store.ErrRunConflict)
	claim(t, e.st, lease, "run-2", "body", store.BeginReplay)
}
