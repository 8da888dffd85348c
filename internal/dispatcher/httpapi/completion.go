package httpapi

import (
	"net/http"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// Isolated completion (POST …/completions) and settled-turn finalization
// (POST …/turns/{runId}/finalize): one JSON answer, never a stream — the
// call has no events a gateway could follow or reconnect to, and nothing
// of it is journaled. Both need the same grant as a turn (create on
// agentsessions/turns): they run inference on the session's harness.

func (h *Handler) completion(w http.ResponseWriter, r *http.Request) { h.complete(w, r, "") }

func (h *Handler) finalize(w http.ResponseWriter, r *http.Request) {
	h.complete(w, r, r.PathValue("runId"))
}

// complete runs an isolated completion, or the finalization of run runID.
func (h *Handler) complete(w http.ResponseWriter, r *http.Request, runID string) {
	caller, ok := h.authorize(w, r, attrs(r, VerbCreate))
	if !ok {
		return
	}
	req := &wire.CompletionRequest{}
	if err := wire.DecodeStrict(http.MaxBytesReader(w, r.Body, h.maxBody), req); err != nil {
		h.writeError(w, err, h.retryAfter)
		return
	}
	res, d, err := h.eng.Complete(r.Context(), r.PathValue("namespace"), r.PathValue("name"), runID, req, caller.requester())
	if err != nil {
		h.writeError(w, err, h.retryAfter)
		return
	}
	d.Error = h.redacted(d.Error)
	writeJSON(w, http.StatusOK, wire.CompletionResponse{Decision: *d, Result: res})
}
