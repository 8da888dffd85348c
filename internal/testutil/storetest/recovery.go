package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

var recoveryBehaviours = []behaviour{
	{name: "RecoverEndsOnlyItsOwnRunsAndThoseOfExpiredLeases", test: testRecoverSelects},
	{name: "RecoverFencesTheHoldersItTakesOver", test: testRecoverFences},
}

const reason = "the dispatcher restarted while the turn was running"

// testRecoverSelects: after a restart, dispatcher "me" ends the runs it left
// and those whose lease expired or was released; a live dispatcher's run is
// not touched. Its own leases are released, so its sessions are free at
// once.
func testRecoverSelects(t *testing.T, e *env) {
	var (
		expired  = session("team-a", 1) // other's lease, expired
		live     = session("team-a", 2) // other's lease, not expired
		released = session("team-a", 3) // lease released with the run running
		own      = session("team-a", 4) // me's lease, from my previous process
		ownIdle  = session("team-a", 5) // me's lease, no run
	)
	running := func(s, owner string) store.Lease {
		lease := acquire(t, e.st, s, owner)
		appendN(t, claimNew(t, e.st, lease, "run-1", "body"), 0, 1)
		return lease
	}
	running(expired, "other")
	e.clock.Step(ttl / 2)
	running(live, "other")
	release(t, e.st, running(released, "other"))
	running(own, "me")
	acquire(t, e.st, ownIdle, "me")
	e.clock.Step(ttl/2 + time.Second) // expired's lease has expired, live's has not

	st := e.reopen(t)
	ended, err := st.Recover(context.Background(), "me", reason)
	if err != nil {
		t.Fatalf("Recover: %v", err)
	}
	var got []string
	for _, ref := range ended {
		got = append(got, ref.Session)
	}
	if want := []string{expired, released, own}; !slices.Equal(got, want) {
		t.Fatalf("Recover ended the runs of %v, want %v (sorted)", got, want)
	}
	for _, s := range []string{expired, released, own} {
		r, err := st.FindRun(s, "run-1")
		if err != nil {
			t.Fatalf("FindRun(%s): %v", s, err)
		}
		if info := r.Info(); info.State != store.StateFailed || info.Reason != reason || info.Result != nil || info.LastSeq != 1 {
			t.Fatalf("recovered run of %s = %+v, want failed with the reason and its event", s, info)
		}
	}
	r, err := st.FindRun(live, "run-1")
	if err != nil {
		t.Fatalf("FindRun(%s): %v", live, err)
	}
	if info := r.Info(); info.State != store.StateRunning {
		t.Fatalf("the live dispatcher's run = %+v, want it running", info)
	}
	for _, s := range []string{own, ownIdle} {
		acquire(t, st, s, "someone") // at once: the clock does not move
	}
}

// testRecoverFences: the holders whose runs Recover ended — a stalled
// dispatcher whose lease expired, and this owner's previous process — are
// fenced: they cannot write to the run or keep the lease.
func testRecoverFences(t *testing.T, e *env) {
	stalled, previous := session("team-a", 1), session("team-a", 2)
	sl := acquire(t, e.peer(t), stalled, "other")
	sw := claimNew(t, e.peer(t), sl, "run-1", "body")
	pl := acquire(t, e.st, previous, "me")
	pw := claimNew(t, e.st, pl, "run-1", "body")
	e.clock.Step(ttl)

	ended, err := e.st.Recover(context.Background(), "me", reason)
	if err != nil || len(ended) != 2 {
		t.Fatalf("Recover = %+v, %v; want both runs", ended, err)
	}
	for _, h := range []struct {
		name  string
		lease store.Lease
		run   store.Run
	}{{"stalled holder", sl, sw}, {"previous process", pl, pw}} {
		_, err := h.run.Append("partial", payload(0))
		wantErr(t, "Append of the "+h.name, err, store.ErrFenced)
		_, err = e.st.Renew(context.Background(), h.lease, ttl)
		wantErr(t, "Renew of the "+h.name, err, store.ErrFenced)
		select {
		case <-h.run.Done():
		default:
			t.Fatalf("Done() of the %s's run is open after Recover", h.name)
		}
	}
}
