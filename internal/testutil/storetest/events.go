package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/testutil/goroutines"
)

var eventBehaviours = []behaviour{
	{name: "EventsResumeAfterASequenceNumber", test: testEventsAfterSeq},
	{name: "EventsWakeOnAppendWithoutPolling", test: testEventsWake},
	{name: "EventsEndWithTheirContextOrTheStore", test: testEventsEnd},
}

// testEventsAfterSeq: a reader resuming after event N (Last-Event-ID) gets
// exactly the events after it, from any handle.
func testEventsAfterSeq(t *testing.T, e *env) {
	s := session("team-a", 1)
	lease := acquire(t, e.st, s, "dispatcher-a")
	w := claimNew(t, e.st, lease, "run-1", "body")
	appendN(t, w, 0, 5)
	checkEvents(t, collectUntil(t, w, 2, 5), 3, 5)
	finish(t, w)
	r, err := e.peer(t).FindRun(s, "run-1")
	if err != nil {
		t.Fatalf("FindRun: %v", err)
	}
	for _, tc := range []struct{ after, first int64 }{{0, 1}, {3, 4}, {5, 6}, {9, 6}, {-1, 1}} {
		checkEvents(t, collect(t, r, tc.after), tc.first, 5)
	}
}

// collectUntil reads a running run's events after afterSeq up to lastSeq.
func collectUntil(t *testing.T, r store.Run, afterSeq, lastSeq int64) []store.Event {
	t.Helper()
	f := follow(t, r, afterSeq)
	var out []store.Event
	for int64(len(out)) < lastSeq-afterSeq {
		out = append(out, f.next(t))
	}
	f.cancel()
	return out
}

// testEventsWake: a reader that caught up with a running run waits for the
// next append — in a select, with no timer on the store's clock — and is
// woken by it; the run's end ends its iteration.
func testEventsWake(t *testing.T, e *env) {
	s := session("team-a", 1)
	lease := acquire(t, e.st, s, "dispatcher-a")
	w := claimNew(t, e.st, lease, "run-1", "body")
	appendN(t, w, 0, 1)
	r, err := e.peer(t).FindRun(s, "run-1")
	if err != nil {
		t.Fatalf("FindRun: %v", err)
	}
	f := follow(t, r, 0)
	checkEvents(t, []store.Event{f.next(t)}, 1, 1)
	for i := 1; i < 4; i++ {
		goroutines.WaitBlocked(t, "storetest.followEvents", 1)
		if n := e.clock.Waiters(); n != 0 {
			t.Fatalf("a waiting reader has %d timers on the store's clock: it must be woken by the append, not poll", n)
		}
		appendN(t, w, i, 1)
		checkEvents(t, []store.Event{f.next(t)}, int64(i+1), int64(i+1))
	}
	goroutines.WaitBlocked(t, "storetest.followEvents", 1)
	finish(t, w)
	if err := f.end(t); err != nil {
		t.Fatalf("events ended with %v, want the run's end", err)
	}
}

// testEventsEnd: a waiting reader stops with its context's error, and with
// ErrClosed when the Store closes.
func testEventsEnd(t *testing.T, e *env) {
	s := session("team-a", 1)
	lease := acquire(t, e.st, s, "dispatcher-a")
	w := claimNew(t, e.st, lease, "run-1", "body")
	cancelled := follow(t, w, 0)
	closed := follow(t, w, 0)
	goroutines.WaitBlocked(t, "storetest.followEvents", 2)
	cancelled.cancel()
	if err := cancelled.end(t); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled reader ended with %v, want context.Canceled", err)
	}
	if err := e.st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	wantErr(t, "a reader waiting at Close", closed.end(t), store.ErrClosed)
}
