package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/testutil/goroutines"
)

func TestBeginAppendFinishReplay(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events int
		result json.RawMessage
	}{
		{"no events", 0, json.RawMessage(`{"terminal":{"kind":"ok"}}`)},
		{"some events", 7, json.RawMessage("{\n  \"assistantTexts\": [\"hi <b>\"]\n}")},
		// An end record longer than any read buffer: it is read whole, from
		// the end of the file.
		{"huge result", 3, json.RawMessage(`{"text":"` + strings.Repeat("x", 3*readBufferSize) + `"}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			opts := Options{Now: clk.Now}
			j := open(t, t.TempDir(), opts)
			r := begin(t, j, sess, "run-1", "body", BeginNew)
			if got := j.Running(); len(got) != 1 || got[0].RunID != "run-1" || got[0].Recovered {
				t.Fatalf("Running() = %+v, want run-1 not recovered", got)
			}
			appendN(t, r, tc.events)
			clk.Advance(time.Second)
			if err := r.Finish(StateFinished, tc.result); err != nil {
				t.Fatalf("Finish: %v", err)
			}
			var wantResult bytes.Buffer
			if err := json.Compact(&wantResult, tc.result); err != nil {
				t.Fatal(err)
			}

			check := func(t *testing.T, j *Journal) {
				t.Helper()
				rr := begin(t, j, sess, "run-1", "body", BeginReplay)
				checkSeqs(t, mustCollect(t, rr, 0), 1, int64(tc.events))
				info := rr.Info()
				if info.State != StateFinished || info.LastSeq != int64(tc.events) ||
					!bytes.Equal(info.Result, wantResult.Bytes()) ||
					!info.StartedAt.Equal(clk.Now().Add(-time.Second)) || !info.FinishedAt.Equal(clk.Now()) {
					t.Fatalf("replayed info = %+v (result %d bytes)", info, len(info.Result))
				}
				select {
				case <-rr.Done():
				default:
					t.Fatal("Done() of a finished run is not closed")
				}
				if _, err := rr.Append("partial", nil); !errors.Is(err, ErrNotWriter) {
					t.Fatalf("Append on a replay handle: %v, want ErrNotWriter", err)
				}
				if got := j.Running(); len(got) != 0 {
					t.Fatalf("Running() = %+v, want none", got)
				}
			}
			check(t, j)
			j = reopen(t, j, opts)
			if rep := j.Recovery(); rep.Runs != 1 || rep.Running != 0 || rep.TornTails != 0 {
				t.Fatalf("Recovery() = %+v", rep)
			}
			check(t, j)
		})
	}
}

func TestBeginOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		end     State // "" leaves the first run running
		body    string
		want    BeginOutcome
		wantErr error
	}{
		{"finished, same body: replay", StateFinished, "body", BeginReplay, nil},
		{"failed, same body: replay", StateFailed, "body", BeginReplay, nil},
		{"running, same body: attach", "", "body", BeginAttach, nil},
		{"finished, other body: conflict", StateFinished, "other", 0, ErrRunConflict},
		{"running, other body: conflict", "", "other", 0, ErrRunConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := open(t, t.TempDir(), Options{})
			first := begin(t, j, sess, "run-1", "body", BeginNew)
			appendN(t, first, 2)
			if tc.end != "" {
				if err := first.Finish(tc.end, json.RawMessage(`{"n":1}`)); err != nil {
					t.Fatal(err)
				}
			}
			before := readFile(t, runFile(j, sess, "run-1"))

			r, got, err := j.Begin(sess, "run-1", digestOf(tc.body))
			if tc.wantErr != nil {
				var conflict *RunConflictError
				if !errors.Is(err, tc.wantErr) || !errors.As(err, &conflict) {
					t.Fatalf("Begin err = %v, want %v", err, tc.wantErr)
				}
				if conflict.Recorded != digestOf("body") || conflict.Requested != digestOf(tc.body) || conflict.RunID != "run-1" {
					t.Fatalf("conflict = %+v", conflict)
				}
				if r != nil {
					t.Fatal("Begin returned a run with its error")
				}
			} else if err != nil || got != tc.want {
				t.Fatalf("Begin = %v, %v; want %v", got, err, tc.want)
			}
			if after := readFile(t, runFile(j, sess, "run-1")); !bytes.Equal(before, after) {
				t.Fatalf("a repeated Begin changed the run file:\n%s\n---\n%s", before, after)
			}
			if r != nil {
				if _, err := r.Append("partial", nil); !errors.Is(err, ErrNotWriter) {
					t.Fatalf("Append on a %v handle: %v, want ErrNotWriter", got, err)
				}
				if tc.end == "" {
					// finish the run so the attached handle ends
					if err := first.Finish(StateFinished, nil); err != nil {
						t.Fatal(err)
					}
				}
				checkSeqs(t, mustCollect(t, r, 0), 1, 2)
			}
		})
	}
}

func TestAttachFollowsLiveEvents(t *testing.T) {
	j := open(t, t.TempDir(), Options{})
	w := begin(t, j, sess, "run-1", "body", BeginNew)
	appendN(t, w, 3)
	a := begin(t, j, sess, "run-1", "body", BeginAttach)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type got struct {
		ev  Event
		err error
	}
	ch := make(chan got)
	go func() {
		defer close(ch)
		for ev, err := range a.Events(ctx, 1) {
			ch <- got{ev, err}
		}
	}()
	recv := func(want int64) {
		t.Helper()
		g, ok := <-ch
		if !ok || g.err != nil || g.ev.Seq != want || !bytes.Equal(g.ev.Payload, payload(int(want-1))) {
			t.Fatalf("received %+v (open %v), want seq %d", g, ok, want)
		}
	}
	recv(2) // recorded before the attach
	recv(3)
	for i := 4; i <= 6; i++ { // live: each event arrives after its Append
		if _, err := w.Append("partial", payload(i-1)); err != nil {
			t.Fatal(err)
		}
		recv(int64(i))
	}
	goroutines.WaitBlocked(t, "(*Run).Events", 1) // waiting for the next event, not yielding one
	select {
	case g := <-ch:
		t.Fatalf("iterator yielded %+v before the run ended", g)
	default:
	}
	if err := w.Finish(StateFinished, json.RawMessage(`{"ok":true}`)); err != nil {
		t.Fatal(err)
	}
	if g, ok := <-ch; ok {
		t.Fatalf("iterator yielded %+v after the end, want it to stop", g)
	}
	if info := a.Info(); info.State != StateFinished || string(info.Result) != `{"ok":true}` {
		t.Fatalf("attached Info() = %+v", info)
	}
}

func TestEventsAfterSeq(t *testing.T) {
	j := open(t, t.TempDir(), Options{})
	w := begin(t, j, sess, "run-1", "body", BeginNew)
	appendN(t, w, 5)
	if err := w.Finish(StateFinished, nil); err != nil {
		t.Fatal(err)
	}
	r := begin(t, j, sess, "run-1", "body", BeginReplay)
	for _, tc := range []struct {
		after       int64
		first, last int64
	}{
		{-3, 1, 5}, {0, 1, 5}, {2, 3, 5}, {4, 5, 5}, {5, 6, 5}, {99, 6, 5},
	} {
		checkSeqs(t, mustCollect(t, r, tc.after), tc.first, tc.last)
		checkSeqs(t, mustCollect(t, w, tc.after), tc.first, tc.last) // the writer's own handle
	}
}

func TestEventsStopOnContextAndClose(t *testing.T) {
	j := open(t, t.TempDir(), Options{})
	w := begin(t, j, sess, "run-1", "body", BeginNew)
	appendN(t, w, 1)
	const iterator = "(*Run).Events" // also when inlined into the caller

	// Cancelling ctx stops an iterator that waits for the next event.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type ending struct {
		n    int
		last error
	}
	ended := make(chan ending, 1)
	go func() {
		var e ending
		for _, err := range w.Events(ctx, 0) {
			e.n++
			e.last = err
		}
		ended <- e
	}()
	goroutines.WaitBlocked(t, iterator, 1) // it yielded the event and waits for the next
	cancel()
	select {
	case e := <-ended:
		if e.n != 2 || !errors.Is(e.last, context.Canceled) {
			t.Fatalf("got %d items ending with %v, want the event then context.Canceled", e.n, e.last)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("cancelling ctx did not stop a waiting iterator")
	}

	// Breaking out of the loop stops the iterator.
	for range w.Events(context.Background(), 0) {
		break
	}

	// Close wakes an iterator that waits for the next event.
	done := make(chan error, 1)
	go func() {
		_, err := collect(w, 1)
		done <- err
	}()
	goroutines.WaitBlocked(t, iterator, 1)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("waiting iterator ended with %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not wake a waiting iterator")
	}
	if _, err := w.Append("partial", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v", err)
	}
	if _, _, err := j.Begin(sess, "run-2", digestOf("b")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Begin after Close: %v", err)
	}
	if err := j.AppendTranscript(sess, json.RawMessage(`{}`)); !errors.Is(err, ErrClosed) {
		t.Fatalf("AppendTranscript after Close: %v", err)
	}
	if err := j.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestWriteErrors(t *testing.T) {
	j := open(t, t.TempDir(), Options{})
	w := begin(t, j, sess, "run-1", "body", BeginNew)
	appendN(t, w, 1)
	path := runFile(j, sess, "run-1")
	before := readFile(t, path)
	for _, tc := range []struct {
		name    string
		typ     string
		payload string
	}{
		{"empty type", "", `{}`},
		{"type with a quote", `a"b`, `{}`},
		{"type with a newline", "a\nb", `{}`},
		{"type too long", strings.Repeat("t", 65), `{}`},
		{"invalid payload", "partial", `{"a":`},
		{"two values", "partial", `{} {}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := w.Append(tc.typ, json.RawMessage(tc.payload)); !errors.Is(err, ErrInvalidRecord) {
				t.Fatalf("Append: %v, want ErrInvalidRecord", err)
			}
		})
	}
	if err := w.Finish(StateRunning, nil); err == nil {
		t.Fatal("Finish(running) succeeded")
	}
	if err := w.Finish(StateFinished, json.RawMessage(`nope`)); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("Finish with an invalid result: %v", err)
	}
	if after := readFile(t, path); !bytes.Equal(before, after) {
		t.Fatalf("refused writes changed the file:\n%s", after)
	}
	// Non-object payloads are fine: the payload is opaque JSON.
	if seq, err := w.Append("tool_call", json.RawMessage(` [1, "x"] `)); err != nil || seq != 2 {
		t.Fatalf("Append array payload = %d, %v", seq, err)
	}
	if err := w.Finish(StateFinished, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append("partial", nil); !errors.Is(err, ErrRunEnded) {
		t.Fatalf("Append after Finish: %v, want ErrRunEnded", err)
	}
	if err := w.Finish(StateFinished, nil); !errors.Is(err, ErrRunEnded) {
		t.Fatalf("second Finish: %v, want ErrRunEnded", err)
	}
	evs := mustCollect(t, w, 1)
	if len(evs) != 1 || string(evs[0].Payload) != `[1,"x"]` || evs[0].Type != "tool_call" {
		t.Fatalf("events = %+v", evs)
	}
}

func TestMarkFailed(t *testing.T) {
	j := open(t, t.TempDir(), Options{})
	w := begin(t, j, sess, "run-1", "body", BeginNew)
	appendN(t, w, 2)
	a := begin(t, j, sess, "run-1", "body", BeginAttach)
	done := collectAsync(a)
	if err := j.MarkFailed(w.Ref(), "watchdog: writer stuck"); err != nil {
		t.Fatal(err)
	}
	select {
	case evs := <-done:
		checkSeqs(t, evs, 1, 2)
	case <-time.After(5 * time.Second):
		t.Fatal("attached iterator did not end at MarkFailed")
	}
	if _, err := w.Append("partial", nil); !errors.Is(err, ErrRunEnded) {
		t.Fatalf("writer Append after MarkFailed: %v", err)
	}
	if err := j.MarkFailed(w.Ref(), "again"); !errors.Is(err, ErrRunEnded) {
		t.Fatalf("second MarkFailed: %v", err)
	}
	if err := j.MarkFailed(RunRef{Session: sess, RunID: "nope"}, "x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("MarkFailed of an unknown run: %v", err)
	}
	j = reopen(t, j, Options{})
	r := begin(t, j, sess, "run-1", "body", BeginReplay)
	if info := r.Info(); info.State != StateFailed || info.Reason != "watchdog: writer stuck" || info.Result != nil || info.LastSeq != 2 {
		t.Fatalf("Info() = %+v", info)
	}
}

func TestLookup(t *testing.T) {
	j := open(t, t.TempDir(), Options{})
	if _, err := j.Lookup(sess, "run-1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Lookup of an unknown run: %v", err)
	}
	w := begin(t, j, sess, "run-1", "body", BeginNew)
	appendN(t, w, 3)
	r, err := j.Lookup(sess, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if info := r.Info(); info.State != StateRunning || info.Digest != digestOf("body") {
		t.Fatalf("Info() = %+v", info)
	}
	if err := w.Finish(StateFinished, nil); err != nil {
		t.Fatal(err)
	}
	checkSeqs(t, mustCollect(t, r, 2), 3, 3)
	r, err = j.Lookup(sess, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	checkSeqs(t, mustCollect(t, r, 0), 1, 3)
}

func TestRunIDsAreHashedIntoFileNames(t *testing.T) {
	j := open(t, t.TempDir(), Options{})
	for _, id := range []string{"../../etc/passwd", "a/b\\c", "ünïcode ✓", strings.Repeat("r", MaxRunIDBytes), "con", ".."} {
		r := begin(t, j, sess, id, "body", BeginNew)
		if err := r.Finish(StateFinished, nil); err != nil {
			t.Fatal(err)
		}
		if p := runFile(j, sess, id); !isRunFileName(p[strings.LastIndexByte(p, '/')+1:]) {
			t.Fatalf("run file %s is not a hash name", p)
		}
	}
	j = reopen(t, j, Options{})
	if got := j.Recovery().Runs; got != 6 {
		t.Fatalf("reopened %d runs, want 6", got)
	}
	begin(t, j, sess, "../../etc/passwd", "body", BeginReplay)
	for _, id := range []string{"", strings.Repeat("r", MaxRunIDBytes+1), "\xff\xfe"} {
		if _, _, err := j.Begin(sess, id, digestOf("b")); !errors.Is(err, ErrInvalidRunID) {
			t.Fatalf("Begin(%q): %v, want ErrInvalidRunID", id, err)
		}
	}
}
