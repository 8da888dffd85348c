package engine

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter/codex"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

// drive runs the native turn to its end on the engine's context,
// reattaching across dropped connections. A nil *wire.Error comes with a
// result.
func (t *runningTurn) drive(in adapter.TurnInput) (*wire.TurnResult, *wire.Error) {
	ctx := t.e.ctx
	hooks := adapter.Hooks{
		Emit: t.relay,
		AnswerTool: func(ctx context.Context, call wire.ToolCall) (wire.ToolAnswer, error) {
			return t.e.live.awaitTool(ctx, toolKey{t.session, t.req.RunID, call.CallID}, call.Tool)
		},
		AnswerApproval:  t.answerApproval,
		AnswerUserInput: t.answerUserInput,
	}
	nt, err := t.start(ctx, in, hooks)
	if errors.Is(err, codex.ErrThreadNotFound) && t.provisionalThread(in) {
		// The thread never ended a turn with a result (its first turn
		// died with its server): there is no conversation to lose, so the
		// turn starts a new thread instead of asking for a reset.
		t.e.log.Info("the session's provisional thread is gone from its app-server; the turn starts a new one",
			"session", t.session, "runId", t.req.RunID, "server", t.p.server.Name, "thread", cmp.Or(in.ThreadID, in.ReseedFrom))
		in.ThreadID, in.ReseedFrom, in.ReseedFromProvider = "", "", ""
		t.toolsFingerprint = codex.HostToolsFingerprint(in)
		nt, err = t.start(ctx, in, hooks)
	}
	var detached *codex.DetachedError
	if err != nil && (nt == nil || !errors.As(err, &detached)) {
		return nil, t.notStarted(err, cmp.Or(in.ThreadID, in.ReseedFrom))
	}
	t.native = nt
	if t.e.live.started(t.live, nt) {
		nt.Interrupt()
	}
	t.scheduleActive()
	reattached := false
	for {
		if err == nil {
			var res *wire.TurnResult
			if res, err = nt.Wait(ctx); err == nil {
				if reattached && res.Terminal.Kind == wire.TerminalAborted && !t.e.live.interruptAsked(t.live) {
					// Nobody asked for it: the app-server restarted under the
					// turn, and Codex reports what it found as interrupted.
					return nil, wire.Errorf(wire.CodeHarnessUnavailable, "",
						"app-server %s restarted while the turn was running and interrupted it; the turn is not replayed", t.p.server.Name).Touched(false)
				}
				return res, nil
			}
		}
		if !errors.As(err, &detached) {
			nt.Abandon()
			if ctx.Err() != nil {
				return nil, wire.Errorf(wire.CodeHarnessUnavailable, "",
					"the dispatcher shut down before the turn ended (its grace period was over); the native turn was interrupted").Touched(false)
			}
			return nil, wire.Errorf(wire.CodeHarnessUnavailable, "",
				"the turn on app-server %s ended without a result: %v", t.p.server.Name, err).Touched(false)
		}
		t.e.log.Info("app-server connection lost during a turn; reattaching", "session", t.session, "runId", t.req.RunID, "server", t.p.server.Name)
		err = t.reattach(ctx)
		if errors.Is(err, codex.ErrTurnNotStarted) {
			return nil, wire.Errorf(wire.CodeHarnessUnavailable, wire.ScopeHarness,
				"the connection to app-server %s dropped before the turn started; nothing ran", t.p.server.Name).Touched(true)
		}
		if err != nil {
			nt.Abandon()
			return nil, wire.Errorf(wire.CodeHarnessUnavailable, "",
				"app-server %s is gone while the turn was running; the turn is not replayed (the next turn resumes the thread once the server is back): %v",
				t.p.server.Name, err).Touched(false)
		}
		reattached = true
	}
}

// start starts the native turn. When the connection to the app-server is
// lost before any turn started — while the thread was resumed or started,
// its working directory made — nothing ran, so the turn is started again on
// a new connection to the same server, until Options.ReattachTimeout, as a
// turn that was running reattaches.
func (t *runningTurn) start(ctx context.Context, in adapter.TurnInput, hooks adapter.Hooks) (*codex.Turn, error) {
	nt, err := codex.Start(ctx, t.p.client, in, hooks)
	deadline := time.Now().Add(t.e.opts.ReattachTimeout)
	backoff := 200 * time.Millisecond
	for lostBeforeTurn(nt, err) && time.Now().Add(backoff).Before(deadline) {
		t.e.log.Info("app-server connection lost before the turn started; starting it on a new connection",
			"session", t.session, "runId", t.req.RunID, "server", t.p.server.Name)
		select {
		case <-ctx.Done():
			return nt, err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
		c, oerr := t.e.open(ctx, t.p.conn)
		if oerr != nil {
			continue // the server is not back yet: err still says why
		}
		t.p.client = c
		nt, err = codex.Start(ctx, c, in, hooks)
	}
	return nt, err
}

// lostBeforeTurn reports whether Start failed because the connection was
// lost before a turn could have started.
func lostBeforeTurn(nt *codex.Turn, err error) bool {
	var lost *appserver.ConnectionLostError
	return nt == nil && errors.As(err, &lost) && !lost.AfterTurnStarted
}

// provisionalThread reports whether the thread the input continues is the
// session's bound thread and no turn on it ever ended with a result.
func (t *runningTurn) provisionalThread(in adapter.TurnInput) bool {
	b := t.sess.Status.NativeBinding
	return b != nil && !t.p.rebind && b.ThreadState == v1alpha1.ThreadProvisional &&
		cmp.Or(in.ThreadID, in.ReseedFrom) == b.ThreadID
}

// notStarted is the error of a native turn that codex.Start refused or could
// not start.
func (t *runningTurn) notStarted(err error, threadID string) *wire.Error {
	var se *wire.Error
	switch {
	case errors.As(err, &se):
		// The adapter refused the turn before it started: a fail-closed
		// decision (its turn is counted when finish records it).
		recordFailClosed(t.labels, se.Code)
		return se.Touched(true)
	case errors.Is(err, adapter.ErrInvalidInput):
		return wire.Errorf(wire.CodeHarnessUnsupported, wire.ScopeHarness, "%v", err).Touched(true)
	case errors.Is(err, codex.ErrThreadBusy):
		// An earlier turn outlived its dispatcher on the thread; it was
		// interrupted, and the next attempt finds the thread idle.
		return wire.Errorf(wire.CodeHarnessUnavailable, wire.ScopeHarness,
			"app-server %s still ran an earlier turn of this session's thread, left by a dispatcher that stopped; it was interrupted and this turn did not start: retry (%v)",
			t.p.server.Name, err).Touched(true)
	case errors.Is(err, codex.ErrThreadNotFound):
		// Retrying cannot help: the server will never have the thread.
		return wire.Errorf(wire.CodeNativeThreadLost, "",
			"app-server %s does not have this session's native thread %s (it was lost, or the server's native home was replaced); reset the session (/reset bumps spec.resetGeneration) to start a new thread",
			t.p.server.Name, threadID).Touched(true)
	}
	return wire.Errorf(wire.CodeHarnessUnavailable, wire.ScopeHarness,
		"start the turn on app-server %s: %v", t.p.server.Name, err).Touched(true)
}

// reattach reconnects to the turn's server and reattaches the native turn,
// retrying until Options.ReattachTimeout.
func (t *runningTurn) reattach(ctx context.Context) error {
	deadline := time.Now().Add(t.e.opts.ReattachTimeout)
	backoff := 200 * time.Millisecond
	for {
		c, err := t.e.open(ctx, t.p.conn)
		if err == nil {
			err = t.native.Reattach(ctx, c)
			if err == nil || errors.Is(err, codex.ErrTurnNotStarted) {
				return err
			}
		}
		if time.Now().Add(backoff).After(deadline) {
			return err
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return ctx.Err()
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}
