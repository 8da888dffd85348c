package storetest

import (
	"context"
	"testing"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

var fenceBehaviours = []behaviour{
	{name: "AStaleHolderCannotWriteAfterATakeover", test: testFencedAfterTakeover},
	{name: "AnExpiredHolderWritesUntilSomeoneTakesOver", test: testExpiredHolderWrites},
	{name: "ReleaseFencesTheRunsClaimedUnderTheLease", test: testFencedAfterRelease},
}

// testFencedAfterTakeover: a dispatcher that stalled past its lease, while
// another took the session over, can neither append to nor finish its run,
// nor claim a new one: nothing it writes lands after the takeover.
func testFencedAfterTakeover(t *testing.T, e *env) {
	s := session("team-a", 1)
	a := acquire(t, e.st, s, "dispatcher-a")
	w := claimNew(t, e.st, a, "run-1", "body")
	appendN(t, w, 0, 1)
	e.clock.Step(ttl)
	acquire(t, e.peer(t), s, "dispatcher-b")

	_, err := w.Append("partial", payload(1))
	wantErr(t, "Append of a stale holder", err, store.ErrFenced)
	wantErr(t, "Finish of a stale holder", w.Finish(store.StateFinished, nil), store.ErrFenced)
	_, _, err = e.st.Claim(a, "run-2", digest("body"), store.Requester{})
	wantErr(t, "Claim of a stale holder", err, store.ErrFenced)

	found, err := e.st.FindRun(s, "run-1")
	if err != nil {
		t.Fatalf("FindRun: %v", err)
	}
	if info := found.Info(); info.State != store.StateRunning || info.LastSeq != 1 {
		t.Fatalf("the stale holder's run = %+v, want running with its 1 event", info)
	}
	_, err = e.st.FindRun(s, "run-2")
	wantErr(t, "FindRun of the stale holder's refused claim", err, store.ErrNotFound)
}

// testExpiredHolderWritesUntilSomeoneTakesOver: expiry alone fences
// nothing — a holder late to renew keeps its turn while nobody wants the
// session.
func testExpiredHolderWrites(t *testing.T, e *env) {
	s := session("team-a", 1)
	a := acquire(t, e.st, s, "dispatcher-a")
	w := claimNew(t, e.st, a, "run-1", "body")
	e.clock.Step(2 * ttl)
	appendN(t, w, 0, 1)
	finish(t, w)
	if _, err := e.st.Renew(context.Background(), a, ttl); err != nil {
		t.Fatalf("Renew of an expired lease nobody took: %v", err)
	}
}

// testFencedAfterRelease: once its lease is released, a turn's handle no
// longer writes and the lease claims nothing.
func testFencedAfterRelease(t *testing.T, e *env) {
	s := session("team-a", 1)
	a := acquire(t, e.st, s, "dispatcher-a")
	w := claimNew(t, e.st, a, "run-1", "body")
	release(t, e.st, a)
	_, err := w.Append("partial", payload(0))
	wantErr(t, "Append after Release", err, store.ErrFenced)
	_, _, err = e.st.Claim(a, "run-2", digest("body"), store.Requester{})
	wantErr(t, "Claim under a released lease", err, store.ErrFenced)
	_, err = e.st.Renew(context.Background(), a, ttl)
	wantErr(t, "Renew of a released lease", err, store.ErrFenced)
}
