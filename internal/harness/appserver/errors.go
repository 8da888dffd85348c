package appserver

import (
	"errors"
	"fmt"
	"strings"
)

// ErrClosed is the cause of a ConnectionLostError when the client itself was
// closed.
var ErrClosed = errors.New("client closed")

// ErrTurnDone is returned by Turn.Next after the turn/completed event.
var ErrTurnDone = errors.New("appserver: turn completed")

// ErrUnauthorized matches (errors.Is) a WebSocket handshake the server
// refused with 401: a missing or wrong token.
var ErrUnauthorized = errors.New("unauthorized")

// RPCError is a JSON-RPC error response from the server.
type RPCError struct {
	Method  string
	Code    int
	Message string
	Data    []byte
}

// Error implements error.
func (e *RPCError) Error() string {
	return fmt.Sprintf("appserver: %s: server error %d: %s", e.Method, e.Code, e.Message)
}

// ConnectionLostError reports that the connection to the app-server ended
// while a request or a turn was in flight. AfterTurnStarted tells the caller
// whether the runtime may have had side effects: true when a turn was
// running, or a turn/start request had been sent without an answer. Such a
// turn must never be replayed on another runtime or replica
// (docs/design/contract-rules.md, rule 5); Codex keeps running it, and a new
// connection can reattach with thread/resume.
type ConnectionLostError struct {
	// Method is the request in flight, or empty for a turn's event stream.
	Method string
	// ThreadID and TurnID identify the turn, when known.
	ThreadID, TurnID string
	// AfterTurnStarted: side effects may have happened.
	AfterTurnStarted bool
	// Err is the cause (ErrClosed when the client was closed locally).
	Err error
}

// Error implements error.
func (e *ConnectionLostError) Error() string {
	var b strings.Builder
	b.WriteString("appserver: connection to the app-server lost")
	if e.Method != "" {
		fmt.Fprintf(&b, " during %s", e.Method)
	}
	if e.TurnID != "" {
		fmt.Fprintf(&b, " (thread %s, turn %s)", e.ThreadID, e.TurnID)
	} else if e.ThreadID != "" {
		fmt.Fprintf(&b, " (thread %s)", e.ThreadID)
	}
	if e.AfterTurnStarted {
		b.WriteString("; the turn may have started and had side effects: do not replay it")
	} else {
		b.WriteString("; no turn was started")
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *ConnectionLostError) Unwrap() error { return e.Err }

// MayHaveSideEffects reports whether err says a turn may have run (or be
// running) with side effects despite the error: a ConnectionLostError with
// AfterTurnStarted, a turn/start whose answer did not arrive in time, or a
// TurnStreamError.
func MayHaveSideEffects(err error) bool {
	var cl *ConnectionLostError
	if errors.As(err, &cl) {
		return cl.AfterTurnStarted
	}
	var te *TimeoutError
	if errors.As(err, &te) {
		return te.AfterTurnStarted
	}
	var se *TurnStreamError
	return errors.As(err, &se)
}

// TimeoutError reports a request whose answer did not arrive before its
// context ended. The request was sent; for turn/start the turn may have
// started (AfterTurnStarted).
type TimeoutError struct {
	Method           string
	AfterTurnStarted bool
	Err              error
}

// Error implements error.
func (e *TimeoutError) Error() string {
	s := fmt.Sprintf("appserver: %s: no answer: %v", e.Method, e.Err)
	if e.AfterTurnStarted {
		s += " (the turn may have started)"
	}
	return s
}

// Unwrap returns the cause.
func (e *TimeoutError) Unwrap() error { return e.Err }

// HandshakeError is a WebSocket upgrade the server refused with an HTTP
// status. It carries only the status: the server's body is never copied
// into an error, which may reach conditions, Events and gateways.
type HandshakeError struct {
	StatusCode int
}

// Error implements error.
func (e *HandshakeError) Error() string {
	return fmt.Sprintf("websocket upgrade refused: HTTP %d", e.StatusCode)
}

// Is makes errors.Is(err, ErrUnauthorized) true for a 401.
func (e *HandshakeError) Is(target error) bool {
	return target == ErrUnauthorized && e.StatusCode == 401
}

// MessageTooLargeError reports a message from the app-server over the
// connection's read limit (Options.MaxMessageBytes). The client closed the
// connection; this is the cause (Err) of the ConnectionLostErrors that
// follow.
type MessageTooLargeError struct {
	// Limit is the read limit in bytes.
	Limit int64
	// Size is how much of the message had arrived when reading stopped:
	// the message was at least this large.
	Size int64
}

// Error implements error.
func (e *MessageTooLargeError) Error() string {
	return fmt.Sprintf("appserver: the app-server sent a message of at least %d bytes, over the read limit of %d bytes "+
		"(Options.MaxMessageBytes); the connection was closed", e.Size, e.Limit)
}

// TurnStreamError reports that the client stopped delivering a turn's
// events: the app-server sent more than its consumer had read
// (Options.MaxUnreadEvents, MaxUnreadBytes), or a handler of one of the
// turn's server requests panicked (Err is then a *PanicError). The
// connection and other turns are unaffected. The client sent turn/interrupt
// for the turn, but it may have run and had side effects: do not replay it.
type TurnStreamError struct {
	ThreadID, TurnID string
	// Err is the reason.
	Err error
}

// Error implements error.
func (e *TurnStreamError) Error() string {
	return fmt.Sprintf("appserver: turn %s of thread %s is no longer delivered (it was interrupted): %v", e.TurnID, e.ThreadID, e.Err)
}

// Unwrap returns the reason.
func (e *TurnStreamError) Unwrap() error { return e.Err }

// PanicError is a panic the client recovered: in one of its goroutines, a
// caller's Handlers function or Transport.
type PanicError struct {
	// Where names the goroutine or handler that panicked.
	Where string
	// Value is the value passed to panic.
	Value any
	// Stack is the panicking goroutine's stack (it is logged, not printed
	// by Error).
	Stack []byte
}

// Error implements error.
func (e *PanicError) Error() string {
	return fmt.Sprintf("appserver: panic in %s: %v", e.Where, e.Value)
}
