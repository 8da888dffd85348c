package storetest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

var sweepBehaviours = []behaviour{
	{name: "SweepEndsOnlyTheRunsOfExpiredOrFreeLeases", test: testSweepSelects},
	{name: "ARenewingHolderIsNeverSwept", test: testSweepSparesRenewing},
	{name: "AHolderRenewingDuringASweepKeepsItsRunOrIsFenced", test: testSweepRacesRenewal},
}

const sweepReason = "its dispatcher stopped renewing the session's lease"

func sweep(t *testing.T, st store.Store) []string {
	t.Helper()
	ended, err := st.Sweep(context.Background(), sweepReason)
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	var sessions []string
	for _, ref := range ended {
		sessions = append(sessions, ref.Session)
	}
	return sessions
}

func renew(t *testing.T, st store.Store, lease store.Lease) store.Lease {
	t.Helper()
	lease, err := st.Renew(context.Background(), lease, ttl)
	if err != nil {
		t.Fatalf("Renew(%s): %v", lease.Session, err)
	}
	return lease
}

// testSweepSelects: a live dispatcher's sweep ends the runs whose holder
// stopped renewing (another dispatcher's or its own) and those whose lease
// was let go, fencing their holders, and nothing else: not a live lease —
// another's or the caller's own — and not an expired lease without a run.
// Their followers see them end; a second sweep finds nothing.
func testSweepSelects(t *testing.T, e *env) {
	var (
		dead     = session("team-a", 1) // other's lease, not renewed
		live     = session("team-a", 2) // other's lease, renewed
		released = session("team-a", 3) // other's lease released with the run running
		mine     = session("team-a", 4) // the sweeper's own lease, renewed
		stalled  = session("team-a", 5) // the sweeper's own lease, not renewed
		idle     = session("team-a", 6) // other's lease, not renewed, no run
	)
	other := e.peer(t)
	start := func(st store.Store, s, owner string) (store.Lease, store.Run) {
		lease := acquire(t, st, s, owner)
		w := claimNew(t, st, lease, "run-1", "body")
		appendN(t, w, 0, 1)
		return lease, w
	}
	deadLease, deadRun := start(other, dead, "other")
	liveLease, liveRun := start(other, live, "other")
	releasedLease, _ := start(other, released, "other")
	release(t, other, releasedLease)
	mineLease, mineRun := start(e.st, mine, "me")
	start(e.st, stalled, "me")
	idleLease := acquire(t, other, idle, "other")
	found, err := e.st.FindRun(dead, "run-1")
	if err != nil {
		t.Fatalf("FindRun: %v", err)
	}
	follower := follow(t, found, 0)
	e.clock.Step(ttl / 2)
	liveLease, mineLease = renew(t, other, liveLease), renew(t, e.st, mineLease)
	e.clock.Step(ttl/2 + time.Second)

	if got, want := sweep(t, e.st), []string{dead, released, stalled}; !slices.Equal(got, want) {
		t.Fatalf("Sweep ended the runs of %v, want %v (sorted)", got, want)
	}
	for _, s := range []string{dead, released, stalled} {
		r, err := e.st.FindRun(s, "run-1")
		if err != nil {
			t.Fatalf("FindRun(%s): %v", s, err)
		}
		if info := r.Info(); info.State != store.StateFailed || info.Reason != sweepReason || info.Result != nil || info.LastSeq != 1 {
			t.Fatalf("swept run of %s = %+v, want failed with the reason and its event", s, info)
		}
	}
	if err := follower.end(t); err != nil {
		t.Fatalf("a follower of a swept run ended with %v, want the run's end", err)
	}
	_, err = deadRun.Append("partial", payload(1))
	wantErr(t, "Append of a swept holder", err, store.ErrFenced)
	_, err = other.Renew(context.Background(), deadLease, ttl)
	wantErr(t, "Renew of a swept holder", err, store.ErrFenced)
	for _, h := range []struct {
		name  string
		st    store.Store
		lease store.Lease
		run   store.Run
	}{{"another dispatcher's live turn", other, liveLease, liveRun}, {"the sweeper's own live turn", e.st, mineLease, mineRun}} {
		if _, err := h.run.Append("partial", payload(1)); err != nil {
			t.Fatalf("Append of %s after a sweep: %v", h.name, err)
		}
		renew(t, h.st, h.lease)
	}
	renew(t, other, idleLease)
	if again := sweep(t, e.st); len(again) != 0 {
		t.Fatalf("a second Sweep ended the runs of %v, want none", again)
	}
	acquire(t, e.st, dead, "me") // at once: the swept lease was released
}

// testSweepSparesRenewing: a holder that renews its lease in time keeps its
// turn however many sweeps run and however long the turn takes.
func testSweepSparesRenewing(t *testing.T, e *env) {
	other := e.peer(t)
	lease := acquire(t, other, session("team-a", 1), "other")
	w := claimNew(t, other, lease, "run-1", "body")
	for i := range 10 { // three and a third ttls
		e.clock.Step(ttl / 3)
		lease = renew(t, other, lease)
		if ended := sweep(t, e.st); len(ended) != 0 {
			t.Fatalf("Sweep %d ended the runs of %v while their holder renews", i, ended)
		}
		appendN(t, w, i, 1)
	}
	finish(t, w)
}

// testSweepRacesRenewal: holders whose leases just expired renew while a
// sweep runs; each either keeps its run (its renewal came first: its run is
// running and takes writes) or is fenced (its run was swept), never both.
func testSweepRacesRenewal(t *testing.T, e *env) {
	const sessions = 16
	other := e.peer(t)
	leases := make([]store.Lease, sessions)
	runs := make([]store.Run, sessions)
	for i := range sessions {
		leases[i] = acquire(t, other, session("team-a", i), "other")
		runs[i] = claimNew(t, other, leases[i], "run-1", "body")
	}
	e.clock.Step(ttl)

	renewErrs := make([]error, sessions)
	var (
		swept    []store.RunRef
		sweepErr error
		wg       sync.WaitGroup
	)
	start := make(chan struct{})
	wg.Go(func() {
		<-start
		swept, sweepErr = e.st.Sweep(context.Background(), sweepReason)
	})
	for i := range sessions {
		wg.Go(func() {
			<-start
			_, renewErrs[i] = other.Renew(context.Background(), leases[i], ttl)
		})
	}
	close(start)
	wg.Wait()
	if sweepErr != nil {
		t.Fatalf("Sweep: %v", sweepErr)
	}
	for i := range sessions {
		s := session("team-a", i)
		wasSwept := slices.ContainsFunc(swept, func(ref store.RunRef) bool { return ref.Session == s })
		_, appendErr := runs[i].Append("partial", payload(0))
		switch {
		case renewErrs[i] == nil && !wasSwept:
			if appendErr != nil {
				t.Fatalf("session %d: renewed and not swept, but Append: %v", i, appendErr)
			}
		case errors.Is(renewErrs[i], store.ErrFenced) && wasSwept:
			wantErr(t, "Append of a swept holder", appendErr, store.ErrFenced)
		default:
			t.Fatalf("session %d: Renew = %v and swept = %t: want a renewal that keeps the run or a fenced holder whose run was swept", i, renewErrs[i], wasSwept)
		}
	}
}
