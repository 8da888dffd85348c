package appserver

import (
	"runtime/debug"
	"sync"
	"time"
)

// Defaults of the Options that bound what a misbehaving app-server can make
// the client hold (see the package doc).
const (
	// DefaultMaxMessageBytes bounds one incoming message. Codex's own
	// WebSocket frames are at most 16 MiB; the adapter resumes threads with
	// excludeTurns, so no answer it asks for carries a whole history.
	DefaultMaxMessageBytes = 16 << 20
	// DefaultMaxUnreadEvents is above what one Codex command may stream
	// (10,000 output deltas), so a consumer that pauses briefly never
	// trips it.
	DefaultMaxUnreadEvents = 65536
	// DefaultMaxUnreadBytes bounds the raw params buffered for one turn.
	DefaultMaxUnreadBytes = 64 << 20
	// DefaultMaxServerRequests bounds the server requests handled at once
	// per connection: one goroutine and one request's params each.
	DefaultMaxServerRequests = 256
)

// logInterval is how often a repeated drop or refusal is logged at most.
const logInterval = time.Minute

// Stats counts what the client dropped or refused from the app-server on
// one connection.
type Stats struct {
	// UnknownThreadNotifications counts turn notifications (and records of
	// server requests) for threads this client has not opened, dropped.
	UnknownThreadNotifications uint64
	// RefusedServerRequests counts server requests answered with an error
	// because MaxServerRequests were being handled.
	RefusedServerRequests uint64
	// ServerRequests is the number of server requests being handled now.
	ServerRequests int
}

// Stats returns the connection's counters.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	serving := c.serving
	c.mu.Unlock()
	return Stats{
		UnknownThreadNotifications: c.unknownDropped.Load(),
		RefusedServerRequests:      c.refused.Load(),
		ServerRequests:             serving,
	}
}

// logEvery lets one log record through per interval and counts the others,
// so that a flood from the app-server cannot flood the log.
type logEvery struct {
	mu      sync.Mutex
	next    time.Time
	skipped int
}

// allow reports whether to log now and how many records were skipped since
// the last one that was.
func (l *logEvery) allow(now time.Time) (ok bool, skipped int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Before(l.next) {
		l.skipped++
		return false, 0
	}
	skipped, l.skipped = l.skipped, 0
	l.next = now.Add(logInterval)
	return true, skipped
}

// recovered turns the value of recover() into a *PanicError carrying the
// panicking goroutine's stack; nil when there was no panic. It must be
// called in the deferred function itself (recover works only there).
func recovered(where string, r any) *PanicError {
	if r == nil {
		return nil
	}
	return &PanicError{Where: where, Value: r, Stack: debug.Stack()}
}

// logPanic records a recovered panic with its stack.
func (c *Client) logPanic(pe *PanicError) {
	c.log.Error(pe, "recovered a panic in the app-server client", "where", pe.Where, "stack", string(pe.Stack))
}
