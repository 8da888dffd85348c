package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// endedRun begins runID, appends n events and finishes it.
func endedRun(t *testing.T, j *Journal, session, runID string, n int) {
	t.Helper()
	r := begin(t, j, session, runID, "body", BeginNew)
	appendN(t, r, n)
	if err := r.Finish(StateFinished, json.RawMessage(`{"terminal":{"kind":"ok"}}`)); err != nil {
		t.Fatal(err)
	}
}

func TestByteCapPrunesOldestPayloadsKeepsTombstones(t *testing.T) {
	clk := newClock()
	dir := t.TempDir()
	opts := noOtherLimits(Options{Now: clk.Now})
	j := open(t, dir, opts)
	other := "team-a/session-2"
	live := begin(t, j, sess, "live", "body", BeginNew) // the oldest start
	appendN(t, live, 20)
	for i, s := range []string{sess, other, sess, other} {
		clk.Advance(time.Minute)
		endedRun(t, j, s, fmt.Sprintf("run-%d", i), 20)
	}
	endedRun(t, j, "team-b/session-1", "run-b", 20)
	size := func(s, id string) int64 { return fileSize(t, runFile(j, s, id)) }
	// Room for the live run and the two newest; team-b alone is under the
	// cap, both namespaces together are not.
	limit := size(sess, "live") + size(sess, "run-2") + size(other, "run-3") + 10
	if size("team-b/session-1", "run-b") >= limit {
		t.Fatal("team-b's run does not fit the cap; make the runs smaller")
	}

	opts.MaxNamespaceBytes = limit
	j = reopen(t, j, opts)
	if rep := j.Recovery(); rep.Pruned != (PruneReport{PayloadsPruned: 2}) {
		t.Fatalf("Recovery().Pruned = %+v, want the two oldest payloads of team-a", rep.Pruned)
	}
	for i, s := range []string{sess, other} {
		id := fmt.Sprintf("run-%d", i)
		pe := prunedRun(t, j, s, id)
		if pe.State != StateFinished || pe.LastSeq != 20 || !pe.FinishedAt.Equal(newClock().Now().Add(time.Duration(i+1)*time.Minute)) {
			t.Fatalf("%s tombstone = %+v", id, pe)
		}
		if _, _, err := j.Begin(s, id, digestOf("other body")); !errors.Is(err, ErrRunConflict) {
			t.Fatalf("Begin of pruned %s with another body: %v, want ErrRunConflict (the digest is kept)", id, err)
		}
		lines := bytes.Split(bytes.TrimSpace(readFile(t, runFile(j, s, id))), []byte("\n"))
		if len(lines) != 2 || !bytes.Contains(lines[1], []byte(`"pruned":true`)) || bytes.Contains(lines[1], []byte(`"result"`)) {
			t.Fatalf("%s file is not a tombstone:\n%s", id, bytes.Join(lines, []byte("\n")))
		}
	}
	for _, run := range [][2]string{{sess, "run-2"}, {other, "run-3"}, {"team-b/session-1", "run-b"}} {
		checkSeqs(t, mustCollect(t, begin(t, j, run[0], run[1], "body", BeginReplay), 0), 1, 20)
	}
	// The live run was recovered running; nothing of it went.
	r, err := j.Lookup(sess, "live")
	if err != nil {
		t.Fatal(err)
	}
	if info := r.Info(); info.State != StateRunning || info.LastSeq != 20 {
		t.Fatalf("the live run after the prune: %+v", info)
	}
	usage, err := j.Usage()
	if err != nil {
		t.Fatal(err)
	}
	if u := usage["team-a"]; u.Runs != 5 || u.Bytes > limit {
		t.Fatalf("team-a usage = %+v, want 5 runs within %d bytes", u, limit)
	}

	// Tombstones survive a restart as they are, and nothing more goes.
	j = reopen(t, j, opts)
	if rep := j.Recovery(); rep.Runs != 6 || rep.Pruned != (PruneReport{}) {
		t.Fatalf("Recovery() after the restart = %+v", rep)
	}
	prunedRun(t, j, sess, "run-0")
	if _, _, err := j.Begin(sess, "run-0", digestOf("body")); !errors.Is(err, ErrRunPayloadPruned) {
		t.Fatalf("resubmitted pruned run after a restart: %v, want ErrRunPayloadPruned", err)
	}
}

// fillTranscript appends records of about 100 bytes to session's transcript
// until it holds at least n bytes or the next one is refused for the size
// limit.
func fillTranscript(t *testing.T, j *Journal, session string, n int64) {
	t.Helper()
	rec := json.RawMessage(`{"type":"message","text":"` + strings.Repeat("x", 80) + `"}`)
	for {
		size, err := j.TranscriptSize(session)
		if err != nil {
			t.Fatal(err)
		}
		if size >= n {
			return
		}
		if err := j.AppendTranscript(session, rec); errors.Is(err, ErrTranscriptLimitExceeded) {
			return
		} else if err != nil {
			t.Fatal(err)
		}
	}
}

func transcriptOf(t *testing.T, j *Journal, session string) string {
	t.Helper()
	var b bytes.Buffer
	if _, err := j.ReadTranscript(session, &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestByteCapPrunesTranscriptsOfIdleSessionsOnly(t *testing.T) {
	// Named so that name order is the reverse of activity order.
	idleOld, idleNew, busy := "team-a/session-z", "team-a/session-y", "team-a/session-x"
	// populate gives the same files for the same options: the clock is fake.
	populate := func(opts Options) (*Journal, *clock) {
		clk := newClock()
		opts.Now = clk.Now
		j := open(t, t.TempDir(), opts)
		endedRun(t, j, idleOld, "run-0", 2)
		clk.Advance(time.Minute)
		endedRun(t, j, idleNew, "run-1", 2)
		clk.Advance(time.Minute)
		begin(t, j, busy, "run-2", "body", BeginNew)
		for _, s := range []string{idleOld, idleNew, busy} {
			fillTranscript(t, j, s, 1000)
		}
		return j, clk
	}
	opts := noOtherLimits(Options{MaxTranscriptBytes: 1000})
	probe, _ := populate(opts)
	usage, err := probe.Usage()
	if err != nil {
		t.Fatal(err)
	}
	oldSize, err := probe.TranscriptSize(idleOld)
	if err != nil {
		t.Fatal(err)
	}
	payloads := fileSize(t, runFile(probe, idleOld, "run-0")) + fileSize(t, runFile(probe, idleNew, "run-1"))
	// Room for all but the payloads and the least recently active transcript.
	opts.MaxNamespaceBytes = usage["team-a"].Bytes - payloads - oldSize + 200

	j, clk := populate(opts)
	if full, err := j.TranscriptFull(idleOld); err != nil || !full {
		t.Fatalf("TranscriptFull(%s) = %v, %v; the test needs a full transcript", idleOld, full, err)
	}
	if rep, err := j.Prune(); err != nil || rep != (PruneReport{PayloadsPruned: 2, TranscriptsPruned: 1}) {
		t.Fatalf("Prune() = %+v, %v; want both payloads, then one transcript", rep, err)
	}
	var marker struct {
		Type  string    `json:"type"`
		Bytes int64     `json:"bytes"`
		At    time.Time `json:"at"`
	}
	got := transcriptOf(t, j, idleOld)
	if err := json.Unmarshal([]byte(got), &marker); err != nil || marker.Type != "pruned" || marker.Bytes != oldSize ||
		!marker.At.Equal(clk.Now()) || strings.Count(got, "\n") != 1 {
		first, _, _ := strings.Cut(got, "\n")
		t.Fatalf("pruned transcript: %d lines, the first %q (%v); want one marker line for %d bytes", strings.Count(got, "\n"), first, err, oldSize)
	}
	// The session can mirror turns again.
	if full, err := j.TranscriptFull(idleOld); err != nil || full {
		t.Fatalf("TranscriptFull after the prune = %v, %v; want false", full, err)
	}
	if err := j.AppendTranscript(idleOld, json.RawMessage(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	busyBefore := transcriptOf(t, j, busy)
	if n := strings.Count(transcriptOf(t, j, idleNew), "\n"); n < 5 {
		t.Fatalf("%s's transcript was pruned (%d lines left)", idleNew, n)
	}

	// With no room at all, every idle transcript goes; the one of the
	// session whose turn runs (recovered running here) stays whole.
	opts.MaxNamespaceBytes, opts.Now = 1, clk.Now
	j = reopen(t, j, opts)
	if rep := j.Recovery(); rep.Pruned != (PruneReport{TranscriptsPruned: 2}) {
		t.Fatalf("Recovery().Pruned = %+v, want the transcripts of %s and %s", rep.Pruned, idleOld, idleNew)
	}
	if got := transcriptOf(t, j, busy); got != busyBefore {
		t.Fatalf("the transcript of the session with a running turn changed:\n%s", got)
	}
	if !strings.HasPrefix(transcriptOf(t, j, idleNew), `{"type":"pruned"`) {
		t.Fatalf("%s's transcript was not pruned", idleNew)
	}
}
