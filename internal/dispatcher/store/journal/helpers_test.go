package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const sess = "team-a/session-1"

// clock is an injectable Options.Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// open opens a journal in dir and closes it at the end of the test.
func open(t testing.TB, dir string, opts Options) *Journal {
	t.Helper()
	j, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { _ = j.Close() })
	return j
}

func reopen(t testing.TB, j *Journal, opts Options) *Journal {
	t.Helper()
	if err := j.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return open(t, j.dir, opts)
}

func digestOf(s string) [32]byte { return Digest([]byte(s)) }

func begin(t testing.TB, j *Journal, session, runID, body string, want BeginOutcome) *Run {
	t.Helper()
	r, got, err := j.Begin(session, runID, digestOf(body))
	if err != nil {
		t.Fatalf("Begin(%s, %s): %v", session, runID, err)
	}
	if got != want {
		t.Fatalf("Begin(%s, %s) outcome = %v, want %v", session, runID, got, want)
	}
	return r
}

func appendN(t testing.TB, r *Run, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		seq, err := r.Append("partial", payload(i))
		if err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
		if want := r.Info().LastSeq; seq != want {
			t.Fatalf("Append %d returned seq %d, Info says %d", i, seq, want)
		}
	}
}

func payload(i int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"delta":"chunk %d <&>","i":%d}`, i, i))
}

// collect drains r.Events; it fails on an iterator error.
func collect(r *Run, after int64) ([]Event, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []Event
	for ev, err := range r.Events(ctx, after) {
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// collectAsync drains r.Events from the start in a goroutine of its own
// (for a follower that must be blocked while the test acts); the channel
// yields what it read.
func collectAsync(r *Run) <-chan []Event {
	done := make(chan []Event, 1)
	go func() {
		evs, _ := collect(r, 0)
		done <- evs
	}()
	return done
}

func mustCollect(t testing.TB, r *Run, after int64) []Event {
	t.Helper()
	evs, err := collect(r, after)
	if err != nil {
		t.Fatalf("Events(%d): %v", after, err)
	}
	return evs
}

// checkSeqs checks that evs are the events first..last, in order, with the
// payloads appendN writes.
func checkSeqs(t testing.TB, evs []Event, first, last int64) {
	t.Helper()
	if int64(len(evs)) != last-first+1 {
		t.Fatalf("got %d events, want seq %d..%d", len(evs), first, last)
	}
	for i, ev := range evs {
		want := first + int64(i)
		if ev.Seq != want {
			t.Fatalf("event %d has seq %d, want %d", i, ev.Seq, want)
		}
		if !bytes.Equal(ev.Payload, payload(int(want-1))) {
			t.Fatalf("event %d payload = %s, want %s", want, ev.Payload, payload(int(want-1)))
		}
	}
}

// parseRun scans the bytes of a run file.
func parseRun(t testing.TB, data []byte) parsedRun {
	t.Helper()
	p, err := scanRun(bytes.NewReader(data), nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func runFile(j *Journal, session, runID string) string { return j.runPath(session, runID) }

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func appendBytes(t testing.TB, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func transcriptPath(j *Journal, session string) string {
	ns, name, _ := strings.Cut(session, "/")
	return filepath.Join(j.dir, sessionsDirName, ns, name, transcriptFileName)
}
