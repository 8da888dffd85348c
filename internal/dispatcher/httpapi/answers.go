package httpapi

import (
	"bytes"
	"io"
	"net/http"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

func (h *Handler) toolResult(w http.ResponseWriter, r *http.Request) {
	if _, _, ok := h.authorizeRun(w, r); !ok {
		return
	}
	runID := r.PathValue("runId")
	session, ok := h.sessionKey(w, r)
	if !ok || !h.checkTurnToken(w, r, session, runID) {
		return
	}
	var body wire.ToolResultRequest
	if err := wire.DecodeStrict(http.MaxBytesReader(w, r.Body, h.maxBody), &body); err != nil {
		h.writeError(w, err, h.retryAfter)
		return
	}
	if body.CallID == "" {
		h.writeError(w, &wire.FieldError{Field: "callId", Message: "must not be empty"}, h.retryAfter)
		return
	}
	if err := body.Validate(); err != nil {
		h.writeError(w, err, h.retryAfter)
		return
	}
	if _, ok := h.lookupRun(w, r); !ok {
		return
	}
	if err := h.eng.SubmitToolResult(session, runID, body.CallID, body.ToolAnswer); err != nil {
		h.writeError(w, err, h.retryAfter)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"runId": runID, "callId": body.CallID, "accepted": true})
}

func (h *Handler) interrupt(w http.ResponseWriter, r *http.Request) {
	if _, _, ok := h.authorizeRun(w, r); !ok {
		return
	}
	ns, name, runID := r.PathValue("namespace"), r.PathValue("name"), r.PathValue("runId")
	session, ok := h.sessionKey(w, r)
	if !ok || !h.checkTurnToken(w, r, session, runID) {
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		h.writeError(w, err, h.retryAfter)
		return
	}
	if len(bytes.TrimSpace(body)) > 0 {
		var empty struct{}
		if err := wire.DecodeStrict(bytes.NewReader(body), &empty); err != nil {
			h.writeError(w, err, h.retryAfter)
			return
		}
	}
	run, ok := h.lookupRun(w, r)
	if !ok {
		return
	}
	if run.Info().State != store.StateRunning || !h.eng.Interrupt(session, runID) {
		h.writeError(w, wire.Errorf(wire.CodeTurnNotRunning, "",
			"run %q of AgentSession %s/%s is not running", runID, ns, name), h.retryAfter)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"runId": runID, "interrupted": true})
}
