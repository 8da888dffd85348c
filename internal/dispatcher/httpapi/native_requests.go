package httpapi

import (
	"net/http"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// Answers to a running turn's native requests (the approval_request and
// user_input_request events), with the turn token like tool-results: 202
// once the answer is accepted — the run's journal then records the
// request_resolved before the runtime hears it —, 404 NoPendingRequest for
// a request the run does not have (never asked, or the turn ended), 409
// RequestAlreadyResolved for a second answer or one after the timeout.

func (h *Handler) approval(w http.ResponseWriter, r *http.Request) {
	var body wire.ApprovalAnswer
	session, runID, ok := h.nativeAnswer(w, r, &body)
	if !ok {
		return
	}
	if err := body.Validate(); err != nil {
		h.writeError(w, err, h.retryAfter)
		return
	}
	if err := h.eng.SubmitApproval(session, runID, body); err != nil {
		h.writeError(w, err, h.retryAfter)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"runId": runID, "requestId": body.RequestID, "accepted": true})
}

func (h *Handler) userInput(w http.ResponseWriter, r *http.Request) {
	var body wire.UserInputAnswer
	session, runID, ok := h.nativeAnswer(w, r, &body)
	if !ok {
		return
	}
	if body.RequestID == "" {
		h.writeError(w, &wire.FieldError{Field: "requestId", Message: "must not be empty"}, h.retryAfter)
		return
	}
	if err := h.eng.SubmitUserInput(session, runID, body); err != nil {
		h.writeError(w, err, h.retryAfter)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"runId": runID, "requestId": body.RequestID, "accepted": true})
}

// nativeAnswer authorizes an answer (create on the session, the turn
// token), decodes its body strictly into v and checks that the run exists.
func (h *Handler) nativeAnswer(w http.ResponseWriter, r *http.Request, v any) (session, runID string, ok bool) {
	if _, _, ok := h.authorizeRun(w, r); !ok {
		return "", "", false
	}
	runID = r.PathValue("runId")
	session, ok = h.sessionKey(w, r)
	if !ok || !h.checkTurnToken(w, r, session, runID) {
		return "", "", false
	}
	if err := wire.DecodeStrict(http.MaxBytesReader(w, r.Body, h.maxBody), v); err != nil {
		h.writeError(w, err, h.retryAfter)
		return "", "", false
	}
	if _, ok := h.lookupRun(w, r); !ok {
		return "", "", false
	}
	return session, runID, true
}
