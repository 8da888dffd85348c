package codex

import (
	"context"
	"encoding/json"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

// User-input requests (item/tool/requestUserInput, plan mode): relayed like
// approvals (requests.go), answered with the client's normalized answers.

// userInputParams are the fields of item/tool/requestUserInput.
type userInputParams struct {
	ItemID    string `json:"itemId"`
	Questions []struct {
		ID       string `json:"id"`
		Header   string `json:"header"`
		Question string `json:"question"`
		IsOther  bool   `json:"isOther"`
		IsSecret bool   `json:"isSecret"`
		Options  []struct {
			Label       string `json:"label"`
			Description string `json:"description"`
		} `json:"options"`
	} `json:"questions"`
}

func userInputRequest(params json.RawMessage) wire.UserInputRequest {
	var p userInputParams
	_ = json.Unmarshal(params, &p)
	r := wire.UserInputRequest{RequestID: p.ItemID, CallID: p.ItemID, Questions: []wire.UserInputQuestion{}}
	for _, q := range p.Questions {
		wq := wire.UserInputQuestion{ID: q.ID, Header: q.Header, Question: q.Question, AllowOther: q.IsOther, Secret: q.IsSecret}
		for _, o := range q.Options {
			wq.Options = append(wq.Options, wire.UserInputOption{Label: o.Label, Description: o.Description})
		}
		r.Questions = append(r.Questions, wq)
	}
	return r
}

// onUserInput answers a user-input request with the client's answers, or
// with none at the tool timeout. A re-delivered request gets the first
// delivery's answers.
func (t *Turn) onUserInput(_ context.Context, req appserver.UserInputRequest) map[string][]string {
	<-t.promptSent
	r := userInputRequest(req.Params)
	t.mu.Lock()
	nr, first := t.claim(r.RequestID, appserver.MethodUserInput)
	if !first {
		t.mu.Unlock()
		<-nr.done
		return nr.answers
	}
	defer close(nr.done)
	if t.result != nil || t.closing {
		defer t.mu.Unlock()
		t.resolveUserInput(nr, r, wire.ResolvedCancelled, nil)
		return nil
	}
	timeout := t.in.EffectiveToolTimeout()
	r.ExpiresAt = time.Now().Add(timeout).UTC()
	t.emit(adapter.Event{Type: wire.EventUserInputRequest, UserInputRequest: &r})
	if t.hooks.AnswerUserInput == nil {
		defer t.mu.Unlock()
		t.resolveUserInput(nr, r, wire.ResolvedCancelled, nil)
		return nil
	}
	answers, missing, answered := awaitClient(t, timeout, func(ctx context.Context) (map[string]wire.UserInputValue, error) {
		return t.hooks.AnswerUserInput(ctx, r)
	})
	defer t.mu.Unlock()
	if !answered {
		t.resolveUserInput(nr, r, missing, nil)
		return nil
	}
	t.resolveUserInput(nr, r, wire.ResolvedAnswered, answers)
	return nr.answers
}

// resolveUserInput records and emits a user-input request's resolution;
// answers of secret questions are not in the event. t.mu must be held.
func (t *Turn) resolveUserInput(nr *nativeRequest, r wire.UserInputRequest, res wire.Resolution, answers map[string]wire.UserInputValue) {
	nr.resolution = res
	ev := &wire.RequestResolved{RequestID: r.RequestID, CallID: r.CallID, Resolution: res}
	if res == wire.ResolvedAnswered {
		// The engine checked the answers against the questions already; a
		// failure here leaves the request unanswered rather than guessing.
		norm, err := r.Normalize(answers)
		if err == nil {
			nr.answers = norm
			ev.Answers = r.Redacted(answers)
		} else {
			ev.Resolution = wire.ResolvedCancelled
			nr.resolution = ev.Resolution
		}
	}
	t.emit(adapter.Event{Type: wire.EventRequestResolved, RequestResolved: ev})
}
