package storetest

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

var sessionBehaviours = []behaviour{
	{name: "DeleteSessionWaitsForItsTurnAndLease", test: testDeleteBusy},
	{name: "SessionsListsEverySessionWithState", test: testSessionsListed},
	{name: "AClosedStoreRefusesEverything", test: testClosed},
}

// testDeleteBusy: a session is not deleted under a running turn or a held
// lease; once both are gone it is, with everything it held, and a lease of it
// is void.
func testDeleteBusy(t *testing.T, e *env) {
	s := session("team-a", 1)
	lease := acquire(t, e.st, s, "dispatcher-a")
	w := claimNew(t, e.st, lease, "run-1", "body")
	wantErr(t, "DeleteSession with a running run", e.st.DeleteSession(s), store.ErrSessionBusy)
	finish(t, w)
	wantErr(t, "DeleteSession with a held lease", e.st.DeleteSession(s), store.ErrSessionBusy)
	e.clock.Step(ttl)
	if err := e.st.DeleteSession(s); err != nil {
		t.Fatalf("DeleteSession with an expired lease: %v", err)
	}
	_, err := e.st.FindRun(s, "run-1")
	wantErr(t, "FindRun in a deleted session", err, store.ErrNotFound)
	_, err = e.st.Renew(context.Background(), lease, ttl)
	wantErr(t, "Renew of a deleted session's lease", err, store.ErrFenced)
	if keys, err := e.st.Sessions(); err != nil || slices.Contains(keys, s) {
		t.Fatalf("Sessions() = %v, %v; want no %s", keys, err, s)
	}
	if err := e.st.DeleteSession(s); err != nil {
		t.Fatalf("DeleteSession of a session with nothing: %v", err)
	}
}

// testSessionsListed: garbage collection finds every session the store holds
// something for — a run, a transcript, a lease or a reservation.
func testSessionsListed(t *testing.T, e *env) {
	withRun, withTranscript, withLease, withPlace := session("team-a", 1), session("team-a", 2), session("team-b", 3), session("team-b", 4)
	finish(t, claimNew(t, e.st, acquire(t, e.st, withRun, "dispatcher-a"), "run-1", "body"))
	if err := e.st.AppendTranscript(withTranscript, json.RawMessage(`{"a":1}`)); err != nil {
		t.Fatalf("AppendTranscript: %v", err)
	}
	acquire(t, e.st, withLease, "dispatcher-a")
	reserve(t, e.st, server, withPlace, 1)
	keys, err := e.reopen(t).Sessions()
	if err != nil {
		t.Fatalf("Sessions: %v", err)
	}
	for _, s := range []string{withRun, withTranscript, withLease, withPlace} {
		if !slices.Contains(keys, s) {
			t.Fatalf("Sessions() = %v, want %s among them", keys, s)
		}
	}
}

// testClosed: every call on a closed Store fails with ErrClosed.
func testClosed(t *testing.T, e *env) {
	s := session("team-a", 1)
	lease := acquire(t, e.st, s, "dispatcher-a")
	if err := e.st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := e.st.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx := context.Background()
	_, _, err := e.st.Claim(lease, "run-1", digest("body"), store.Requester{})
	wantErr(t, "Claim", err, store.ErrClosed)
	_, err = e.st.FindRun(s, "run-1")
	wantErr(t, "FindRun", err, store.ErrClosed)
	_, err = e.st.Renew(ctx, lease, ttl)
	wantErr(t, "Renew", err, store.ErrClosed)
	_, err = e.st.Holds(ctx, s, lease.Token)
	wantErr(t, "Holds", err, store.ErrClosed)
	wantErr(t, "Reserve", e.st.Reserve(ctx, server, s, 1), store.ErrClosed)
	_, err = e.st.Reserved(ctx, server)
	wantErr(t, "Reserved", err, store.ErrClosed)
	wantErr(t, "AppendTranscript", e.st.AppendTranscript(s, json.RawMessage(`{}`)), store.ErrClosed)
	_, err = e.st.Recover(ctx, "dispatcher-a", reason)
	wantErr(t, "Recover", err, store.ErrClosed)
	wantErr(t, "Admit", e.st.Admit(s), store.ErrClosed)
	_, err = e.st.Sweep(ctx, reason)
	wantErr(t, "Sweep", err, store.ErrClosed)
	_, err = e.st.Post(s, "run-1", store.InboxMessage{Kind: store.InboxInterrupt})
	wantErr(t, "Post", err, store.ErrClosed)
}
