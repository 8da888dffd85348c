package codex

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

// Reattaching a turn to a new connection after its connection dropped: the
// turn is found on the thread and its missed items are recovered, never
// started again.

// Reattach moves a detached turn to the new connection c (to the same
// server): thread/resume (re-sending the turn's overrides; a running thread
// is joined as it is), then the turn's stream. Items that completed while
// no connection was attached are recovered from thread/turns/list and
// relayed (the missing tail of each assistant message as a partial), so the
// client sees the whole turn; a turn that ended meanwhile is finished from
// the same list. Then call Wait. A turn whose turn/start never reached the
// server gives ErrTurnNotStarted.
func (t *Turn) Reattach(ctx context.Context, c *appserver.Client) error {
	t.waitMu.Lock()
	defer t.waitMu.Unlock()
	t.mu.Lock()
	if t.result != nil {
		t.mu.Unlock()
		return nil
	}
	if t.at != nil {
		t.mu.Unlock()
		return ErrTurnAttached
	}
	t.mu.Unlock()

	th, err := t.resume(ctx, c, t.threadID)
	if err != nil {
		return err
	}
	turnID := t.turnID
	if turnID == "" {
		turnID, err = t.findStartedTurn(ctx, c)
		if err != nil {
			t.release(c, th)
			return err
		}
	}
	at := th.AttachTurn(turnID)
	listed, err := fetchTurn(ctx, c, t.threadID, turnID)
	if err != nil {
		t.release(c, th)
		return err
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	t.c, t.th, t.at, t.turnID = c, th, at, turnID
	t.publicID.Store(turnID)
	t.connGen++
	// Codex lists an item only once it is done — an assistant message
	// still streaming is not listed (TestReattachDeliversTheAnswerOnce) — so
	// every listed item is completed now, in list order, before any event
	// this connection buffered is relayed; those events of a listed item
	// then change nothing.
	for _, it := range listed.Items {
		t.itemCompleted(it)
	}
	finished := listed.Status != appserver.TurnInProgress && listed.Status != ""
	if finished {
		t.pending = &appserver.TurnCompletedEvent{
			EventMeta: appserver.EventMeta{Method: appserver.MethodTurnCompleted, ThreadID: t.threadID, TurnID: turnID},
			Turn:      listed,
		}
	}
	return nil
}

// findStartedTurn looks up the turn a lost turn/start started, if any: the
// thread's newest turn, when its user message is this turn's prompt and it
// is running or began at most two minutes (clock skew between dispatcher
// and server included) before the request was sent. The session lease keeps
// other turns off the thread.
func (t *Turn) findStartedTurn(ctx context.Context, c *appserver.Client) (string, error) {
	var res struct {
		Data []appserver.TurnInfo `json:"data"`
	}
	if err := c.Call(ctx, "thread/turns/list", map[string]any{"threadId": t.threadID, "limit": 1, "itemsView": "full"}, &res); err != nil {
		return "", fmt.Errorf("codex: thread/turns/list %s: %w", t.threadID, err)
	}
	if len(res.Data) == 1 {
		tr := res.Data[0]
		var started struct {
			StartedAt *int64 `json:"startedAtMs"`
		}
		recent := tr.Status == appserver.TurnInProgress
		for _, it := range tr.Items {
			if it.Type != "userMessage" {
				continue
			}
			_ = json.Unmarshal(it.Raw, &started)
			if userText(it) == t.in.Prompt && (recent || started.StartedAt != nil &&
				time.UnixMilli(*started.StartedAt).After(t.sentAt.Add(-2*time.Minute))) {
				return tr.ID, nil
			}
			break
		}
	}
	return "", fmt.Errorf("%w (thread %s)", ErrTurnNotStarted, t.threadID)
}

// userText is the text of a userMessage item.
func userText(it appserver.Item) string {
	var m struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	_ = json.Unmarshal(it.Raw, &m)
	var parts []string
	for _, c := range m.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "")
}

// fetchTurn reads one turn of the thread with its items.
func fetchTurn(ctx context.Context, c *appserver.Client, threadID, turnID string) (appserver.TurnInfo, error) {
	cursor := ""
	for page := 0; page < 20; page++ {
		params := map[string]any{"threadId": threadID, "limit": 5, "itemsView": "full"}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var res struct {
			Data       []appserver.TurnInfo `json:"data"`
			NextCursor *string              `json:"nextCursor"`
		}
		if err := c.Call(ctx, "thread/turns/list", params, &res); err != nil {
			return appserver.TurnInfo{}, fmt.Errorf("codex: thread/turns/list %s: %w", threadID, err)
		}
		for _, tr := range res.Data {
			if tr.ID == turnID {
				return tr, nil
			}
		}
		if res.NextCursor == nil || *res.NextCursor == "" {
			break
		}
		cursor = *res.NextCursor
	}
	return appserver.TurnInfo{}, fmt.Errorf("codex: turn %s not found in thread %s", turnID, threadID)
}
