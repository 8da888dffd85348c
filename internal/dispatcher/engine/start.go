package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/policy/selection"
)

// Start begins one prepared turn of the session ns/name and returns its
// journaled run as soon as the run is recorded (its first event is
// `selected`); the rest of the turn runs on the engine's own context, so the
// caller streams the run's events (journal.Run.Events) and may leave and come
// back (a request with the same runId and body returns the same run). The
// caller's ctx bounds only the admission: a caller that leaves while its turn
// waits for the session or is being placed leaves nothing behind, and its
// runId stays free.
//
// The steps, in order:
//
//  1. the request is validated and the AgentSession is fetched; it is
//     authoritative: a contradicting attempt is SessionMismatch;
//  2. a runId the journal knows returns its run (running or ended) and runs
//     nothing; with another body it is RunIdConflict; one whose payload
//     retention pruned is the journal's *RunPrunedError; a namespace whose
//     journal holds as many runs as it may remember is the journal's
//     *RetentionLimitError;
//  3. one turn at a time per session: the turn waits for the session's lock
//     in arrival order (harness_dispatcher_turns_waiting counts it);
//  4. placement (prepare): selection, the embedded runtime, the expected
//     runtime artifact, the server, the connection — a refusal here is a
//     *wire.Error (errors.As) and Turn streams its decision; nothing is
//     journaled;
//  5. the run is journaled with its `selected` event and registered, so
//     Interrupt reaches it from the moment Start returns; the turn then runs
//     (run.go).
//
// A request without runId gets a generated one (req.RunID is set). by is
// who asks (the API's authenticated caller): the run records it, and the
// turn's end is logged with it.
func (e *Engine) Start(ctx context.Context, ns, name string, req *wire.TurnRequest, by store.Requester) (store.Run, error) {
	return e.start(ctx, ns, name, req, by, false)
}

// start is Start, or StartDelegated when delegated.
func (e *Engine) start(ctx context.Context, ns, name string, req *wire.TurnRequest, by store.Requester, delegated bool) (store.Run, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	if err := req.ValidateInput(); err != nil {
		return nil, err
	}
	if req.RunID == "" {
		req.RunID = NewRunID()
	}
	sess, err := e.sessionForTurn(ctx, ns, name, req)
	if err != nil {
		return nil, err
	}
	if err := validateAgainstSession(ns, sess, req); err != nil {
		return nil, err
	}
	session := SessionKey(sess)
	digest, err := req.Digest()
	if err != nil {
		return nil, err
	}
	if run, err := e.known(ns, session, req.RunID, digest); run != nil || err != nil {
		return follow(run, err, by, delegated)
	}
	if err := e.store.Admit(session); err != nil {
		// A new runId could not be remembered: nothing runs.
		recordRefused(labelsOf(ns, wire.Decision{}), wire.CodeRetentionLimitReached)
		return nil, err
	}
	waiting := turnsWaiting.WithLabelValues(ns)
	waiting.Inc()
	lease, err := e.store.Acquire(ctx, session, e.opts.Owner, e.opts.LeaseTTL)
	waiting.Dec()
	if err != nil {
		return nil, fmt.Errorf("dispatch: wait for the session lease of %s: %w", session, err)
	}
	run, t, err := e.begin(ctx, ns, name, lease, req, digest, by, delegated)
	if t == nil {
		e.release(lease)
		return run, err
	}
	go t.execute()
	return run, nil
}

// release gives a session's lease back; the next turn waiting for it starts.
func (e *Engine) release(lease store.Lease) {
	if err := e.store.Release(context.WithoutCancel(e.ctx), lease); err != nil && !errors.Is(err, store.ErrFenced) {
		e.log.Error(err, "release the session lease", "session", lease.Session)
	}
}

// known returns the journaled run of runID when it was begun for a request
// with this digest; nil, nil when the store does not know runID.
func (e *Engine) known(ns, session, runID string, digest [32]byte) (store.Run, error) {
	run, err := e.store.FindRun(session, runID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err // a tombstone (RunPrunedError) among them: never run again
	case run.Info().Digest != digest:
		recordRefused(labelsOf(ns, wire.Decision{}), wire.CodeRunIDConflict)
		return nil, wire.RunIDConflict(session, runID)
	}
	return run, nil
}

// begin is steps 4 and 5 of Start, under the session's lease. It returns the
// turn to execute (which then owns the lease) when a new run was journaled;
// otherwise the known run or the refusal.
func (e *Engine) begin(ctx context.Context, ns, name string, lease store.Lease, req *wire.TurnRequest, digest [32]byte, by store.Requester, delegated bool) (store.Run, *runningTurn, error) {
	session := lease.Session
	if run, err := e.known(ns, session, req.RunID, digest); run != nil || err != nil {
		run, err = follow(run, err, by, delegated)
		return run, nil, err // the same runId ran while this request waited
	}
	// The session may have changed while this turn waited for the lock —
	// or been deleted and created again under its name.
	sess, err := e.sessionForTurn(ctx, ns, name, req)
	if err != nil {
		return nil, nil, err
	}
	if SessionKey(sess) != session || !sess.DeletionTimestamp.IsZero() {
		// Its journal is being deleted (internal/dispatcher/sessionfinalizer): nothing may
		// start on it any more.
		return nil, nil, fmt.Errorf("%w: %s/%s is being deleted", ErrSessionNotFound, ns, name)
	}
	if err := validateAgainstSession(ns, sess, req); err != nil {
		return nil, nil, err
	}
	if terr := e.clearReset(ctx, sess); terr != nil {
		return nil, nil, terr
	}
	if terr := checkGatewayTranscript(sess, e.current(sess).LastTurn, req.GatewayTranscriptFields); terr != nil {
		recordRefused(labelsOf(ns, wire.Decision{}), terr.Code)
		return nil, nil, terr
	}
	p, terr := e.prepare(ctx, sess, req)
	if terr != nil {
		return nil, nil, terr
	}
	if delegated {
		if err := e.admitDelegate(sess, req, p, by); err != nil {
			e.unreserve(p)
			return nil, nil, err
		}
	}
	if err := e.admitMCP(ctx, sess, req, p, by); err != nil {
		e.unreserve(p)
		return nil, nil, err
	}
	if err := e.admitAuthProfile(ctx, sess, req, p, by); err != nil {
		e.unreserve(p)
		return nil, nil, err
	}
	if terr := e.mintModelCredential(sess, p, lease, req.RunID, req.TimeoutMs, req.AuthProfile, time.Now()); terr != nil {
		e.unreserve(p)
		recordRefused(labelsOf(ns, p.decision), terr.Code)
		return nil, nil, &refusal{err: terr, decision: &p.decision}
	}
	run, outcome, err := e.store.Claim(lease, req.RunID, digest, by)
	if err != nil {
		e.unreserve(p)
		var conflict *store.RunConflictError
		if errors.As(err, &conflict) {
			recordRefused(labelsOf(ns, p.decision), wire.CodeRunIDConflict)
			return nil, nil, wire.RunIDConflict(session, req.RunID)
		}
		return nil, nil, fmt.Errorf("dispatch: journal: %w", err)
	}
	if outcome != store.BeginNew { // not reachable under the session lease
		return run, nil, nil
	}
	t := e.newTurn(lease, sess, req, p, run)
	if err := t.emit(wire.EventSelected, mustJSON(p.decision)); err != nil {
		t.writeErr = err // the turn fails visibly (run.go)
	}
	return run, t, nil
}

// validateAgainstSession refuses a turn whose attempt contradicts the
// session (SessionMismatch), counting the refusal.
func validateAgainstSession(ns string, sess *v1alpha1.AgentSession, req *wire.TurnRequest) error {
	err := selection.ValidateAgainstSession(sess, &req.Attempt)
	var se *wire.Error
	if errors.As(err, &se) {
		recordRefused(labelsOf(ns, wire.Decision{}), se.Code)
		return se
	}
	return err
}

// Sink receives the stream events of a turn, in order, from one goroutine at
// a time.
type Sink func(eventType string, payload json.RawMessage)

// Turn is Start followed until the run ends: its events go to sink, and
// cancelling ctx interrupts the turn (terminal aborted). A refusal after
// selection is given to sink as the `selected` and `error` events it would
// have streamed. The run records no requester (an in-process caller). Turn
// returns nil for a completed turn (whatever its terminal kind), the
// *wire.Error of a turn that failed or was refused, and Start's other
// errors.
func (e *Engine) Turn(ctx context.Context, ns, name string, req *wire.TurnRequest, sink Sink) error {
	if sink == nil {
		sink = func(string, json.RawMessage) {}
	}
	run, err := e.Start(ctx, ns, name, req, store.Requester{})
	if err != nil {
		var r *refusal
		if errors.As(err, &r) {
			sink(wire.EventSelected, mustJSON(r.decision))
			sink(wire.EventError, mustJSON(r.err))
		}
		return err
	}
	info := run.Info()
	stop := context.AfterFunc(ctx, func() { e.Interrupt(info.Session, info.RunID) })
	defer stop()
	return Follow(context.WithoutCancel(ctx), run, sink)
}

// Follow gives a run's events to sink until the run ends and returns its
// outcome: nil for a finished run, the *wire.Error of its `error` event, or
// OutcomeUnknown for a run that failed without one (its dispatcher stopped).
func Follow(ctx context.Context, run store.Run, sink Sink) error {
	var failed *wire.Error
	for ev, err := range run.Events(ctx, 0) {
		if err != nil {
			return fmt.Errorf("dispatch: follow run %q: %w", run.Info().RunID, err)
		}
		sink(ev.Type, ev.Payload)
		if ev.Type == wire.EventError {
			failed = &wire.Error{}
			if json.Unmarshal(ev.Payload, failed) != nil {
				failed = wire.OutcomeUnknown("its error event is unreadable")
			}
		}
	}
	if info := run.Info(); info.State == store.StateFailed && failed == nil {
		failed = wire.OutcomeUnknown(info.Reason)
		sink(wire.EventError, mustJSON(failed))
	}
	if failed != nil {
		return failed
	}
	return nil
}
