package wire

import "fmt"

// Scope says how far a fallback chain may go after an error.
type Scope string

// ScopeHarness marks an error local to the selected harness: the gateway's
// fallback chain skips only candidates of the same harness. An error without
// scope ends the whole chain.
const ScopeHarness Scope = "harness"

// ScopeNone is an error without scope: it ends the whole fallback chain. The
// field is always present, so a client sees "" and "harness".
const ScopeNone Scope = ""

// Error is the error shape (docs/dispatcher-api.md, "Errors"): the body of
// every error answer of the dispatcher API, the payload of the `error` event, a
// decision's (or route's) fail-closed error, and the typed error selection, the
// adapters and the engine return.
type Error struct {
	// Code is a turn's error code or one of the API's own codes.
	Code ErrorCode `json:"code"`
	// Message says what went wrong, for a human.
	Message string `json:"message"`
	// Scope is `harness` where a fallback chain may try another harness.
	Scope Scope `json:"scope"`
	// Retryable says whether the same request may succeed later.
	Retryable bool `json:"retryable"`
	// ReplaySafe is set once a runtime was touched: false when the turn may
	// have run (it must never be sent to another runtime or server).
	ReplaySafe *bool `json:"replaySafe,omitempty"`
}

// Errorf builds an Error whose retryability comes from the code table.
func Errorf(code ErrorCode, scope Scope, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Scope: scope, Retryable: code.Retryable()}
}

// Error implements error.
func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// HTTPStatus is the status the dispatcher answers the error with (the code
// table's; 500 for an unknown code).
func (e *Error) HTTPStatus() int { return e.Code.HTTPStatus() }

// Touched records that a runtime was touched: replaySafe says whether the
// gateway may still replay the turn elsewhere. It returns e.
func (e *Error) Touched(replaySafe bool) *Error {
	e.ReplaySafe = &replaySafe
	return e
}

// RunIDConflict is the error of a runId reused for another request body in
// session.
func RunIDConflict(session, runID string) *Error {
	return Errorf(CodeRunIDConflict, "", "runId %q of AgentSession %s was used for a different request", runID, session)
}

// OutcomeUnknown is the error of a run that ended without a result or error
// of its own: the dispatcher running it stopped (reason says how). The turn
// may have run; it must not be replayed elsewhere.
func OutcomeUnknown(reason string) *Error {
	return Errorf(CodeHarnessUnavailable, "", "the turn's outcome is unknown: %s", reason).Touched(false)
}
