package httpapi

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/engine"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

func (h *Handler) decodeTurn(w http.ResponseWriter, r *http.Request) (*wire.TurnRequest, bool) {
	req, err := wire.DecodeTurnRequest(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		h.writeError(w, err, h.retryAfter)
		return nil, false
	}
	return req, true
}

func (h *Handler) decide(w http.ResponseWriter, r *http.Request) {
	if _, _, ok := h.authorizeRun(w, r); !ok {
		return
	}
	req, ok := h.decodeTurn(w, r)
	if !ok {
		return
	}
	d, err := h.eng.Decide(r.Context(), r.PathValue("namespace"), r.PathValue("name"), req)
	if err != nil {
		h.writeError(w, err, h.retryAfter)
		return
	}
	d.Error = h.redacted(d.Error)
	writeJSON(w, http.StatusOK, d)
}

// turn runs (or resumes) a turn and streams its journaled events.
func (h *Handler) turn(w http.ResponseWriter, r *http.Request) {
	clock := startTurnClock()
	caller, delegate, ok := h.authorizeRun(w, r)
	if !ok {
		return
	}
	req, ok := h.decodeTurn(w, r)
	if !ok {
		return
	}
	if delegate {
		if err := delegateRefusal(req); err != nil {
			h.writeError(w, err, h.retryAfter)
			return
		}
	}
	afterSeq, reconnect, ok := h.lastEventID(w, r, req)
	if !ok {
		return
	}
	var run store.Run
	var err error
	if reconnect {
		// A reconnect never runs a turn: the run must be journaled.
		session, ok := h.sessionKey(w, r)
		if !ok {
			return
		}
		run, err = h.reconnect(r, session, req)
		if err == nil && delegate {
			err = engine.DelegateMayFollow(run, caller.requester())
		}
		clock = nil // a reconnect runs nothing: no turn's figure
	} else if delegate {
		clock.pause()
		run, err = h.eng.StartDelegated(r.Context(), r.PathValue("namespace"), r.PathValue("name"), req, caller.requester())
		clock.resume()
	} else {
		// Start returns once the run is journaled (or refused); the turn
		// runs on the engine's context, not this request's: the client may
		// leave and reconnect. While it waits for the session it is
		// dropped with this request: nothing ran, its runId stays free.
		clock.pause()
		run, err = h.eng.Start(r.Context(), r.PathValue("namespace"), r.PathValue("name"), req, caller.requester())
		clock.resume()
	}
	if err != nil {
		h.writeError(w, err, h.retryAfter)
		return
	}
	h.stream(w, r, run, afterSeq, clock)
}

// lastEventID reads a reconnect's Last-Event-ID; a reconnect must name the
// turn's runId.
func (h *Handler) lastEventID(w http.ResponseWriter, r *http.Request, req *wire.TurnRequest) (afterSeq int64, reconnect, ok bool) {
	v := strings.TrimSpace(r.Header.Get("Last-Event-ID"))
	if v == "" {
		return 0, false, true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		h.writeError(w, wire.Errorf(wire.CodeBadRequest, "", "Last-Event-ID must be an event id of this API (a non-negative integer)"), h.retryAfter)
		return 0, false, false
	}
	if req.RunID == "" {
		h.writeError(w, wire.Errorf(wire.CodeBadRequest, "", "a reconnect with Last-Event-ID must repeat the turn's runId in the body"), h.retryAfter)
		return 0, false, false
	}
	return n, true, true
}

// reconnect is the journaled run a reconnect follows again.
func (h *Handler) reconnect(r *http.Request, session string, req *wire.TurnRequest) (store.Run, error) {
	digest, err := req.Digest()
	if err != nil {
		return nil, err
	}
	run, err := h.ownRun(session, req.RunID, digest)
	if errors.Is(err, store.ErrNotFound) {
		return nil, wire.Errorf(wire.CodeRunNotFound, "",
			"run %q of AgentSession %s/%s is not in the journal; a reconnect does not run a turn again", req.RunID, r.PathValue("namespace"), r.PathValue("name"))
	}
	return run, err
}

// ownRun is the journaled run runID of session if it was begun for a request
// with this digest; store.ErrNotFound when there is none; a RunIdConflict
// when another body owns runID (its stream and turn token belong to that
// other request).
func (h *Handler) ownRun(session, runID string, digest [32]byte) (store.Run, error) {
	run, err := h.store.FindRun(session, runID)
	if err != nil {
		return nil, err
	}
	if run.Info().Digest != digest {
		return nil, wire.RunIDConflict(session, runID)
	}
	return run, nil
}
