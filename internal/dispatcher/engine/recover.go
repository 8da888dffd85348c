package engine

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// Recover runs at start-up, before the engine takes any lease: the store
// ends as failed every run of this engine's previous process (Options.Owner)
// and every run whose lease expired (store.Recover), and every AgentSession
// activeTurn whose run does not run any more is cleared —
// its native turn interrupted on its app-server, its turn recorded as
// lastTurn Failed (errorCode HarnessUnavailable: the outcome is unknown) and
// counted.
func (e *Engine) Recover(ctx context.Context) error {
	ended, err := e.store.Recover(ctx, e.opts.Owner, "the dispatcher restarted while the turn was running")
	if err != nil {
		return fmt.Errorf("dispatch: recover: %w", err)
	}
	if err := e.settleSessions(ctx, ended, nil); err != nil {
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
	for _, r := range ended {
		e.log.Info("ended a turn whose dispatcher stopped renewing its lease", "session", r.Session, "runId", r.RunID)
	}
	// Only the activeTurns of the runs swept: another activeTurn whose run
	// just ended is its own dispatcher's to record.
	err = e.settleSessions(ctx, ended, func(s *v1alpha1.AgentSession, swept store.RunRef, ok bool) bool {
		return ok && swept.RunID == s.Status.ActiveTurn.RunID
	})
	if err != nil {
		return ended, fmt.Errorf("dispatch: sweep: %w", err)
	}
	return ended, nil
}

// settleSessions brings the AgentSessions in line with the runs ended for
// a dispatcher that is gone:
//   - an activeTurn whose run does not run any more is cleared (clearStale)
//     when which selects it (nil: every one), given the run ended for its
//     session, if any;
//   - a run ended whose session never showed it — its dispatcher died
//     between starting the native turn and writing activeTurn — is
//     recorded as the session's lastTurn, failed (recordUnmarked).
func (e *Engine) settleSessions(ctx context.Context, ended []store.RunRef, which func(s *v1alpha1.AgentSession, run store.RunRef, ok bool) bool) error {
	bySession := make(map[string]store.RunRef, len(ended))
	for _, r := range ended {
		bySession[r.Session] = r // a session runs one turn at a time
	}
	var list v1alpha1.AgentSessionList
	if err := e.reader.List(ctx, &list); err != nil {
		return fmt.Errorf("list AgentSessions: %w", err)
	}
	var errs []error
	for i := range list.Items {
		s := &list.Items[i]
		key := SessionKey(s)
		run, ok := bySession[key]
		switch {
		case s.Status.ActiveTurn != nil:
			if (which == nil || which(s, run, ok)) && !e.runs(key, s.Status.ActiveTurn.RunID) {
				errs = append(errs, e.clearStale(ctx, s))
			}
		case ok && unrecorded(s, run):
			errs = append(errs, e.recordUnmarked(ctx, s, run))
		}
	}
	return errors.Join(errs...)
}

// unrecorded reports whether the session's status knows nothing of run,
// nor of a turn started after it.
func unrecorded(s *v1alpha1.AgentSession, run store.RunRef) bool {
	last := s.Status.LastTurn
	return last == nil || (last.RunID != run.RunID && last.StartedAt.Time.Before(run.StartedAt))
}

// recordUnmarked records a run that ended with its dispatcher before the
// session showed it as its activeTurn: lastTurn Failed. Its native turn,
// if it started, is not known to the cluster, so it cannot be interrupted
// here; the session's next turn on that thread interrupts it.
func (e *Engine) recordUnmarked(ctx context.Context, s *v1alpha1.AgentSession, run store.RunRef) error {
	name := s.Namespace + "/" + s.Name
	st := dispatcherPart(&s.Status)
	recordFailed(st, run.RunID, metav1.NewTime(run.StartedAt))
	if err := e.apply(ctx, s, st); err != nil {
		return fmt.Errorf("record the ended turn of %s: %w", name, err)
	}
	e.log.Info("recorded a turn that ended with its dispatcher before the session showed it", "session", name, "runId", run.RunID)
	return nil
}

// recordFailed makes the run the session's lastTurn, failed with its
// outcome unknown, and counts it.
func recordFailed(st *dispatcherStatus, runID string, startedAt metav1.Time) {
	st.LastTurn = &v1alpha1.LastTurn{
		RunID: runID, Outcome: v1alpha1.TurnFailed, ErrorCode: string(wire.CodeHarnessUnavailable),
		StartedAt: startedAt, FinishedAt: metav1.Now(),
	}
	if st.Counters == nil {
		st.Counters = &v1alpha1.SessionCounters{}
	}
	st.Counters.Turns++
	st.Counters.FailedTurns++
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
		recordFailed(st, stale.RunID, stale.StartedAt)
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
