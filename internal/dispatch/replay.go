package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/openclaw/harness-operator/internal/journal"
	"github.com/openclaw/harness-operator/internal/selection"
)

// follow replays a known run's recorded events to sink, following a running
// one live. It runs nothing.
func (e *Engine) follow(ctx context.Context, session, runID string, digest [32]byte, sink Sink) error {
	run, _, err := e.journal.Begin(session, runID, digest)
	if err != nil {
		var conflict *journal.RunConflictError
		if errors.As(err, &conflict) {
			return RunIDConflict(session, runID)
		}
		return fmt.Errorf("dispatch: journal: %w", err)
	}
	var lastErr *TurnError
	sawEnd := false
	for ev, err := range run.Events(ctx, 0) {
		if err != nil {
			return fmt.Errorf("dispatch: follow run %q: %w", runID, err)
		}
		sink(ev.Type, ev.Payload)
		switch ev.Type {
		case EventError:
			te := &TurnError{}
			if json.Unmarshal(ev.Payload, te) == nil {
				lastErr = te
			}
			sawEnd = true
		case EventResult:
			sawEnd = true
		}
	}
	if info := run.Info(); info.State == journal.StateFailed && !sawEnd {
		// A run found running after a restart: its outcome is unknown.
		te := newTurnError(selection.CodeHarnessUnavailable, "", "the turn's outcome is unknown: %s", info.Reason).touched(false)
		sink(EventError, mustJSON(te))
		return te
	}
	if lastErr != nil {
		return lastErr
	}
	return nil
}
