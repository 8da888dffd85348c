package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http/httptest"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/engine"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
)

// addedSamples is how many turns harness_dispatcher_http_turn_added_seconds
// has counted.
func addedSamples(t *testing.T) uint64 {
	t.Helper()
	var m dto.Metric
	if err := turnAddedSeconds.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// TestANewTurnsStreamCountsItsAddedTimeOnceAndAReconnectNever: the stream of
// a new turn adds one sample to the added-latency histogram when its result
// is flushed; a stream without a turn's clock (a reconnect) adds none.
func TestANewTurnsStreamCountsItsAddedTimeOnceAndAReconnectNever(t *testing.T) {
	jrnl, err := journal.Open(t.TempDir(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = jrnl.Close() })
	eng := engine.New(nil, nil, jrnl, engine.Options{})
	t.Cleanup(eng.Close)
	h, err := NewHandler(Config{Engine: eng, Store: jrnl, Sessions: noSessions{}, Authorizer: &countingAuthorizer{}})
	if err != nil {
		t.Fatal(err)
	}
	run, _, err := jrnl.Begin("team-a/0c6f3b0e-7a51-4a4e-9d3b-2f1a9e0c1d2e", "run-1", [32]byte{1})
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{wire.EventPartial, wire.EventResult} {
		if _, err := run.Append(typ, json.RawMessage(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := run.Finish(store.StateFinished, json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("POST", "/", nil)

	before := addedSamples(t)
	h.stream(httptest.NewRecorder(), req, run, 0, startTurnClock())
	if got := addedSamples(t) - before; got != 1 {
		t.Fatalf("a new turn's stream added %d samples, want 1", got)
	}
	h.stream(httptest.NewRecorder(), req, run, 0, nil)
	if got := addedSamples(t) - before; got != 1 {
		t.Fatalf("after a reconnect's stream: %d samples in all, want still 1", got)
	}
}

// noSessions is a client.Reader that knows no AgentSession: the streams
// above read none.
type noSessions struct{}

func (noSessions) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("not used")
}

func (noSessions) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not used")
}

// TestTheWindowsSplitTheAddedTime: a turn's clock observes each window
// once, and the windows add up to the turn's added time (the same turns,
// the same durations), so a tail found in the sum can be placed in one.
func TestTheWindowsSplitTheAddedTime(t *testing.T) {
	sum := func(o interface{ Write(*dto.Metric) error }) (float64, uint64) {
		t.Helper()
		var m dto.Metric
		if err := o.Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetHistogram().GetSampleSum(), m.GetHistogram().GetSampleCount()
	}
	windows := func() (total float64, counts []uint64) {
		for _, w := range turnWindows {
			s, n := sum(turnWindowSeconds.WithLabelValues(w).(interface{ Write(*dto.Metric) error }))
			total += s
			counts = append(counts, n)
		}
		return total, counts
	}
	addedBefore, _ := sum(turnAddedSeconds)
	windowsBefore, countsBefore := windows()

	c := startTurnClock()
	c.pause() // the engine starts the turn
	c.resume()
	c.pause() // the stream waits for its events
	c.wroteResult(time.Now())
	c.flushed()

	addedAfter, _ := sum(turnAddedSeconds)
	windowsAfter, countsAfter := windows()
	for i, w := range turnWindows {
		if got := countsAfter[i] - countsBefore[i]; got != 1 {
			t.Errorf("window %s: %d samples, want 1", w, got)
		}
	}
	added, split := addedAfter-addedBefore, windowsAfter-windowsBefore
	if math.Abs(added-split) > 1e-12 {
		t.Errorf("the windows add up to %gs, the turn's added time is %gs", split, added)
	}
}
