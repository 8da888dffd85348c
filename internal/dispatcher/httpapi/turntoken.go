package httpapi

import (
	"crypto/rand"
	"fmt"
	"net/http"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/turntoken"
)

// processTurnTokens is a random key of this process alone: the default
// without Config.TurnTokens.
func processTurnTokens() (*turntoken.Key, error) {
	key := make([]byte, turntoken.KeyBytes)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("httpapi: turn token key: %w", err)
	}
	return turntoken.New(key)
}

// TurnToken is the turn token of a run (what the `selected` event carries):
// bound to the session's UID (session is engine.SessionKey), so it is
// worthless for a session created later under the same name.
func (h *Handler) TurnToken(session, runID string) string { return h.tokens.Sign(session, runID) }

func (h *Handler) checkTurnToken(w http.ResponseWriter, r *http.Request, session, runID string) bool {
	got := r.Header.Get(wire.TurnTokenHeader)
	if !h.tokens.Verify(session, runID, got) {
		msg := "the " + wire.TurnTokenHeader + " header is missing"
		if got != "" {
			msg = "the " + wire.TurnTokenHeader + " header does not match this turn"
		}
		h.writeError(w, wire.Errorf(wire.CodeTurnTokenInvalid, "",
			"%s: present the turnToken of the turn's `selected` event", msg), h.retryAfter)
		return false
	}
	return true
}
