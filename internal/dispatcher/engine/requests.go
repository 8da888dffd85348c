package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// Approval and user-input requests of running turns: registered when the
// adapter emits approval_request or user_input_request (before the journal
// holds it, so no answer can arrive before its waiter), answered by the
// gateway (SubmitApproval, SubmitUserInput), and resolved once: the
// request_resolved the adapter journals before Codex hears the answer.

// ErrNoPendingRequest is returned (wrapped) for an answer to a request the
// run never asked, or whose turn ended.
var ErrNoPendingRequest = errors.New("dispatch: no pending approval or user-input request")

// ErrRequestAlreadyResolved is returned (wrapped) for an answer to a request
// that was answered, timed out or cancelled before it.
var ErrRequestAlreadyResolved = errors.New("dispatch: the request was already resolved")

type requestKey struct{ session, runID, requestID string }

// pendingRequest is one request; liveTurns.mu guards it.
type pendingRequest struct {
	approval *wire.ApprovalRequest  // nil for user input (or an approval resolved unasked)
	input    *wire.UserInputRequest // nil for an approval
	answered chan struct{}          // closed by the accepted answer
	resolved bool                   // answered, or its wait ended
	decision wire.ApprovalDecision
	answers  map[string]wire.UserInputValue
}

// expectRequest registers a request before its client hears of it: one of
// approval and input, or neither to look it up.
func (l *liveTurns) expectRequest(key requestKey, approval *wire.ApprovalRequest, input *wire.UserInputRequest) *pendingRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.requests == nil {
		l.requests = map[requestKey]*pendingRequest{}
	}
	p := l.requests[key]
	if p == nil {
		p = &pendingRequest{approval: approval, input: input, answered: make(chan struct{})}
		l.requests[key] = p
	}
	return p
}

// resolveRequest marks a request resolved (its request_resolved event), so
// a later answer is refused with ErrRequestAlreadyResolved — including a
// request the adapter resolved without asking (approved for the turn).
func (l *liveTurns) resolveRequest(key requestKey) {
	p := l.expectRequest(key, nil, nil)
	l.mu.Lock()
	p.resolved = true
	l.mu.Unlock()
}

// awaitRequest waits for the answer to a request until ctx ends; the answer
// and the end of the wait are decided under the lock, so an answer the API
// accepted (202) is the one delivered.
func (l *liveTurns) awaitRequest(ctx context.Context, key requestKey) (*pendingRequest, error) {
	p := l.expectRequest(key, nil, nil)
	select {
	case <-p.answered:
		return p, nil
	case <-ctx.Done():
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-p.answered:
		return p, nil
	default:
		p.resolved = true
		return nil, fmt.Errorf("dispatch: request %s got no answer: %w", key.requestID, context.Cause(ctx))
	}
}

// answerRequest delivers an answer to a waiting request; set fills it in
// (under the lock) after it was checked.
func (l *liveTurns) answerRequest(key requestKey, check func(*pendingRequest) error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.requests[key]
	if p == nil {
		return fmt.Errorf("%w: %q in run %q", ErrNoPendingRequest, key.requestID, key.runID)
	}
	if p.resolved {
		return fmt.Errorf("%w: %q in run %q", ErrRequestAlreadyResolved, key.requestID, key.runID)
	}
	if err := check(p); err != nil {
		return err
	}
	p.resolved = true
	close(p.answered)
	return nil
}

// SubmitApproval answers the approval request of the running turn runID of
// the session (SessionKey). It returns ErrNoPendingRequest or
// ErrRequestAlreadyResolved (wrapped), or a *wire.FieldError for a request
// that is a user-input request or a decision the request does not offer.
// The turn may run on another dispatcher sharing the store (inbox.go).
func (e *Engine) SubmitApproval(session, runID string, a wire.ApprovalAnswer) error {
	err := e.approveHere(session, runID, a)
	if !errors.Is(err, ErrNoPendingRequest) {
		return err
	}
	return e.forward(session, runID, store.InboxApproval, a.RequestID, a, err, ErrRequestAlreadyResolved)
}

// approveHere is SubmitApproval for a turn of this engine.
func (e *Engine) approveHere(session, runID string, a wire.ApprovalAnswer) error {
	return e.live.answerRequest(requestKey{session, runID, a.RequestID}, func(p *pendingRequest) error {
		if p.input != nil {
			return &wire.FieldError{Field: "requestId", Message: fmt.Sprintf("%q is a user-input request: answer it at …/user-input", a.RequestID)}
		}
		if p.approval != nil && !slices.Contains(p.approval.Decisions, a.Decision) {
			return &wire.FieldError{Field: "decision", Message: fmt.Sprintf("request %q offers %v, not %q", a.RequestID, p.approval.Decisions, a.Decision)}
		}
		p.decision = a.Decision
		return nil
	})
}

// SubmitUserInput answers the user-input request of the running turn runID
// of the session (SessionKey); the answers are checked against its
// questions (a *wire.FieldError naming the answer's field). Errors as
// SubmitApproval's.
func (e *Engine) SubmitUserInput(session, runID string, a wire.UserInputAnswer) error {
	err := e.answerInputHere(session, runID, a)
	if !errors.Is(err, ErrNoPendingRequest) {
		return err
	}
	return e.forward(session, runID, store.InboxUserInput, a.RequestID, a, err, ErrRequestAlreadyResolved)
}

// answerInputHere is SubmitUserInput for a turn of this engine.
func (e *Engine) answerInputHere(session, runID string, a wire.UserInputAnswer) error {
	return e.live.answerRequest(requestKey{session, runID, a.RequestID}, func(p *pendingRequest) error {
		if p.input == nil {
			return &wire.FieldError{Field: "requestId", Message: fmt.Sprintf("%q is an approval request: answer it at …/approvals", a.RequestID)}
		}
		if _, err := p.input.Normalize(a.Answers); err != nil {
			return err
		}
		p.answers = a.Answers
		return nil
	})
}

// registerRequest tracks the native requests among the turn's events:
// before the journal holds a request, its waiter exists; its resolution
// closes it to answers.
func (t *runningTurn) registerRequest(ev adapter.Event) {
	switch {
	case ev.Type == wire.EventApprovalRequest && ev.ApprovalRequest != nil:
		t.e.live.expectRequest(requestKey{t.session, t.req.RunID, ev.ApprovalRequest.RequestID}, ev.ApprovalRequest, nil)
	case ev.Type == wire.EventUserInputRequest && ev.UserInputRequest != nil:
		t.e.live.expectRequest(requestKey{t.session, t.req.RunID, ev.UserInputRequest.RequestID}, nil, ev.UserInputRequest)
	case ev.Type == wire.EventRequestResolved && ev.RequestResolved != nil:
		t.e.live.resolveRequest(requestKey{t.session, t.req.RunID, ev.RequestResolved.RequestID})
	}
}

// answerApproval is the turn's Hooks.AnswerApproval.
func (t *runningTurn) answerApproval(ctx context.Context, req wire.ApprovalRequest) (wire.ApprovalDecision, error) {
	p, err := t.e.live.awaitRequest(ctx, requestKey{t.session, t.req.RunID, req.RequestID})
	if err != nil {
		return "", err
	}
	return p.decision, nil
}

// answerUserInput is the turn's Hooks.AnswerUserInput.
func (t *runningTurn) answerUserInput(ctx context.Context, req wire.UserInputRequest) (map[string]wire.UserInputValue, error) {
	p, err := t.e.live.awaitRequest(ctx, requestKey{t.session, t.req.RunID, req.RequestID})
	if err != nil {
		return nil, err
	}
	return p.answers, nil
}
