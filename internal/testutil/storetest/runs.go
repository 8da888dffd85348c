package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

var runBehaviours = []behaviour{
	{name: "ConcurrentClaimsWithDifferentDigestsRunOnce", test: testConcurrentClaims},
	{name: "SameRequestAttachesWhileRunningAndReplaysOnceEnded", test: testAttachThenReplay},
	{name: "ClaimIsDurableAcrossRestart", test: testClaimDurable},
	{name: "InvalidKeysAndLeasesAreRefused", test: testInvalidInput},
	{name: "TheRequesterIsRecordedWithTheRun", test: testRequesterRecorded},
}

// testRequesterRecorded: who asked for a run is part of its record, before
// and after a restart, for an ended run and one that was running.
func testRequesterRecorded(t *testing.T, e *env) {
	s := session("team-a", 1)
	lease := acquire(t, e.st, s, "dispatcher-a")
	by := store.Requester{User: "system:serviceaccount:team-a:gateway", UID: "6f1c", Groups: []string{"system:serviceaccounts", "system:authenticated"}}
	done, _, err := e.st.Claim(lease, "run-done", digest("body"), by)
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	finish(t, done)
	if _, _, err := e.st.Claim(lease, "run-live", digest("body"), by); err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if got := done.Info().Requester; !equalRequester(got, by) {
		t.Fatalf("requester of the claimed run: %+v, want %+v", got, by)
	}
	st := e.reopen(t)
	for _, id := range []string{"run-done", "run-live"} {
		r, err := st.FindRun(s, id)
		if err != nil {
			t.Fatalf("FindRun(%s) after restart: %v", id, err)
		}
		if got := r.Info().Requester; !equalRequester(got, by) {
			t.Fatalf("requester of %s after restart: %+v, want %+v", id, got, by)
		}
	}
}

func equalRequester(a, b store.Requester) bool {
	return a.User == b.User && a.UID == b.UID && strings.Join(a.Groups, ",") == strings.Join(b.Groups, ",")
}

// testConcurrentClaims: many requests race for one runId, each with its own
// body, through both dispatchers. Exactly one may run; every other learns
// that the runId belongs to another request.
func testConcurrentClaims(t *testing.T, e *env) {
	s := session("team-a", 1)
	lease := acquire(t, e.st, s, "dispatcher-a")
	stores := []store.Store{e.st, e.peer(t)}
	const claimers = 16
	type result struct {
		body    string
		outcome store.BeginOutcome
		err     error
	}
	results := make([]result, claimers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range claimers {
		wg.Go(func() {
			<-start
			body := fmt.Sprintf("body-%d", i)
			_, outcome, err := stores[i%2].Claim(lease, "run-1", digest(body), store.Requester{})
			results[i] = result{body, outcome, err}
		})
	}
	close(start)
	wg.Wait()

	winner := ""
	for _, r := range results {
		if r.err == nil && r.outcome == store.BeginNew {
			if winner != "" {
				t.Fatalf("runId claimed twice: for %s and for %s", winner, r.body)
			}
			winner = r.body
		}
	}
	if winner == "" {
		t.Fatalf("no claimer got BeginNew: %+v", results)
	}
	for _, r := range results {
		if r.body == winner {
			continue
		}
		var conflict *store.RunConflictError
		if !errors.As(r.err, &conflict) || !errors.Is(r.err, store.ErrRunConflict) {
			t.Fatalf("claim for %s: (%v, %v), want a *RunConflictError", r.body, r.outcome, r.err)
		}
		if conflict.Recorded != digest(winner) || conflict.Requested != digest(r.body) || conflict.RunID != "run-1" || conflict.Session != s {
			t.Fatalf("conflict for %s = %+v: want the winner's digest recorded and its own requested", r.body, conflict)
		}
	}
	found, err := e.st.FindRun(s, "run-1")
	if err != nil {
		t.Fatalf("FindRun: %v", err)
	}
	if info := found.Info(); info.Digest != digest(winner) || info.State != store.StateRunning {
		t.Fatalf("FindRun info = %+v, want the winner's running run", info)
	}
}

// testAttachThenReplay: a reconnect with the same request follows the live
// run, and once it ended replays it; a read-only handle cannot write.
func testAttachThenReplay(t *testing.T, e *env) {
	s := session("team-a", 1)
	lease := acquire(t, e.st, s, "dispatcher-a")
	w := claimNew(t, e.st, lease, "run-1", "body")
	appendN(t, w, 0, 2)

	attached := claim(t, e.peer(t), lease, "run-1", "body", store.BeginAttach)
	if _, err := attached.Append("partial", payload(9)); !errors.Is(err, store.ErrNotWriter) {
		t.Fatalf("Append on an attached handle: %v, want ErrNotWriter", err)
	}
	f := follow(t, attached, 0)
	checkEvents(t, []store.Event{f.next(t), f.next(t)}, 1, 2)
	appendN(t, w, 2, 1)
	checkEvents(t, []store.Event{f.next(t)}, 3, 3)
	finish(t, w)
	if err := f.end(t); err != nil {
		t.Fatalf("attached events ended with %v, want the run's end", err)
	}
	select {
	case <-attached.Done():
	default:
		t.Fatal("Done() of an attached handle is open after Finish")
	}
	if _, err := w.Append("partial", payload(3)); !errors.Is(err, store.ErrRunEnded) {
		t.Fatalf("Append after Finish: %v, want ErrRunEnded", err)
	}

	replay := claim(t, e.st, lease, "run-1", "body", store.BeginReplay)
	checkEvents(t, collect(t, replay, 0), 1, 3)
	if info := replay.Info(); info.State != store.StateFinished || info.LastSeq != 3 || string(info.Result) != `{"ok":true}` {
		t.Fatalf("replayed info = %+v", info)
	}
	if _, _, err := e.st.Claim(lease, "run-1", digest("other body"), store.Requester{}); !errors.Is(err, store.ErrRunConflict) {
		t.Fatalf("Claim of an ended runId with another body: %v, want ErrRunConflict", err)
	}
}

// testClaimDurable: what was claimed before a restart is known after it — a
// finished run replays, a run that was running is still running (nobody
// runs it again) until Recover ends it.
func testClaimDurable(t *testing.T, e *env) {
	s := session("team-a", 1)
	lease := acquire(t, e.st, s, "dispatcher-a")
	done := claimNew(t, e.st, lease, "run-done", "body")
	appendN(t, done, 0, 2)
	finish(t, done)
	live := claimNew(t, e.st, lease, "run-live", "body")
	appendN(t, live, 0, 3)

	st := e.reopen(t)
	found, err := st.FindRun(s, "run-live")
	if err != nil {
		t.Fatalf("FindRun after restart: %v", err)
	}
	if info := found.Info(); info.State != store.StateRunning || !info.Recovered || info.LastSeq != 3 || info.Digest != digest("body") {
		t.Fatalf("a run that was running at the restart: %+v, want running, recovered, 3 events", info)
	}
	e.clock.Step(ttl) // the lease of the process that "crashed" expires
	lease = acquire(t, st, s, "dispatcher-b")
	checkEvents(t, collect(t, claim(t, st, lease, "run-done", "body", store.BeginReplay), 0), 1, 2)
	attached := claim(t, st, lease, "run-live", "body", store.BeginAttach)
	f := follow(t, attached, 1)
	checkEvents(t, []store.Event{f.next(t), f.next(t)}, 2, 3)
	release(t, st, lease)
	if _, err := st.Recover(context.Background(), "dispatcher-b", "restart"); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	if err := f.end(t); err != nil {
		t.Fatalf("events of a recovered run ended with %v, want its end", err)
	}
}

// testInvalidInput: keys that are not "namespace/uid", empty runIds and
// leases no Acquire returned are refused with their errors.
func testInvalidInput(t *testing.T, e *env) {
	ctx := context.Background()
	for _, bad := range []string{"", "team-a", "Team-A/uid", "team-a/../x", "team-a/x/y"} {
		if _, err := e.st.FindRun(bad, "run-1"); !errors.Is(err, store.ErrInvalidSession) {
			t.Fatalf("FindRun(%q): %v, want ErrInvalidSession", bad, err)
		}
		if _, err := e.st.Acquire(ctx, bad, "dispatcher-a", ttl); !errors.Is(err, store.ErrInvalidSession) {
			t.Fatalf("Acquire(%q): %v, want ErrInvalidSession", bad, err)
		}
		if err := e.st.Reserve(ctx, "server-0", bad, 1); !errors.Is(err, store.ErrInvalidSession) {
			t.Fatalf("Reserve(%q): %v, want ErrInvalidSession", bad, err)
		}
	}
	s := session("team-a", 1)
	_, err := e.st.Acquire(ctx, s, "", ttl)
	wantErr(t, "Acquire without an owner", err, store.ErrInvalidLease)
	_, err = e.st.Acquire(ctx, s, "dispatcher-a", 0)
	wantErr(t, "Acquire with ttl 0", err, store.ErrInvalidLease)
	_, _, err = e.st.Claim(store.Lease{Session: s}, "run-1", digest("body"), store.Requester{})
	wantErr(t, "Claim under a Lease no Acquire returned", err, store.ErrInvalidLease)
	lease := acquire(t, e.st, s, "dispatcher-a")
	for _, runID := range []string{"", strings.Repeat("r", store.MaxRunIDBytes+1), "\xff"} {
		_, _, err = e.st.Claim(lease, runID, digest("body"), store.Requester{})
		wantErr(t, fmt.Sprintf("Claim of runId %.10q", runID), err, store.ErrInvalidRunID)
	}
	_, err = e.st.FindRun(s, "never-claimed")
	wantErr(t, "FindRun of an unknown runId", err, store.ErrNotFound)
}
