package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// Answers for a turn another dispatcher runs. Dispatchers sharing one store
// (PostgreSQL) serve any session, so a tool result, an approval, a
// user-input answer or an interrupt may reach a dispatcher whose engine does
// not run the turn. It is then posted to the run's inbox in the store
// (forward), and the engine that runs the turn delivers it as if it had been
// posted there (runningTurn.followInbox). An engine alone on its store
// (Options.SharedStore false) forwards nothing: a turn that does not run
// there does not run at all.
//
// What the dispatcher that forwards cannot check is checked where the turn
// runs: an answer to a call or request the turn never made, or a decision
// the request does not offer, is accepted (202) and then logged and dropped
// by the turn's dispatcher, where a local answer would have been refused.

// forward posts an answer for run runID of session to the run's inbox when
// the turn does not run in this engine; local is the error the engine's own
// attempt gave, returned when the turn runs here or does not run anywhere.
// A second answer to one call or request is refused with already.
func (e *Engine) forward(session, runID string, kind store.InboxKind, key string, answer any, local, already error) error {
	if !e.opts.SharedStore || e.live.running(session, runID) {
		return local
	}
	payload, err := json.Marshal(answer)
	if err != nil {
		return fmt.Errorf("dispatch: encode the %s for run %q: %w", kind, runID, err)
	}
	_, err = e.store.Post(session, runID, store.InboxMessage{Kind: kind, Key: key, Payload: payload})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrAlreadyPosted):
		return fmt.Errorf("%w: %s %q of run %q", already, kind, key, runID)
	case errors.Is(err, store.ErrRunEnded), errors.Is(err, store.ErrNotFound):
		return local
	}
	return fmt.Errorf("dispatch: forward the %s to the dispatcher running run %q: %w", kind, runID, err)
}

// followInbox delivers what other dispatchers posted to the turn's inbox
// until the returned stop is called (the turn ended).
func (t *runningTurn) followInbox() (stop func()) {
	ctx, cancel := context.WithCancel(t.e.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range t.e.store.Inbox(ctx, t.run.Ref(), 0) {
			if err != nil {
				if ctx.Err() == nil && !errors.Is(err, store.ErrClosed) {
					t.e.log.Error(err, "read the turn's inbox: answers posted through other dispatchers are not delivered",
						"session", t.session, "runId", t.req.RunID)
				}
				return
			}
			if err := t.deliver(m); err != nil {
				t.e.log.Info("dropped an answer posted through another dispatcher", "session", t.session,
					"runId", t.req.RunID, "kind", m.Kind, "key", m.Key, "reason", err.Error())
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// deliver hands one inbox message to the turn, as its local answer would be.
func (t *runningTurn) deliver(m store.InboxMessage) error {
	switch m.Kind {
	case store.InboxToolResult:
		var a wire.ToolAnswer
		if err := json.Unmarshal(m.Payload, &a); err != nil {
			return err
		}
		return t.e.live.answerTool(toolKey{t.session, t.req.RunID, m.Key}, a)
	case store.InboxApproval:
		var a wire.ApprovalAnswer
		if err := json.Unmarshal(m.Payload, &a); err != nil {
			return err
		}
		return t.e.approveHere(t.session, t.req.RunID, a)
	case store.InboxUserInput:
		var a wire.UserInputAnswer
		if err := json.Unmarshal(m.Payload, &a); err != nil {
			return err
		}
		return t.e.answerInputHere(t.session, t.req.RunID, a)
	case store.InboxInterrupt:
		t.e.live.interrupt(t.session, func(r *liveRun) bool { return r.runID == t.req.RunID })
		return nil
	}
	return fmt.Errorf("unknown kind %q", m.Kind)
}
