package journal

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"
)

// limitRefusal begins a new runId and expects the namespace bound's refusal,
// with nothing recorded.
func limitRefusal(t *testing.T, j *Journal, session, runID string) RetentionLimitError {
	t.Helper()
	_, _, err := j.Begin(session, runID, digestOf("body"))
	var le *RetentionLimitError
	if !errors.As(err, &le) || !errors.Is(err, ErrRetentionLimitReached) {
		t.Fatalf("Begin(%s, %s) = %v, want a *RetentionLimitError", session, runID, err)
	}
	if _, err := os.Stat(runFile(j, session, runID)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused Begin left a run file: %v", err)
	}
	var admit *RetentionLimitError
	if err := j.Admit(session); !errors.As(err, &admit) || *admit != *le {
		t.Fatalf("Admit(%s) = %v, want Begin's refusal %v", session, err, le)
	}
	return *le
}

func TestFullNamespaceRefusesNewRunIDsAndNeverForgetsOldOnes(t *testing.T) {
	clk := newClock()
	start := clk.Now()
	// MaxRuns 2 prunes the oldest payload: count pressure that used to forget
	// the oldest runId.
	opts := noOtherLimits(Options{MaxNamespaceRuns: 3, MaxRuns: 2, MaxAge: time.Hour, Now: clk.Now})
	j := open(t, t.TempDir(), opts)
	other := "team-a/session-2"
	for i, s := range []string{sess, other, sess} {
		finishedRun(t, j, s, fmt.Sprintf("run-%d", i))
		clk.Advance(time.Minute)
	}
	if rep, err := j.Prune(); err != nil || rep != (PruneReport{PayloadsPruned: 1}) {
		t.Fatalf("Prune() = %+v, %v; want the oldest payload pruned", rep, err)
	}

	// The oldest runId, its payload pruned, is refused: it never runs again.
	// The others replay.
	if _, _, err := j.Begin(sess, "run-0", digestOf("body")); !errors.Is(err, ErrRunPayloadPruned) {
		t.Fatalf("resubmitted oldest runId: %v, want ErrRunPayloadPruned", err)
	}
	begin(t, j, other, "run-1", "body", BeginReplay)
	// The namespace is full: a new runId is refused in any of its sessions
	// until its oldest run (finished at start) ages out.
	want := RetentionLimitError{Namespace: "team-a", Runs: 3, Limit: 3, RetryAfter: 57 * time.Minute}
	for _, s := range []string{sess, other, "team-a/session-3"} {
		if got := limitRefusal(t, j, s, "run-3"); got != want {
			t.Fatalf("refusal in %s = %+v, want %+v", s, got, want)
		}
	}
	// Other namespaces have their own bound.
	finishedRun(t, j, "team-b/session-1", "run-3")

	// The bound is counted again from the files after a restart.
	j = reopen(t, j, opts)
	if got := limitRefusal(t, j, sess, "run-3"); got != want {
		t.Fatalf("refusal after a restart = %+v, want %+v", got, want)
	}
	prunedRun(t, j, sess, "run-0")

	// Only the age limit frees a runId: run-0 goes, run-3 takes its place,
	// and the namespace is full again — for run-0 as well.
	clk.Advance(start.Add(time.Hour + time.Second).Sub(clk.Now()))
	if rep, err := j.Prune(); err != nil || rep.Forgotten != 1 {
		t.Fatalf("Prune() past run-0's age = %+v, %v", rep, err)
	}
	finishedRun(t, j, sess, "run-3")
	limitRefusal(t, j, sess, "run-0")

	// Deleting a session frees its runs' room.
	if err := j.DeleteSession(other); err != nil {
		t.Fatal(err)
	}
	if err := j.Admit(sess); err != nil {
		t.Fatalf("Admit with room: %v", err)
	}
	begin(t, j, sess, "run-4", "body", BeginNew)
}
