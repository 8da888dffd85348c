package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/engine"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// TurnState is the answer of GET …/turns/{runId}.
type TurnState struct {
	RunID      string     `json:"runId"`
	Session    string     `json:"session"`
	State      string     `json:"state"`
	StartedAt  time.Time  `json:"startedAt"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
	// LastEventID is the id of the run's last event.
	LastEventID int64 `json:"lastEventId"`
	// Result is the `result` payload of a finished run.
	Result json.RawMessage `json:"result,omitempty"`
	// Error is the `error` payload of a failed run.
	Error json.RawMessage `json:"error,omitempty"`
	// Requester is who started the run (the authenticated caller of its
	// first request); omitted for runs journaled without one.
	Requester *store.Requester `json:"requester,omitempty"`
}

func (h *Handler) lookupRun(w http.ResponseWriter, r *http.Request) (store.Run, bool) {
	ns, name, runID := r.PathValue("namespace"), r.PathValue("name"), r.PathValue("runId")
	session, ok := h.sessionKey(w, r)
	if !ok {
		return nil, false
	}
	run, err := h.store.FindRun(session, runID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			err = wire.Errorf(wire.CodeRunNotFound, "", "run %q of AgentSession %s/%s is not in the journal", runID, ns, name)
		}
		h.writeError(w, err, h.retryAfter)
		return nil, false
	}
	return run, true
}

func (h *Handler) getTurn(w http.ResponseWriter, r *http.Request) {
	if _, ok := h.authorize(w, r, attrs(r, VerbGet)); !ok {
		return
	}
	run, ok := h.lookupRun(w, r)
	if !ok {
		return
	}
	info := run.Info()
	st := TurnState{RunID: info.RunID, Session: info.Session, State: string(info.State), StartedAt: info.StartedAt, LastEventID: info.LastSeq}
	if by := info.Requester; by.User != "" || by.UID != "" {
		st.Requester = &by
	}
	if !info.FinishedAt.IsZero() {
		t := info.FinishedAt
		st.FinishedAt = &t
	}
	switch info.State {
	case store.StateFinished:
		st.Result = info.Result
	case store.StateFailed:
		st.Error = info.Result
		if len(st.Error) == 0 {
			st.Error, _ = json.Marshal(wire.OutcomeUnknown(info.Reason))
		}
	}
	writeJSON(w, http.StatusOK, st)
}

// transcript streams the session's transcript from the store to the client,
// in chunks, each write bounded by h.writeWait. The status and headers go
// out with the first bytes: an error before them is answered as JSON; one
// after them can only end the response, which is then cut without its
// proper end (the client sees an unexpected EOF, never a shorter transcript
// that looks complete).
func (h *Handler) transcript(w http.ResponseWriter, r *http.Request) {
	if _, ok := h.authorize(w, r, attrs(r, VerbGet)); !ok {
		return
	}
	s, ok := h.session(w, r)
	if !ok {
		return
	}
	body := &lazyBody{w: w, out: h.deadlineWriter(w)}
	_, err := h.store.ReadTranscript(engine.SessionKey(s), body)
	switch {
	case err != nil && !body.started:
		h.writeError(w, err, h.retryAfter)
	case err != nil:
		h.log.V(1).Info("transcript cut short", "session", engine.SessionKey(s), "error", err.Error())
		panic(http.ErrAbortHandler)
	case !body.started: // an empty transcript
		body.start()
	}
}
