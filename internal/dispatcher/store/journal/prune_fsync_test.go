package journal

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncLog records the journal's fsyncs (Options.onSync).
type syncLog struct {
	mu    sync.Mutex
	paths []string
}

func (l *syncLog) record(path string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.paths = append(l.paths, path)
}

// take returns the fsyncs recorded since the last take.
func (l *syncLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	paths := l.paths
	l.paths = nil
	return paths
}

func wantSyncs(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s fsynced\n  %s\nwant\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// Retention fsyncs what it writes and no directory: a tombstone is on disk
// before it replaces its run (the runId is kept either way), while a run
// forgotten or pruned whose removal or rename a crash loses is forgotten or
// pruned again by the Prune in Open.
func TestPruneFsyncsItsTombstonesOnly(t *testing.T) {
	clk := newClock()
	syncs := &syncLog{}
	j := open(t, t.TempDir(), noOtherLimits(Options{MaxRuns: 1, MaxAge: time.Hour, Now: clk.Now, onSync: syncs.record}))
	finishedRun(t, j, sess, "run-aged")
	clk.Advance(2 * time.Hour)
	finishedRun(t, j, sess, "run-pruned")
	clk.Advance(time.Second)
	finishedRun(t, j, sess, "run-kept")
	syncs.take()

	rep, err := j.Prune()
	if err != nil {
		t.Fatal(err)
	}
	if rep.Forgotten != 1 || rep.PayloadsPruned != 1 {
		t.Fatalf("Prune() = %+v, want run-aged forgotten and run-pruned's payload pruned", rep)
	}
	wantSyncs(t, "Prune", syncs.take(), runFile(j, sess, "run-pruned")+tmpExt)
}

// A pruned transcript's marker is fsynced, and its rename is made durable by
// the session's next SyncTranscript, with the records appended after it.
func TestAPrunedTranscriptsRenameIsMadeDurableByTheNextSync(t *testing.T) {
	syncs := &syncLog{}
	j := open(t, t.TempDir(), noOtherLimits(Options{MaxNamespaceBytes: 256, onSync: syncs.record}))
	record := json.RawMessage(`{"text":"` + strings.Repeat("x", 300) + `"}`)
	if err := j.AppendTranscript(sess, record); err != nil {
		t.Fatal(err)
	}
	if err := j.SyncTranscript(sess); err != nil {
		t.Fatal(err)
	}
	syncs.take()

	rep, err := j.Prune()
	if err != nil {
		t.Fatal(err)
	}
	if rep.TranscriptsPruned != 1 {
		t.Fatalf("Prune() = %+v, want the transcript pruned", rep)
	}
	path := transcriptPath(j, sess)
	wantSyncs(t, "Prune", syncs.take(), path+tmpExt)
	if err := j.AppendTranscript(sess, json.RawMessage(`{"text":"after"}`)); err != nil {
		t.Fatal(err)
	}
	if err := j.SyncTranscript(sess); err != nil {
		t.Fatal(err)
	}
	wantSyncs(t, "SyncTranscript after the prune", syncs.take(), path, filepath.Dir(path))
}
