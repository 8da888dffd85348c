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
	if err := e.clearStaleTurns(ctx, nil); err != nil {
		return fmt.Errorf("dispatch: recover: %w", err)
	}
	return nil
}

// Sweep is what a live dispatcher does for the dispatchers sharing its store
// that died: the store ends as failed every run whose session's lease
// expired (store.Sweep; its holder stopped renewing), and the activeTurns
// of those runs are cleared as Recover clears them — interrupted on their
// app-servers and recorded as failed. Turns of live dispatchers, this one's
// included, are never touched. It returns the runs it ended.
func (e *Engine) Sweep(ctx context.Context) ([]store.RunRef, error) {
	ended, err := e.store.Sweep(ctx, "the dispatcher running the turn stopped renewing its session lease (it stopped or lost the store)")
	if err != nil {
		return nil, fmt.Errorf("dispatch: sweep: %w", err)
	}
	if len(ended) == 0 {
		return nil, nil
	}
	type runKey struct{ session, runID string }
	swept := map[runKey]bool{}
	for _, r := range ended {
		e.log.Info("ended a turn whose dispatcher stopped renewing its lease", "session", r.Session, "runId", r.RunID)
		swept[runKey{r.Session, r.RunID}] = true
	}
	// Only the activeTurns of the runs swept: another activeTurn whose run
	// just ended is its own dispatcher's to record.
	err = e.clearStaleTurns(ctx, func(s *v1alpha1.AgentSession) bool {
		return swept[runKey{SessionKey(s), s.Status.ActiveTurn.RunID}]
	})
	if err != nil {
		return ended, fmt.Errorf("dispatch: sweep: %w", err)
	}
	return ended, nil
}

// clearStaleTurns clears the AgentSession activeTurns that which selects
// (nil: all) and whose run does not run any more (clearStale).
func (e *Engine) clearStaleTurns(ctx context.Context, which func(*v1alpha1.AgentSession) bool) error {
	var list v1alpha1.AgentSessionList
	if err := e.reader.List(ctx, &list); err != nil {
		return fmt.Errorf("list AgentSessions: %w", err)
	}
	var errs []error
	for i := range list.Items {
		s := &list.Items[i]
		if s.Status.ActiveTurn != nil && (which == nil || which(s)) && !e.runs(SessionKey(s), s.Status.ActiveTurn.RunID) {
			errs = append(errs, e.clearStale(ctx, s))
		}
	}
	return errors.Join(errs...)
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
