package journal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// finishedRun begins and finishes runID at the clock's current time.
func finishedRun(t *testing.T, j *Journal, session, runID string) {
	t.Helper()
	r := begin(t, j, session, runID, "body", BeginNew)
	appendN(t, r, 1)
	if err := r.Finish(StateFinished, nil); err != nil {
		t.Fatal(err)
	}
}

func known(j *Journal, session, runID string) bool {
	_, err := j.Lookup(session, runID)
	return err == nil
}

// prunedRun returns the *RunPrunedError Lookup gives for runID, failing the
// test for any other answer.
func prunedRun(t *testing.T, j *Journal, session, runID string) RunPrunedError {
	t.Helper()
	_, err := j.Lookup(session, runID)
	var pe *RunPrunedError
	if !errors.As(err, &pe) || !errors.Is(err, ErrRunPayloadPruned) {
		t.Fatalf("Lookup(%s, %s) = %v, want a *RunPrunedError", session, runID, err)
	}
	return *pe
}

// noOtherLimits turns off the limits a test leaves zero (the defaults would
// apply otherwise).
func noOtherLimits(o Options) Options {
	if o.MaxRuns == 0 {
		o.MaxRuns = -1
	}
	if o.MaxNamespaceRuns == 0 {
		o.MaxNamespaceRuns = -1
	}
	if o.MaxNamespaceBytes == 0 {
		o.MaxNamespaceBytes = -1
	}
	if o.MaxAge == 0 {
		o.MaxAge = -1
	}
	return o
}

func TestMaxRunsPrunesPayloadsNeverRunIDs(t *testing.T) {
	clk := newClock()
	opts := noOtherLimits(Options{MaxRuns: 2, Now: clk.Now})
	j := open(t, t.TempDir(), opts)
	// The running run is the oldest of all; it is never pruned and not counted.
	running := begin(t, j, "team-b/other", "running", "body", BeginNew)
	sessionOf := func(i int) string {
		if i%2 == 1 {
			return "team-b/other" // the limit is across sessions
		}
		return sess
	}
	for i := range 5 {
		clk.Advance(time.Minute)
		finishedRun(t, j, sessionOf(i), fmt.Sprintf("run-%d", i))
	}
	rep, err := j.Prune()
	if err != nil || rep != (PruneReport{PayloadsPruned: 3}) {
		t.Fatalf("Prune() = %+v, %v; want 3 payloads pruned, nothing forgotten", rep, err)
	}
	for i := range 5 {
		session, id := sessionOf(i), fmt.Sprintf("run-%d", i)
		if i >= 3 {
			begin(t, j, session, id, "body", BeginReplay)
			continue
		}
		pe := prunedRun(t, j, session, id)
		if pe.State != StateFinished || pe.LastSeq != 1 || !pe.FinishedAt.Equal(newClock().Now().Add(time.Duration(i+1)*time.Minute)) {
			t.Fatalf("run-%d tombstone = %+v", i, pe)
		}
		// The runId is not forgotten: the same request is refused, not run
		// again, and another request is still a conflict.
		if _, _, err := j.Begin(session, id, digestOf("body")); !errors.Is(err, ErrRunPayloadPruned) {
			t.Fatalf("Begin of pruned run-%d: %v, want ErrRunPayloadPruned", i, err)
		}
		if _, _, err := j.Begin(session, id, digestOf("other body")); !errors.Is(err, ErrRunConflict) {
			t.Fatalf("Begin of pruned run-%d with another body: %v, want ErrRunConflict", i, err)
		}
	}
	if !known(j, "team-b/other", "running") {
		t.Fatal("the running run was pruned")
	}
	if err := running.Finish(StateFinished, nil); err != nil {
		t.Fatal(err)
	}

	// Open prunes too, from the index it rebuilt from disk.
	opts.MaxRuns = 1
	j = reopen(t, j, opts)
	if rep := j.Recovery(); rep.Runs != 6 || rep.Pruned != (PruneReport{PayloadsPruned: 2}) {
		t.Fatalf("Recovery() = %+v, want 6 runs loaded, 2 more payloads pruned", rep)
	}
	begin(t, j, "team-b/other", "running", "body", BeginReplay) // finished last
	for i := range 5 {
		prunedRun(t, j, sessionOf(i), fmt.Sprintf("run-%d", i))
	}
}

func TestRetentionByAge(t *testing.T) {
	clk := newClock()
	opts := noOtherLimits(Options{MaxAge: time.Hour, Now: clk.Now})
	j := open(t, t.TempDir(), opts)
	running := begin(t, j, sess, "running", "body", BeginNew) // started long before everything
	clk.Advance(10 * time.Hour)
	finishedRun(t, j, sess, "old")
	clk.Advance(30 * time.Minute)
	finishedRun(t, j, sess, "new")
	// A tombstone ages out with its run, not earlier.
	if n, _, err := j.prunePayloads([]*runState{j.runs[runKey{sess, "old"}]}); n != 1 || err != nil {
		t.Fatalf("prunePayloads(old) = %d, %v", n, err)
	}

	clk.Advance(30 * time.Minute) // "old" finished exactly MaxAge ago: kept
	if rep, err := j.Prune(); err != nil || rep.Forgotten != 0 {
		t.Fatalf("Prune() at the age limit = %+v, %v", rep, err)
	}
	prunedRun(t, j, sess, "old")
	clk.Advance(time.Second)
	if rep, err := j.Prune(); err != nil || rep.Forgotten != 1 || !known(j, sess, "new") {
		t.Fatalf("Prune() past the age of old = %+v, %v", rep, err)
	}
	if _, err := j.Lookup(sess, "old"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Lookup of a run past its age: %v, want ErrNotFound", err)
	}
	clk.Advance(24 * time.Hour)
	if rep, err := j.Prune(); err != nil || rep.Forgotten != 1 || known(j, sess, "new") {
		t.Fatalf("Prune() past the age of new = %+v, %v", rep, err)
	}
	if !known(j, sess, "running") {
		t.Fatal("a running run was pruned by age")
	}
	// Age counts from the finish, not the start.
	if err := running.Finish(StateFinished, nil); err != nil {
		t.Fatal(err)
	}
	if rep, err := j.Prune(); err != nil || rep.Forgotten != 0 {
		t.Fatalf("Prune() right after the finish = %+v, %v", rep, err)
	}
	clk.Advance(2 * time.Hour)
	j = reopen(t, j, opts)
	if rep := j.Recovery(); rep.Pruned.Forgotten != 1 || known(j, sess, "running") {
		t.Fatalf("Recovery() = %+v, want the old run forgotten at Open", rep)
	}
	// Only now is the runId free again.
	begin(t, j, sess, "old", "another body", BeginNew)
}

func TestDeleteSession(t *testing.T) {
	other := "team-a/session-2"
	j := open(t, t.TempDir(), Options{})
	w := begin(t, j, sess, "run-1", "body", BeginNew)
	finishedRun(t, j, sess, "run-0")
	finishedRun(t, j, other, "run-0")
	for _, s := range []string{sess, other} {
		if err := j.AppendTranscript(s, json.RawMessage(`{"role":"user","text":"hi"}`)); err != nil {
			t.Fatal(err)
		}
	}

	if err := j.DeleteSession(sess); !errors.Is(err, ErrSessionBusy) {
		t.Fatalf("DeleteSession with a running run: %v, want ErrSessionBusy", err)
	}
	if !known(j, sess, "run-0") {
		t.Fatal("a refused DeleteSession removed runs")
	}
	if err := w.Finish(StateFinished, nil); err != nil {
		t.Fatal(err)
	}
	if err := j.DeleteSession(sess); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(transcriptPath(j, sess))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("session directory still there: %v", err)
	}
	if known(j, sess, "run-0") || known(j, sess, "run-1") {
		t.Fatal("runs of the deleted session are still known")
	}
	if n, err := j.TranscriptSize(sess); err != nil || n != 0 {
		t.Fatalf("TranscriptSize of the deleted session = %d, %v", n, err)
	}
	if !known(j, other, "run-0") {
		t.Fatal("DeleteSession removed another session's run")
	}
	if n, err := j.TranscriptSize(other); err != nil || n == 0 {
		t.Fatalf("other session's transcript: %d, %v", n, err)
	}
	if err := j.DeleteSession("team-z/never-seen"); err != nil {
		t.Fatalf("DeleteSession of an unknown session: %v", err)
	}
	// A session of the same name created later starts empty and works.
	if err := j.AppendTranscript(sess, json.RawMessage(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	begin(t, j, sess, "run-1", "new body", BeginNew)
	j = reopen(t, j, Options{})
	if rep := j.Recovery(); rep.Runs != 2 {
		t.Fatalf("Recovery() = %+v, want the other session's run and the new one", rep)
	}
	var buf bytesBuffer
	if _, err := j.ReadTranscript(sess, &buf); err != nil || buf.String() != "{\"n\":1}\n" {
		t.Fatalf("transcript after re-creation = %q, %v", buf.String(), err)
	}
}

func TestRetentionRunsPeriodically(t *testing.T) {
	clk := newClock()
	j := open(t, t.TempDir(), noOtherLimits(Options{MaxAge: time.Hour, Now: clk.Now}))
	finishedRun(t, j, sess, "run-1")
	if err := j.RunRetention(context.Background(), 0, nil); err == nil {
		t.Fatal("RunRetention with a zero interval did not fail")
	}

	type pass struct {
		rep PruneReport
		err error
	}
	passes := make(chan pass)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- j.RunRetention(ctx, time.Millisecond, func(rep PruneReport, err error) {
			select {
			case passes <- pass{rep, err}:
			case <-ctx.Done():
			}
		})
	}()
	next := func() pass {
		t.Helper()
		select {
		case p := <-passes:
			if p.err != nil {
				t.Fatalf("retention pass: %v", p.err)
			}
			return p
		case <-time.After(20 * time.Second):
			t.Fatal("no retention pass within 20s")
		}
		return pass{}
	}
	if p := next(); p.rep.Forgotten != 0 || !known(j, sess, "run-1") {
		t.Fatalf("a pass before the run aged: %+v", p.rep)
	}
	// The run ages while the loop runs: a later pass forgets it.
	clk.Advance(time.Hour + time.Second)
	forgotten := 0
	for forgotten == 0 {
		forgotten = next().rep.Forgotten
	}
	if forgotten != 1 || known(j, sess, "run-1") {
		t.Fatalf("a pass after the run aged forgot %d runs; run-1 known: %v", forgotten, known(j, sess, "run-1"))
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("RunRetention returned %v after its context ended", err)
	}
	// Closing the journal ends the loop too.
	go func() { done <- j.RunRetention(context.Background(), time.Hour, nil) }()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("RunRetention returned %v after the journal closed", err)
	}
}
