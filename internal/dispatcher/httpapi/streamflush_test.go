package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/openclaw/harness-operator/internal/contract/sse"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// flushCounter counts the flushes of every answer of the handler it wraps.
type flushCounter struct {
	h       http.Handler
	flushes atomic.Int64
}

func (c *flushCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.h.ServeHTTP(&countingWriter{ResponseWriter: w, n: &c.flushes}, r)
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w *countingWriter) Flush() {
	w.n.Add(1)
	w.ResponseWriter.(http.Flusher).Flush()
}

// Unwrap gives http.ResponseController the connection's writer (its write
// deadlines).
func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestEventsAlreadyPublishedLeaveInOneFlush: a stream writes the events the
// store has already published without a flush between them and flushes
// once it has caught up: the headers and the 20 events of an ended run
// reach the client in one flush, all of them, in order.
func TestEventsAlreadyPublishedLeaveInOneFlush(t *testing.T) {
	f := newAPIFixture(t, 0, nil)
	f.run(t, 20, 10, true)
	counter := &flushCounter{h: f.handler}
	srv := httptest.NewServer(counter)
	t.Cleanup(srv.Close)
	resp, err := srv.Client().Do(reconnect(t, srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var ids []string
	if err := sse.Read(resp.Body, func(ev sse.Event) bool { ids = append(ids, ev.ID); return true }); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 20 || ids[0] != "1" || ids[19] != "20" {
		t.Fatalf("events %v, want 1…20", ids)
	}
	if got := counter.flushes.Load(); got != 1 {
		t.Fatalf("%d flushes for the headers and 20 events already published, want 1", got)
	}
}

// TestAStreamWithNothingToSendSendsItsHeaders: a stream whose run has no
// event after the client's Last-Event-ID yet sends its headers at once (the
// client learns its turn is journaled), and its next event when it comes.
func TestAStreamWithNothingToSendSendsItsHeaders(t *testing.T) {
	f := newAPIFixture(t, 0, nil)
	w := f.run(t, 1, 10, false)
	srv := httptest.NewServer(f.handler)
	t.Cleanup(srv.Close)
	req := reconnect(t, srv.URL)
	req.Header.Set("Last-Event-ID", "1")
	resp, err := srv.Client().Do(req) // returns once the headers arrived
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	appendEvent(t, w, 1, 10)
	sc := sse.NewScanner(resp.Body)
	if !sc.Next() || sc.Event().ID != "2" {
		t.Fatalf("the event after the headers: %+v, %v", sc.Event(), sc.Err())
	}
	if err := w.Finish(store.StateFinished, nil); err != nil {
		t.Fatal(err)
	}
}

// TestAStreamFlushesEachEventThatArrivesAlone: an event appended while the
// stream waits is flushed at once — the client reads it before the next
// one exists.
func TestAStreamFlushesEachEventThatArrivesAlone(t *testing.T) {
	f := newAPIFixture(t, 0, nil)
	w := f.run(t, 1, 10, false)
	sc := sse.NewScanner(replay(t, f.handler))
	for i := 1; i <= 3; i++ {
		if !sc.Next() || sc.Event().ID != string(rune('0'+i)) {
			t.Fatalf("event %d: %+v, %v", i, sc.Event(), sc.Err())
		}
		if i < 3 {
			appendEvent(t, w, i, 10)
		}
	}
	if err := w.Finish(store.StateFinished, nil); err != nil {
		t.Fatal(err)
	}
	if sc.Next() {
		t.Fatalf("an event after the end: %+v", sc.Event())
	}
}
