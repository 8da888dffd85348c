package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/testutil/goroutines"
)

// crash leaves run-1 running with n events, as a dispatcher that died mid-turn
// does (Close writes no end record), and returns the run file.
func crash(t *testing.T, dir string, n int) string {
	t.Helper()
	j := open(t, dir, Options{})
	w := begin(t, j, sess, "run-1", "body", BeginNew)
	appendN(t, w, n)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	return runFile(j, sess, "run-1")
}

func TestRecoveryTornLastLine(t *testing.T) {
	dir := t.TempDir()
	path := crash(t, dir, 3)
	intact := readFile(t, path)
	appendBytes(t, path, []byte(`{"rec":"event","seq":4,"type":"par`))

	j := open(t, dir, Options{})
	if rep := j.Recovery(); rep.Runs != 1 || rep.Running != 1 || rep.TornTails != 1 || len(rep.Corrupt) != 0 {
		t.Fatalf("Recovery() = %+v", rep)
	}
	if got := readFile(t, path); !bytes.Equal(got, intact) {
		t.Fatalf("torn tail not cut:\n%s", got)
	}
	running := j.Running()
	if len(running) != 1 || running[0].RunID != "run-1" || running[0].Session != sess || !running[0].Recovered {
		t.Fatalf("Running() = %+v, want run-1 recovered", running)
	}

	// A resubmission attaches (never runs again) and sees the recorded events;
	// it ends when the engine marks the run failed.
	a := begin(t, j, sess, "run-1", "body", BeginAttach)
	done := collectAsync(a)
	goroutines.WaitBlocked(t, "(*Run).Events", 1) // it yielded the recorded events and waits
	select {
	case <-done:
		t.Fatal("iterator of a recovered run ended before MarkFailed")
	default:
	}
	if err := j.MarkFailed(running[0], "dispatcher restarted"); err != nil {
		t.Fatal(err)
	}
	select {
	case evs := <-done:
		checkSeqs(t, evs, 1, 3)
	case <-time.After(10 * time.Second):
		t.Fatal("attached iterator did not end at MarkFailed")
	}
	if got := j.Running(); len(got) != 0 {
		t.Fatalf("Running() after MarkFailed = %+v", got)
	}

	j = reopen(t, j, Options{})
	if rep := j.Recovery(); rep.Running != 0 || rep.TornTails != 0 {
		t.Fatalf("second Recovery() = %+v", rep)
	}
	r := begin(t, j, sess, "run-1", "body", BeginReplay)
	checkSeqs(t, mustCollect(t, r, 0), 1, 3)
	if info := r.Info(); info.State != StateFailed || info.Reason != "dispatcher restarted" {
		t.Fatalf("Info() = %+v", info)
	}
	// The whole file parses: the end record went after the cut, not after the torn bytes.
	if p := parseRun(t, readFile(t, path)); p.end == nil || p.torn || p.corrupt || p.lastSeq != 3 {
		t.Fatalf("file after MarkFailed: %+v", p)
	}
}

func TestRecoveryTornEndRecord(t *testing.T) {
	dir := t.TempDir()
	j := open(t, dir, Options{})
	w := begin(t, j, sess, "run-1", "body", BeginNew)
	appendN(t, w, 2)
	if err := w.Finish(StateFinished, json.RawMessage(`{"terminal":"ok"}`)); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	path := runFile(j, sess, "run-1")
	data := readFile(t, path)
	if err := os.WriteFile(path, data[:len(data)-10], 0o640); err != nil { // the end record torn
		t.Fatal(err)
	}
	j = open(t, dir, Options{})
	if rep := j.Recovery(); rep.Running != 1 || rep.TornTails != 1 {
		t.Fatalf("Recovery() = %+v", rep)
	}
	// Finish never returned, so the run is running, not finished.
	begin(t, j, sess, "run-1", "body", BeginAttach)
}

func TestRecoveryIncompleteBeginIsDiscarded(t *testing.T) {
	for _, tc := range []struct{ name, content string }{
		{"empty file", ""},
		{"torn begin record", `{"rec":"begin","v":1,"sess`},
		{"zeros", "\x00\x00\x00\x00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			j := open(t, dir, Options{})
			path := runFile(j, sess, "run-1")
			if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(tc.content), 0o640); err != nil {
				t.Fatal(err)
			}
			j = reopen(t, j, Options{})
			if rep := j.Recovery(); len(rep.Discarded) != 1 || rep.Discarded[0] != path || rep.Runs != 0 {
				t.Fatalf("Recovery() = %+v", rep)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("incomplete run file still there: %v", err)
			}
			begin(t, j, sess, "run-1", "body", BeginNew)
		})
	}
}

// damage replaces line i (0 = the begin record) of a file with garbage of the
// same length, keeping its newline, and returns the lines before and the result.
func damage(t *testing.T, path string, i int) (lines [][]byte, damaged []byte) {
	t.Helper()
	lines = bytes.SplitAfter(readFile(t, path), []byte("\n"))
	lines[i] = append(bytes.Repeat([]byte("#"), len(lines[i])-1), '\n')
	damaged = bytes.Join(lines, nil)
	if err := os.WriteFile(path, damaged, 0o640); err != nil {
		t.Fatal(err)
	}
	return lines, damaged
}

func TestRecoveryCorruptMiddleKeepsPrefix(t *testing.T) {
	dir := t.TempDir()
	path := crash(t, dir, 5)
	lines, damaged := damage(t, path, 3) // event 3

	j := open(t, dir, Options{})
	rep := j.Recovery()
	if len(rep.Corrupt) != 1 || rep.Running != 1 {
		t.Fatalf("Recovery() = %+v", rep)
	}
	if kept := readFile(t, rep.Corrupt[0]); !bytes.Equal(kept, damaged) {
		t.Fatal("the .corrupt copy is not the damaged file")
	}
	if got := readFile(t, path); !bytes.Equal(got, bytes.Join(lines[:3], nil)) {
		t.Fatalf("run file not cut to its valid prefix:\n%s", got)
	}
	// The valid prefix stays known: the runId is not new, and the engine fails it.
	a := begin(t, j, sess, "run-1", "body", BeginAttach)
	if err := j.MarkFailed(a.Ref(), "journal damaged"); err != nil {
		t.Fatal(err)
	}
	checkSeqs(t, mustCollect(t, a, 0), 1, 2)
	j = reopen(t, j, Options{})
	if rep := j.Recovery(); len(rep.Corrupt) != 0 || rep.Runs != 1 {
		t.Fatalf("second Recovery() = %+v (the .corrupt copy must be ignored)", rep)
	}
}

// TestDamagedEndedRunIsNotRerun: Open indexes an ended run from its first and
// last lines, and a replay reads its events from the file as it goes; damage
// in between shows when the replay reaches it, as the iterator's error after
// the intact events — never as a new run.
func TestDamagedEndedRunIsNotRerun(t *testing.T) {
	dir := t.TempDir()
	j := open(t, dir, Options{})
	w := begin(t, j, sess, "run-1", "body", BeginNew)
	appendN(t, w, 5)
	if err := w.Finish(StateFinished, nil); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	path := runFile(j, sess, "run-1")
	_, damaged := damage(t, path, 3)

	j = open(t, dir, Options{})
	if rep := j.Recovery(); rep.Runs != 1 || rep.Running != 0 {
		t.Fatalf("Recovery() = %+v", rep)
	}
	for range 2 {
		r := begin(t, j, sess, "run-1", "body", BeginReplay)
		evs, err := collect(r, 0)
		if err == nil || !strings.Contains(err.Error(), "damaged") {
			t.Fatalf("replay of a damaged finished run ended with %v, want the damage", err)
		}
		checkSeqs(t, evs, 1, 2)
	}
	if _, _, err := j.Begin(sess, "run-1", digestOf("other")); !errors.Is(err, ErrRunConflict) {
		t.Fatalf("Begin with another body: %v, want ErrRunConflict", err)
	}
	if got := readFile(t, path); !bytes.Equal(got, damaged) {
		t.Fatal("Begin changed a damaged finished run's file")
	}
}

func TestRecoveryUnreadableBeginIsQuarantined(t *testing.T) {
	dir := t.TempDir()
	j := open(t, dir, Options{})
	w := begin(t, j, sess, "run-1", "body", BeginNew)
	appendN(t, w, 2)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	path := runFile(j, sess, "run-1")
	data := readFile(t, path)
	data[0] = '!' // the begin record no longer parses
	if err := os.WriteFile(path, data, 0o640); err != nil {
		t.Fatal(err)
	}
	// A run file whose begin record names another run is moved aside too.
	other := filepath.Join(filepath.Dir(path), runFileName("run-2"))
	j2 := open(t, t.TempDir(), Options{})
	w2 := begin(t, j2, sess, "run-3", "body", BeginNew)
	if err := w2.Finish(StateFinished, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, readFile(t, runFile(j2, sess, "run-3")), 0o640); err != nil {
		t.Fatal(err)
	}

	j = open(t, dir, Options{})
	rep := j.Recovery()
	if len(rep.Corrupt) != 2 || rep.Runs != 0 {
		t.Fatalf("Recovery() = %+v", rep)
	}
	for _, p := range []string{path, other} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s still in place: %v", p, err)
		}
	}
	if !bytes.Equal(readFile(t, rep.Corrupt[0]), data) && !bytes.Equal(readFile(t, rep.Corrupt[1]), data) {
		t.Fatal("no .corrupt copy holds the damaged file")
	}
}

func TestSecondOpenFailsOnLock(t *testing.T) {
	dir := t.TempDir()
	j := open(t, dir, Options{})
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	open(t, dir, Options{})
}
