package storetest

import (
	"context"
	"testing"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

var holdsBehaviours = []behaviour{
	{name: "HoldsWhileTheGrantIsCurrentEvenExpired", test: testHoldsWhileCurrent},
	{name: "HoldsEndsWithATakeover", test: testHoldsEndsWithTakeover},
	{name: "HoldsEndsWithSweepAndRecover", test: testHoldsEndsWithSweepAndRecover},
	{name: "HoldsEndsWithDeleteSession", test: testHoldsEndsWithDelete},
	{name: "HoldsRefusesAnInvalidSessionOrToken", test: testHoldsInvalid},
}

// wantHolds fails unless st.Holds(session, token) answers want.
func wantHolds(t *testing.T, what string, st store.Store, session string, token int64, want bool) {
	t.Helper()
	got, err := st.Holds(context.Background(), session, token)
	if err != nil {
		t.Fatalf("Holds(%s, %d) %s: %v", session, token, what, err)
	}
	if got != want {
		t.Fatalf("Holds(%s, %d) %s = %v, want %v", session, token, what, got, want)
	}
}

// testHoldsWhileCurrent: a grant holds from Acquire until Release — through
// another dispatcher's Store on the same storage too, past its expiry while
// nobody takes the session, across a restart — and only its own token does;
// a session without a lease holds nothing.
func testHoldsWhileCurrent(t *testing.T, e *env) {
	s := session("team-a", 1)
	other := e.peer(t)
	wantHolds(t, "of a session never acquired", e.st, s, 1, false)
	a := acquire(t, e.st, s, "dispatcher-a")
	wantHolds(t, "by the holder's Store", e.st, s, a.Token, true)
	wantHolds(t, "by another dispatcher's Store", other, s, a.Token, true)
	wantHolds(t, "for a token never granted", other, s, a.Token+1, false)
	wantHolds(t, "for another session", other, session("team-a", 2), a.Token, false)
	wantHolds(t, "for the session in another namespace", other, session("team-b", 1), a.Token, false)

	e.clock.Step(2 * ttl)
	wantHolds(t, "after expiry, nobody having taken the session", other, s, a.Token, true)
	a = renew(t, e.st, a)
	wantHolds(t, "after Renew", other, s, a.Token, true)
	st := e.reopen(t)
	other = e.peer(t) // without Shared, the peer was e.st: the reopened one now
	wantHolds(t, "after a restart", st, s, a.Token, true)

	release(t, st, a)
	wantHolds(t, "after Release, by the releasing Store", st, s, a.Token, false)
	wantHolds(t, "after Release, by another dispatcher's Store", other, s, a.Token, false)
	b := acquire(t, other, s, "dispatcher-b")
	wantHolds(t, "of the next grant", st, s, b.Token, true)
	wantHolds(t, "of the released grant once the next one is granted", st, s, a.Token, false)
}

// testHoldsEndsWithATakeover: once another dispatcher acquired the session
// after the grant expired, the old grant no longer holds; the new one does.
func testHoldsEndsWithTakeover(t *testing.T, e *env) {
	s := session("team-a", 1)
	a := acquire(t, e.st, s, "dispatcher-a")
	e.clock.Step(ttl)
	other := e.peer(t)
	b := acquire(t, other, s, "dispatcher-b")
	wantHolds(t, "of the grant taken over", e.st, s, a.Token, false)
	wantHolds(t, "of the grant taken over, by the taker", other, s, a.Token, false)
	wantHolds(t, "of the taker's grant", e.st, s, b.Token, true)
}

// testHoldsEndsWithSweepAndRecover: the grant of a turn that Sweep ended
// (its holder stopped renewing) no longer holds, nor do the grants that
// Recover released — the restarted owner's, of a running turn or idle — while
// a live dispatcher's grant holds through both.
func testHoldsEndsWithSweepAndRecover(t *testing.T, e *env) {
	var (
		swept   = session("team-a", 1) // other's, a running turn, not renewed
		live    = session("team-a", 2) // other's, renewed
		own     = session("team-a", 3) // me's, a running turn, from my previous process
		ownIdle = session("team-a", 4) // me's, no run
	)
	other := e.peer(t)
	running := func(st store.Store, s, owner string) store.Lease {
		lease := acquire(t, st, s, owner)
		appendN(t, claimNew(t, st, lease, "run-1", "body"), 0, 1)
		return lease
	}
	sweptLease := running(other, swept, "other")
	liveLease := running(other, live, "other")
	e.clock.Step(ttl)
	liveLease = renew(t, other, liveLease)
	if ended := sweep(t, e.st); len(ended) != 1 || ended[0] != swept {
		t.Fatalf("Sweep ended the runs of %v, want %s's", ended, swept)
	}
	wantHolds(t, "of the swept grant", e.st, swept, sweptLease.Token, false)
	wantHolds(t, "of the swept grant, by its holder's Store", other, swept, sweptLease.Token, false)
	wantHolds(t, "of a live grant after a sweep", e.st, live, liveLease.Token, true)

	ownLease := running(e.st, own, "me")
	idleLease := acquire(t, e.st, ownIdle, "me")
	st := e.reopen(t)
	other = e.peer(t)
	if _, err := st.Recover(context.Background(), "me", reason); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	for _, g := range []store.Lease{ownLease, idleLease} {
		wantHolds(t, "of a grant Recover released", st, g.Session, g.Token, false)
		wantHolds(t, "of a grant Recover released, by another dispatcher's Store", other, g.Session, g.Token, false)
	}
	wantHolds(t, "of another owner's live grant after Recover", st, live, liveLease.Token, true)
}

// testHoldsEndsWithDelete: a deleted session's grant no longer holds, and
// acquiring the session again gives a greater token: the old one never
// holds again.
func testHoldsEndsWithDelete(t *testing.T, e *env) {
	s := session("team-a", 1)
	a := acquire(t, e.st, s, "dispatcher-a")
	finish(t, claimNew(t, e.st, a, "run-1", "body"))
	e.clock.Step(ttl)
	if err := e.st.DeleteSession(s); err != nil {
		t.Fatalf("DeleteSession with an expired lease: %v", err)
	}
	wantHolds(t, "of a deleted session's grant", e.st, s, a.Token, false)
	b := acquire(t, e.peer(t), s, "dispatcher-a")
	if b.Token <= a.Token {
		t.Fatalf("token after DeleteSession = %d, want above the deleted session's %d", b.Token, a.Token)
	}
	wantHolds(t, "of a deleted session's grant once the session is acquired again", e.st, s, a.Token, false)
	wantHolds(t, "of the grant after DeleteSession", e.st, s, b.Token, true)
}

// testHoldsInvalid: a malformed session key or a token Acquire never
// returns is an error naming it, not a silent false.
func testHoldsInvalid(t *testing.T, e *env) {
	ctx := context.Background()
	s := session("team-a", 1)
	acquire(t, e.st, s, "dispatcher-a")
	for _, bad := range []string{"", "team-a", "Team-A/uid", "team-a/uid/extra"} {
		_, err := e.st.Holds(ctx, bad, 1)
		wantErr(t, "Holds of session "+bad, err, store.ErrInvalidSession)
	}
	for _, token := range []int64{0, -1} {
		_, err := e.st.Holds(ctx, s, token)
		wantErr(t, "Holds of a token that is not positive", err, store.ErrInvalidLease)
	}
}
