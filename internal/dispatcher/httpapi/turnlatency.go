package httpapi

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// turnAddedSeconds is what the HTTP layer adds to a new turn's path to its
// result, measured on the turn itself: the request's handling before the
// engine starts the turn (authentication, the body's decoding), the
// stream's headers after the engine returned, and the `result` event's way
// from its append to the store (its recorded time) to its flush to the
// connection. The engine's own time (Start, the run) is not in it, so a
// benchmark reads each turn's added latency here rather than as the
// difference of two unpaired distributions.
var turnAddedSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name:    "harness_dispatcher_http_turn_added_seconds",
	Help:    "Time the HTTP layer added to a new turn's path to its result event: request handling before the engine, the stream's headers, and writing the result event.",
	Buckets: turnBuckets,
})

// turnWindowSeconds splits turnAddedSeconds by window, observed for the
// same turns at the same time: "request" (before the engine starts the
// turn), "headers" (from the engine's return to the stream's first event)
// and "result" (the result event's way to the wire). A tail is then placed
// in one of them.
var turnWindowSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "harness_dispatcher_http_turn_window_seconds",
	Help:    "The HTTP layer's time on a new turn's path to its result event, by window: request (before the engine), headers, result (writing the result event).",
	Buckets: turnBuckets,
}, []string{"window"})

// turnBuckets resolve 50 µs up to 0.5 ms and 100 µs up to 1 ms.
var turnBuckets = []float64{
	0.000025, 0.00005, 0.0001, 0.00015, 0.0002, 0.00025, 0.0003, 0.00035, 0.0004, 0.00045, 0.0005,
	0.0006, 0.0007, 0.0008, 0.0009, 0.001, 0.00125, 0.0015, 0.00175, 0.002, 0.0025, 0.003, 0.004,
	0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
}

func init() { metrics.Registry.MustRegister(turnAddedSeconds, turnWindowSeconds) }

// The windows of turnWindowSeconds, in the order a turn passes them.
var turnWindows = [...]string{"request", "headers", "result"}

// turnClock adds up the HTTP layer's time on one new turn's path to its
// result; nil on reconnects, which run nothing.
type turnClock struct {
	added    time.Duration
	since    time.Time // zero while the clock is paused
	resultAt time.Time // the result event's append, once it was written
	// windows holds each window's time; paused counts the windows closed.
	windows [len(turnWindows)]time.Duration
	paused  int
}

func startTurnClock() *turnClock { return &turnClock{since: time.Now()} }

// pause stops counting: the engine works, or the stream waits for its
// events. It closes the request window, then the headers window.
func (c *turnClock) pause() {
	if c == nil || c.since.IsZero() {
		return
	}
	d := time.Since(c.since)
	c.added += d
	c.windows[min(c.paused, 1)] += d
	c.paused++
	c.since = time.Time{}
}

// resume counts again.
func (c *turnClock) resume() {
	if c != nil && c.since.IsZero() {
		c.since = time.Now()
	}
}

// wroteResult notes the result event's append time (the store's clock) when
// the stream wrote it.
func (c *turnClock) wroteResult(appended time.Time) {
	if c != nil {
		c.resultAt = appended
	}
}

// flushed is called after each flush of the stream: the one that carried
// the result event completes the turn's figure.
func (c *turnClock) flushed() {
	if c == nil || c.resultAt.IsZero() {
		return
	}
	// At is wall-clock time: a clock step could make it negative.
	d := max(time.Since(c.resultAt), 0)
	c.added += d
	c.windows[2] += d
	c.resultAt = time.Time{}
	turnAddedSeconds.Observe(c.added.Seconds())
	for i, w := range turnWindows {
		turnWindowSeconds.WithLabelValues(w).Observe(c.windows[i].Seconds())
	}
}
