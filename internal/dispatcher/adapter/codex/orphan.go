package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

// ErrThreadBusy is returned by Start for a bound thread that still runs an
// earlier turn nobody follows — its dispatcher stopped mid-turn and the
// turn kept running on the app-server. Start sends turn/interrupt for it and
// starts nothing: two turns never run on one thread. The next turn finds the
// thread idle.
var ErrThreadBusy = errors.New("codex: the native thread still runs an earlier turn")

// interruptOrphan refuses a resumed thread whose status is active: the turn
// running on it (the latest one, in progress) is interrupted.
func interruptOrphan(ctx context.Context, c *appserver.Client, info appserver.ThreadInfo) error {
	var status struct {
		Type string `json:"type"`
	}
	if len(info.Thread.Status) == 0 || json.Unmarshal(info.Thread.Status, &status) != nil || status.Type != "active" {
		return nil
	}
	id := info.Thread.ID
	var res struct {
		Data []appserver.TurnInfo `json:"data"`
	}
	if err := c.Call(ctx, "thread/turns/list", map[string]any{"threadId": id, "limit": 1}, &res); err != nil {
		return fmt.Errorf("%w: thread %s: list its turns: %w", ErrThreadBusy, id, err)
	}
	if len(res.Data) == 0 || res.Data[0].Status != appserver.TurnInProgress {
		return fmt.Errorf("%w: thread %s is active without a turn in progress", ErrThreadBusy, id)
	}
	turnID := res.Data[0].ID
	if err := c.Call(ctx, appserver.MethodTurnInterrupt, map[string]any{"threadId": id, "turnId": turnID}, nil); err != nil {
		return fmt.Errorf("%w: thread %s: interrupt turn %s: %w", ErrThreadBusy, id, turnID, err)
	}
	return fmt.Errorf("%w: thread %s ran turn %s, which was interrupted", ErrThreadBusy, id, turnID)
}
