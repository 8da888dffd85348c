package dispatchapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/openclaw/harness-operator/internal/dispatch"
	"github.com/openclaw/harness-operator/internal/journal"
	"github.com/openclaw/harness-operator/internal/selection"
)

// Codes of the API's own errors (the DESIGN.md §7 codes are
// selection.ErrorCode values and keep their statuses).
const (
	CodeBadRequest        = "BadRequest"
	CodeUnauthorized      = "Unauthorized"
	CodeForbidden         = "Forbidden"
	CodeTurnTokenInvalid  = "TurnTokenInvalid"
	CodeSessionNotFound   = "SessionNotFound"
	CodeRunNotFound       = "RunNotFound"
	CodeNotFound          = "NotFound"
	CodeMethodNotAllowed  = "MethodNotAllowed"
	CodeNoPendingToolCall = "NoPendingToolCall"
	CodeTurnNotRunning    = "TurnNotRunning"
	CodeRequestTooLarge   = "RequestTooLarge"
	CodeInternalError     = "InternalError"
	CodeAuthUnavailable   = "AuthUnavailable"
)

// Error is the JSON body of every error answer (and the payload of a
// stream's `error` event, dispatch.TurnError, which has the same shape).
type Error struct {
	// Code is a DESIGN.md §7 code or one of the API's own codes.
	Code string `json:"code"`
	// Message says what went wrong, for a human.
	Message string `json:"message"`
	// Scope is `harness` where a fallback chain may try another harness.
	Scope string `json:"scope"`
	// Retryable says whether the same request may succeed later.
	Retryable bool `json:"retryable"`
	// ReplaySafe is set once a runtime was touched.
	ReplaySafe *bool `json:"replaySafe,omitempty"`

	status int
}

// Error implements error.
func (e *Error) Error() string { return e.Code + ": " + e.Message }

// HTTPStatus is the status the error is answered with.
func (e *Error) HTTPStatus() int { return e.status }

func apiError(status int, code, message string) *Error {
	return &Error{Code: code, Message: message, status: status, Retryable: status == http.StatusServiceUnavailable}
}

// toAPIError maps the errors of the engine, the journal, the decoders and
// the body limit to their answers.
func toAPIError(err error) *Error {
	var (
		ae  *Error
		te  *dispatch.TurnError
		se  *selection.Error
		fe  *selection.FieldError
		mbe *http.MaxBytesError
		pe  *journal.RunPrunedError
		le  *journal.RetentionLimitError
	)
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &te):
		return &Error{Code: string(te.Code), Message: te.Message, Scope: string(te.Scope), Retryable: te.Retryable,
			ReplaySafe: te.ReplaySafe, status: te.HTTPStatus()}
	case errors.As(err, &se):
		return &Error{Code: string(se.Code), Message: se.Message, Scope: string(se.Scope), Retryable: se.Retryable,
			status: se.Code.HTTPStatus()}
	case errors.As(err, &mbe):
		return apiError(http.StatusRequestEntityTooLarge, CodeRequestTooLarge,
			"the request body is larger than "+strconv.FormatInt(mbe.Limit, 10)+" bytes")
	case errors.As(err, &fe):
		return apiError(http.StatusBadRequest, CodeBadRequest, "invalid request body: "+fe.Error())
	case errors.Is(err, dispatch.ErrSessionNotFound):
		return apiError(http.StatusNotFound, CodeSessionNotFound, err.Error())
	case errors.As(err, &pe):
		return codeError(selection.CodeRunPayloadPruned, pe)
	case errors.As(err, &le):
		return codeError(selection.CodeRetentionLimitReached, le)
	case errors.Is(err, journal.ErrNotFound):
		return apiError(http.StatusNotFound, CodeRunNotFound, err.Error())
	case errors.Is(err, journal.ErrInvalidSession), errors.Is(err, journal.ErrInvalidRunID):
		return apiError(http.StatusBadRequest, CodeBadRequest, err.Error())
	case errors.Is(err, dispatch.ErrNoPendingToolCall):
		return apiError(http.StatusConflict, CodeNoPendingToolCall, err.Error())
	default:
		return apiError(http.StatusInternalServerError, CodeInternalError, err.Error())
	}
}

// codeError answers a journal refusal with its DESIGN.md §7 code.
func codeError(code selection.ErrorCode, err error) *Error {
	return &Error{Code: string(code), Message: err.Error(), Retryable: code.Retryable(), status: code.HTTPStatus()}
}

// writeError answers err as JSON; a 503 gets Retry-After, and so does a
// RetentionLimitReached whose wait is known.
func writeError(w http.ResponseWriter, err error, retryAfter time.Duration) {
	ae := toAPIError(err)
	status := ae.status
	if status == 0 {
		status = http.StatusInternalServerError
	}
	var le *journal.RetentionLimitError
	switch {
	case status == http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", retryAfterSeconds(retryAfter))
	case errors.As(err, &le) && le.RetryAfter > 0:
		w.Header().Set("Retry-After", retryAfterSeconds(le.RetryAfter))
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="harness-dispatcher"`)
	}
	writeJSON(w, status, ae)
}

func retryAfterSeconds(d time.Duration) string {
	return strconv.Itoa(max(1, int(d.Round(time.Second)/time.Second)))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"code":"InternalError","message":"encode the answer","scope":"","retryable":false}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
