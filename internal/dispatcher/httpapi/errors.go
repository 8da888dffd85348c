package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/engine"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// toAPIError maps the errors of the engine, the journal, the decoders and
// the body limit to their answers.
func toAPIError(err error) *wire.Error {
	var (
		we  *wire.Error
		fe  *wire.FieldError
		mbe *http.MaxBytesError
		pe  *store.RunPrunedError
		le  *store.RetentionLimitError
	)
	switch {
	case errors.As(err, &we):
		return we
	case errors.As(err, &mbe):
		return wire.Errorf(wire.CodeRequestTooLarge, "", "the request body is larger than %d bytes", mbe.Limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The server's request read deadline (cmd/dispatcher --read-timeout).
		return wire.Errorf(wire.CodeBadRequest, "", "the request body did not arrive in time")
	case errors.As(err, &fe):
		return wire.Errorf(wire.CodeBadRequest, "", "invalid request body: %v", fe)
	case errors.Is(err, engine.ErrSessionNotFound):
		return wire.Errorf(wire.CodeSessionNotFound, "", "%v", err)
	case errors.As(err, &pe):
		return wire.Errorf(wire.CodeRunPayloadPruned, "", "%v", pe)
	case errors.As(err, &le):
		return wire.Errorf(wire.CodeRetentionLimitReached, "", "%v", le)
	case errors.Is(err, store.ErrNotFound):
		return wire.Errorf(wire.CodeRunNotFound, "", "%v", err)
	case store.OutOfSpace(err):
		// A turn refused here was not started; a runId is never run twice,
		// so the same request may come again.
		return wire.Errorf(wire.CodeStoreUnavailable, "", "the dispatcher's store has no space left for this request; retry the same request later (%v)", err)
	case errors.Is(err, store.ErrInvalidSession), errors.Is(err, store.ErrInvalidRunID):
		return wire.Errorf(wire.CodeBadRequest, "", "%v", err)
	case errors.Is(err, engine.ErrNoPendingToolCall):
		return wire.Errorf(wire.CodeNoPendingToolCall, "", "%v", err)
	case errors.Is(err, engine.ErrNoPendingRequest):
		return wire.Errorf(wire.CodeNoPendingRequest, "", "%v", err)
	case errors.Is(err, engine.ErrRequestAlreadyResolved):
		return wire.Errorf(wire.CodeRequestAlreadyResolved, "", "%v", err)
	default:
		return wire.Errorf(wire.CodeInternalError, "", "%v", err)
	}
}

// writeError answers err as JSON; a 503 and a RateLimited get Retry-After
// (retryAfter), and so does a RetentionLimitReached whose wait is known. A
// server-side error goes out redacted (wire.Error.Redacted: no addresses or
// paths); the log keeps what was taken out.
func (h *Handler) writeError(w http.ResponseWriter, err error, retryAfter time.Duration) {
	ae := h.redacted(toAPIError(err))
	status := ae.HTTPStatus()
	var le *store.RetentionLimitError
	switch {
	case status == http.StatusServiceUnavailable, ae.Code == wire.CodeRateLimited:
		w.Header().Set("Retry-After", retryAfterSeconds(retryAfter))
	case errors.As(err, &le) && le.RetryAfter > 0:
		w.Header().Set("Retry-After", retryAfterSeconds(le.RetryAfter))
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="harness-dispatcher"`)
	}
	writeJSON(w, status, ae)
}

// redacted is ae as a gateway may see it (wire.Error.Redacted), logging the
// original when that took something out.
func (h *Handler) redacted(ae *wire.Error) *wire.Error {
	out := ae.Redacted()
	if out != ae {
		h.log.Info("error details withheld from the client", "code", ae.Code, "error", ae.Message)
	}
	return out
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
