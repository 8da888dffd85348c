package journal

import (
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

func TestRetentionByCount(t *testing.T) {
	clk := newClock()
	opts := Options{MaxRuns: 2, MaxAge: -1, Now: clk.Now}
	j := open(t, t.TempDir(), opts)
	// The running run is the oldest of all; it is never pruned and not counted.
	running := begin(t, j, "team-b/other", "running", "body", BeginNew)
	for i := range 5 {
		clk.Advance(time.Minute)
		session := sess
		if i%2 == 1 {
			session = "team-b/other" // the limit is across sessions
		}
		finishedRun(t, j, session, fmt.Sprintf("run-%d", i))
	}
	n, err := j.Prune()
	if err != nil || n != 3 {
		t.Fatalf("Prune() = %d, %v; want 3", n, err)
	}
	for i, want := range []bool{false, false, false, true, true} {
		session := sess
		if i%2 == 1 {
			session = "team-b/other"
		}
		id := fmt.Sprintf("run-%d", i)
		if got := known(j, session, id); got != want {
			t.Fatalf("run-%d known = %v, want %v", i, got, want)
		}
		if _, err := os.Stat(runFile(j, session, id)); (err == nil) != want {
			t.Fatalf("run-%d file: %v, want present=%v", i, err, want)
		}
	}
	if !known(j, "team-b/other", "running") {
		t.Fatal("the running run was pruned")
	}
	// A pruned runId is forgotten: it begins anew.
	r := begin(t, j, sess, "run-0", "other body", BeginNew)
	if err := r.Finish(StateFinished, nil); err != nil {
		t.Fatal(err)
	}
	if err := running.Finish(StateFinished, nil); err != nil {
		t.Fatal(err)
	}

	// Open prunes too, from the index it rebuilt from disk.
	opts.MaxRuns = 1
	j = reopen(t, j, opts)
	if rep := j.Recovery(); rep.Runs != 4 || rep.Pruned != 3 {
		t.Fatalf("Recovery() = %+v, want 4 runs loaded, 3 pruned", rep)
	}
	if !known(j, "team-b/other", "running") { // finished last
		t.Fatal("the most recently finished run was pruned")
	}
}

func TestRetentionByAge(t *testing.T) {
	clk := newClock()
	opts := Options{MaxAge: time.Hour, Now: clk.Now}
	j := open(t, t.TempDir(), opts)
	running := begin(t, j, sess, "running", "body", BeginNew) // started long before everything
	clk.Advance(10 * time.Hour)
	finishedRun(t, j, sess, "old")
	clk.Advance(30 * time.Minute)
	finishedRun(t, j, sess, "new")

	clk.Advance(30 * time.Minute) // "old" finished exactly MaxAge ago: kept
	if n, err := j.Prune(); err != nil || n != 0 {
		t.Fatalf("Prune() at the age limit = %d, %v", n, err)
	}
	clk.Advance(time.Second)
	if n, err := j.Prune(); err != nil || n != 1 || known(j, sess, "old") || !known(j, sess, "new") {
		t.Fatalf("Prune() past the age of old = %d, %v", n, err)
	}
	clk.Advance(24 * time.Hour)
	if n, err := j.Prune(); err != nil || n != 1 || known(j, sess, "new") {
		t.Fatalf("Prune() past the age of new = %d, %v", n, err)
	}
	if !known(j, sess, "running") {
		t.Fatal("a running run was pruned by age")
	}
	// Age counts from the finish, not the start.
	if err := running.Finish(StateFinished, nil); err != nil {
		t.Fatal(err)
	}
	if n, err := j.Prune(); err != nil || n != 0 {
		t.Fatalf("Prune() right after the finish = %d, %v", n, err)
	}
	clk.Advance(2 * time.Hour)
	j = reopen(t, j, opts)
	if rep := j.Recovery(); rep.Pruned != 1 || known(j, sess, "running") {
		t.Fatalf("Recovery() = %+v, want the old run pruned at Open", rep)
	}
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
