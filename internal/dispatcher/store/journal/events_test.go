package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/testutil/goroutines"
)

// follower collects a run's events in a goroutine. With hold, it stops after
// its first event until hold is closed: a reader that stopped reading.
type follower struct {
	evs  []Event
	err  error
	done chan struct{}
}

func followRun(r *Run, after int64, hold <-chan struct{}) *follower {
	f := &follower{done: make(chan struct{})}
	go func() {
		defer close(f.done)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for ev, err := range r.Events(ctx, after) {
			if err != nil {
				f.err = err
				return
			}
			f.evs = append(f.evs, ev)
			if len(f.evs) == 1 && hold != nil {
				<-hold
			}
		}
	}()
	return f
}

// wait returns the follower's events once its iteration ended.
func (f *follower) wait(t *testing.T, name string) []Event {
	t.Helper()
	select {
	case <-f.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("reader %s did not reach the run's end", name)
	}
	if f.err != nil {
		t.Fatalf("reader %s: %v", name, f.err)
	}
	return f.evs
}

// checkPayloads checks that evs are the events first..last, each once, in
// order, with the payloads pl gave them.
func checkPayloads(t *testing.T, name string, evs []Event, first, last int64, pl func(int) json.RawMessage) {
	t.Helper()
	if int64(len(evs)) != last-first+1 {
		t.Fatalf("reader %s got %d events, want seq %d..%d", name, len(evs), first, last)
	}
	for i, ev := range evs {
		want := first + int64(i)
		if ev.Seq != want || !bytes.Equal(ev.Payload, pl(int(want-1))) {
			t.Fatalf("reader %s: event %d is seq %d (%.40s…), want seq %d", name, i, ev.Seq, ev.Payload, want)
		}
	}
}

// tailOf is what the run keeps in memory: events and bytes.
func tailOf(r *Run) (int, int64) {
	r.rs.mu.Lock()
	defer r.rs.mu.Unlock()
	return len(r.rs.tail.events), r.rs.tail.bytes
}

func checkTailBounded(t *testing.T, j *Journal, r *Run) {
	t.Helper()
	n, b := tailOf(r)
	if n > maxTailEvents || b > maxTailBytes || j.tailBytes.Load() != b {
		t.Fatalf("the running run holds %d events, %d bytes (journal: %d bytes); want at most %d events and %d bytes",
			n, b, j.tailBytes.Load(), maxTailEvents, maxTailBytes)
	}
}

// TestSlowReadersFarBehindAFastWriterReadEveryEventOnce: readers that stop
// reading while the writer goes on far past the run's in-memory tail, one
// that joins in the middle of what left the tail, and one that goes on only
// after the run ended each read every event exactly once, in order, while the
// run holds no more than its bounded tail — and nothing once it ended.
func TestSlowReadersFarBehindAFastWriterReadEveryEventOnce(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events int
		pad    int
	}{
		{"many small events: the count bound", 5 * maxTailEvents, 64},
		{"large events: the byte bound", 8 * maxTailBytes / (16 << 10), 16 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl := func(i int) json.RawMessage {
				return json.RawMessage(fmt.Sprintf(`{"i":%d,"pad":"%s"}`, i, strings.Repeat("x", tc.pad)))
			}
			j := open(t, t.TempDir(), Options{noSync: true})
			w := begin(t, j, sess, "run-1", "body", BeginNew)
			appendUpTo := func(to int) {
				t.Helper()
				for i := int(w.Info().LastSeq); i < to; i++ {
					if _, err := w.Append("partial", pl(i)); err != nil {
						t.Fatalf("Append %d: %v", i+1, err)
					}
					checkTailBounded(t, j, w)
				}
			}
			const more = 10
			n := int64(tc.events)

			holdA, holdC := make(chan struct{}), make(chan struct{})
			a := followRun(w, 0, holdA) // stops after its first event
			live := followRun(begin(t, j, sess, "run-1", "body", BeginAttach), 0, nil)
			appendUpTo(tc.events)

			// Joins after an event that left the tail long ago.
			b := followRun(begin(t, j, sess, "run-1", "body", BeginAttach), n/2, nil)
			close(holdA)
			goroutines.WaitBlocked(t, "(*Run).Events", 3) // a, b and live caught up, waiting

			c := followRun(w, 0, holdC) // stops until the run ended
			appendUpTo(tc.events + more)
			if err := w.Finish(StateFinished, json.RawMessage(`{"ok":true}`)); err != nil {
				t.Fatal(err)
			}
			if held := j.tailBytes.Load(); held != 0 {
				t.Fatalf("the ended run still holds %d bytes of events", held)
			}
			close(holdC)

			checkPayloads(t, "a (stopped after event 1)", a.wait(t, "a"), 1, n+more, pl)
			checkPayloads(t, "live", live.wait(t, "live"), 1, n+more, pl)
			checkPayloads(t, "b (joined after event n/2)", b.wait(t, "b"), n/2+1, n+more, pl)
			checkPayloads(t, "c (went on after the end)", c.wait(t, "c"), 1, n+more, pl)
		})
	}
}

// TestRecoveredRunningRunKeepsOnlyItsTail: a run found running at Open is
// read as a stream and keeps only its tail in memory; a reader attached to it
// still gets every event.
func TestRecoveredRunningRunKeepsOnlyItsTail(t *testing.T) {
	dir := t.TempDir()
	const n = 3 * maxTailEvents
	crash(t, dir, n)
	j := open(t, dir, Options{})
	r := begin(t, j, sess, "run-1", "body", BeginAttach)
	if k, _ := tailOf(r); k == 0 {
		t.Fatal("the recovered run keeps no event in memory")
	}
	checkTailBounded(t, j, r)
	f := followRun(r, 0, nil)
	goroutines.WaitBlocked(t, "(*Run).Events", 1)
	if err := j.MarkFailed(r.Ref(), "dispatcher restarted"); err != nil {
		t.Fatal(err)
	}
	checkSeqs(t, f.wait(t, "attached"), 1, n)
	if held := j.tailBytes.Load(); held != 0 {
		t.Fatalf("the ended run still holds %d bytes of events", held)
	}
}

// TestReplayHandleDoesNotLoadTheRun: a handle on an ended run reads its begin
// and end records only, and its iterator reads the events from the file as it
// goes: taking the handle and the first event of an 8 MiB run allocates a
// small fraction of it.
func TestReplayHandleDoesNotLoadTheRun(t *testing.T) {
	const events, pad = 512, 16 << 10
	pl := func(i int) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"i":%d,"pad":"%s"}`, i, strings.Repeat("y", pad)))
	}
	j := open(t, t.TempDir(), Options{noSync: true})
	w := begin(t, j, sess, "run-1", "body", BeginNew)
	for i := range events {
		if _, err := w.Append("partial", pl(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(StateFinished, nil); err != nil {
		t.Fatal(err)
	}

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r, err := j.Lookup(sess, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range r.Events(context.Background(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		break
	}
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Fatalf("Lookup and the first event of a %d MiB run allocated %d KiB: the run was loaded", events*pad>>20, alloc>>10)
	}
	evs, err := collect(r, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkPayloads(t, "replay", evs, 1, events, pl)
}

// TestPruneDuringAReplay: retention may reduce an ended run to its tombstone
// while a reader replays it. An iteration that started reads the whole run
// (it holds the file it opened); one that starts after the prune gets the
// RunPrunedError a new Lookup would, never the tombstone read as events.
func TestPruneDuringAReplay(t *testing.T) {
	clk := newClock()
	j := open(t, t.TempDir(), noOtherLimits(Options{Now: clk.Now, MaxRuns: 1}))
	endedRun(t, j, sess, "run-1", 5)
	r, err := j.Lookup(sess, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	next, stop := iter.Pull2(r.Events(context.Background(), 0))
	defer stop()
	first, err, ok := next()
	if !ok || err != nil || first.Seq != 1 {
		t.Fatalf("first event = %+v, %v, %v", first, err, ok)
	}
	clk.Advance(time.Second)
	endedRun(t, j, sess, "run-2", 1) // run-1 is now beyond MaxRuns
	if rep, err := j.Prune(); err != nil || rep.PayloadsPruned != 1 {
		t.Fatalf("Prune = %+v, %v; want run-1's payload pruned", rep, err)
	}
	evs := []Event{first}
	for {
		ev, err, ok := next()
		if !ok {
			break
		}
		if err != nil {
			t.Fatalf("the replay that started before the prune: %v", err)
		}
		evs = append(evs, ev)
	}
	checkSeqs(t, evs, 1, 5)

	_, err = collect(r, 0)
	var pe *RunPrunedError
	if !errors.As(err, &pe) || pe.RunID != "run-1" || pe.LastSeq != 5 {
		t.Fatalf("a replay started after the prune ended with %v, want a *RunPrunedError of run-1", err)
	}
}
