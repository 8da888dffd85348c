package dispatch

import (
	"fmt"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/adapter"
	"github.com/openclaw/harness-operator/internal/selection"
)

// TurnError is a failed turn: the error of DESIGN.md §7 and, once a runtime
// was touched, whether the gateway may replay the turn elsewhere. It is the
// payload of the `error` event.
type TurnError struct {
	Code      selection.ErrorCode `json:"code"`
	Message   string              `json:"message"`
	Scope     selection.Scope     `json:"scope"`
	Retryable bool                `json:"retryable"`
	// ReplaySafe is set once a runtime was touched: false when the turn may
	// have run (it must never be sent to another runtime or server).
	ReplaySafe *bool `json:"replaySafe,omitempty"`
	// Decision is the selection decision of a turn refused after selection
	// (Start); it is streamed as the `selected` event, not in the error.
	Decision *selection.Decision `json:"-"`
}

// Error implements error.
func (e *TurnError) Error() string { return string(e.Code) + ": " + e.Message }

// HTTPStatus is the status the dispatcher answers the error with.
func (e *TurnError) HTTPStatus() int { return e.Code.HTTPStatus() }

func turnError(se *selection.Error) *TurnError {
	return &TurnError{Code: se.Code, Message: se.Message, Scope: se.Scope, Retryable: se.Retryable}
}

func newTurnError(code selection.ErrorCode, scope selection.Scope, format string, args ...any) *TurnError {
	return &TurnError{Code: code, Message: fmt.Sprintf(format, args...), Scope: scope, Retryable: code.Retryable()}
}

// RunIDConflict is the error of a runId reused for another request body in
// session.
func RunIDConflict(session, runID string) *TurnError {
	return newTurnError(selection.CodeRunIDConflict, "", "runId %q of AgentSession %s was used for a different request", runID, session)
}

// OutcomeUnknown is the error of a run that ended without a result or error
// of its own: the dispatcher running it stopped (reason says how). The turn
// may have run; it must not be replayed elsewhere.
func OutcomeUnknown(reason string) *TurnError {
	return newTurnError(selection.CodeHarnessUnavailable, "", "the turn's outcome is unknown: %s", reason).touched(false)
}

func (e *TurnError) touched(replaySafe bool) *TurnError {
	e.ReplaySafe = &replaySafe
	return e
}

// ResultEvent is the payload of the `result` event.
type ResultEvent struct {
	// RunID is the turn's runId.
	RunID string `json:"runId"`
	adapter.TurnResult
	// AgentHarnessID is the harness that ran the turn.
	AgentHarnessID string `json:"agentHarnessId"`
	// RuntimeArtifact is the attested artifact of the server, when the
	// request asked for it (captureRuntimeArtifact) and the server is attested.
	RuntimeArtifact *v1alpha1.RuntimeArtifact `json:"runtimeArtifact,omitempty"`
}
