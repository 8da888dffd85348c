package dispatch

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/store"
	"github.com/openclaw/harness-operator/internal/wire"
)

// Recover runs at start-up, before the engine takes any lease: the store
// ends as failed every run of this engine's previous process (Options.Owner)
// and every run whose lease expired (store.Recover), and every AgentSession
// activeTurn whose run does not run any more is cleared —
// its native turn interrupted on its app-server, its turn recorded as
// lastTurn Failed (errorCode HarnessUnavailable: the outcome is unknown) and
// counted.
func (e *Engine) Recover(ctx context.Context) error {
	if _, err := e.store.Recover(ctx, e.opts.Owner, "the dispatcher restarted while the turn was running"); err != nil {
		return fmt.Errorf("dispatch: recover: %w", err)
	}
	var errs []error
	var list v1alpha1.AgentSessionList
	if err := e.reader.List(ctx, &list); err != nil {
		return fmt.Errorf("dispatch: recover: list AgentSessions: %w", err)
	}
	for i := range list.Items {
		s := &list.Items[i]
		if s.Status.ActiveTurn != nil && !e.runs(SessionKey(s), s.Status.ActiveTurn.RunID) {
			errs = append(errs, e.clearStale(ctx, s))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("dispatch: recover: %w", err)
	}
	return nil
}

// clearStale ends an activeTurn that no running run of this dispatcher
// owns: its native turn is interrupted, and it is recorded as failed.
func (e *Engine) clearStale(ctx context.Context, s *v1alpha1.AgentSession) error {
	name := s.Namespace + "/" + s.Name
	if n := s.Status.ActiveTurn.Native; n != nil {
		if err := e.interruptNative(ctx, n); err != nil {
			e.log.Error(err, "a turn left running by the previous dispatcher was not interrupted; the session's next turn interrupts it",
				"session", name, "runId", s.Status.ActiveTurn.RunID)
		} else {
			e.log.Info("interrupted a native turn left running by the previous dispatcher", "session", name,
				"runId", s.Status.ActiveTurn.RunID, "thread", n.ThreadID, "turn", n.TurnID)
		}
	}
	st := dispatcherPart(&s.Status)
	stale := st.ActiveTurn
	st.ActiveTurn = nil
	if st.LastTurn == nil || st.LastTurn.RunID != stale.RunID {
		st.LastTurn = &v1alpha1.LastTurn{
			RunID: stale.RunID, Outcome: v1alpha1.TurnFailed, ErrorCode: string(wire.CodeHarnessUnavailable),
			StartedAt: stale.StartedAt, FinishedAt: metav1.Now(),
		}
		if st.Counters == nil {
			st.Counters = &v1alpha1.SessionCounters{}
		}
		st.Counters.Turns++
		st.Counters.FailedTurns++
	}
	if err := e.apply(ctx, s, st); err != nil {
		return fmt.Errorf("clear activeTurn of %s: %w", name, err)
	}
	e.log.Info("cleared a stale activeTurn", "session", name, "runId", stale.RunID)
	return nil
}

// runs reports whether the store shows runID of session running (under a
// lease another dispatcher holds).
func (e *Engine) runs(session, runID string) bool {
	run, err := e.store.FindRun(session, runID)
	return err == nil && run.Info().State == store.StateRunning
}
