package engine

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter/codex"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/policy/selection"
)

// statusWriteTimeout bounds one status apply of a running turn.
const statusWriteTimeout = 30 * time.Second

// runningTurn is one journaled turn while it runs (Start returned its run): it
// owns the run's journal writes, its native turn, and its status writes.
// Only its own goroutine touches it, except through liveTurns.
type runningTurn struct {
	e       *Engine
	session string
	lease   store.Lease // the session's lease; renewed while the turn runs
	sess    *v1alpha1.AgentSession
	req     *wire.TurnRequest
	p       *prepared
	run     store.Run
	live    *liveRun
	labels  turnLabels // the turn's metric labels
	started metav1.Time

	native        *codex.Turn // nil until started
	partialSeen   bool        // the time to the first partial is recorded
	transcriptErr error       // the transcript mirror refused a record
	writeErr      error       // the journal refused an event: the turn fails

	toolsFingerprint string // the binding's hostToolsFingerprint once the turn has its thread (input)

	active     *activeMark // the pending activeTurn write; nil until the native turn started
	leaseState turnLease   // the session lease as the renewing goroutine last saw it
}

func (e *Engine) newTurn(lease store.Lease, sess *v1alpha1.AgentSession, req *wire.TurnRequest, p *prepared, run store.Run) *runningTurn {
	t := &runningTurn{
		e: e, session: lease.Session, lease: lease, sess: sess, req: req, p: p, run: run,
		live:    e.live.add(lease.Session, req.RunID),
		labels:  labelsOf(sess.Namespace, p.decision),
		started: metav1.Now(),
	}
	t.leaseState.renewed(lease.Expires)
	return t
}

// execute runs the turn to its end on the engine's context, renewing the
// session's lease meanwhile, and releases the lease once its end and status
// are recorded. A panic is recovered and fails this turn only.
func (t *runningTurn) execute() {
	defer t.e.release(t.lease)
	defer t.e.live.remove(t.session, t.live)
	stopRenewing := t.renewLease()
	defer stopRenewing()
	stopFollowing := t.followInbox()
	defer stopFollowing()
	var (
		res  *wire.TurnResult
		terr *wire.Error
	)
	func() {
		defer func() {
			if v := recover(); v != nil {
				t.e.log.Error(fmt.Errorf("panic: %v", v), "a turn panicked; it fails", "session", t.session, "runId", t.req.RunID, "stack", string(debug.Stack()))
				t.abandonNative()
				res, terr = nil, wire.Errorf(wire.CodeHarnessUnavailable, "", "the dispatcher failed while running the turn (an internal error, logged)").Touched(false)
			}
		}()
		res, terr = t.drive(t.input())
	}()
	t.e.live.ended(t.session, t.live)
	t.finish(res, terr)
}

// abandonNative stops the native turn of a turn that can no longer follow
// it (it panicked): turn/interrupt is sent on the turn's connection at once —
// nobody waits for the native turn any more to send it. The adapter's turn is
// left alone: the panic may have left it locked.
func (t *runningTurn) abandonNative() {
	if t.native == nil || t.native.ID() == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.e.ctx), nativeCleanupTimeout)
	defer cancel()
	params := map[string]any{"threadId": t.native.ThreadID(), "turnId": t.native.ID()}
	if err := t.p.client.Call(ctx, appserver.MethodTurnInterrupt, params, nil); err != nil {
		t.e.log.Error(err, "interrupt the native turn of a failed turn", "session", t.session, "runId", t.req.RunID)
	}
}

// deadline is when the turn must end.
func (t *runningTurn) deadline() time.Time {
	timeout := t.e.opts.DefaultTurnTimeout
	if t.req.TimeoutMs > 0 {
		timeout = time.Duration(t.req.TimeoutMs) * time.Millisecond
	}
	return t.started.Add(timeout)
}

// input is the adapter's view of the turn.
func (t *runningTurn) input() adapter.TurnInput {
	_, model := selection.SplitModel("", t.sess.Spec.Model)
	in := adapter.TurnInput{
		Model:                 model,
		Cwd:                   workDir(t.e.workspaceRoot(t.p.client), t.sess),
		DeveloperInstructions: t.req.ExtraSystemPrompt,
		ThinkLevel:            t.req.ThinkLevel,
		Prompt:                t.req.Prompt,
		Images:                t.req.Images,
		Tools:                 t.req.Tools,
		DisableTools:          t.req.DisableTools,
		ToolTimeout:           time.Duration(t.req.ToolTimeoutMs) * time.Millisecond,
		Deadline:              t.deadline(),
		PassThrough:           t.req.PassThrough,
		MCPServers:            t.p.mcpServers,
		AuthProfile:           t.p.authProfile,
		NativeActionOptions:   t.req.NativeActionOptions,
	}
	if t.p.pod {
		in.Sandbox = t.e.podSandbox(t.p.harness)
	}
	if tp := t.p.decision.ToolPolicy; tp != nil {
		in.Restricted = tp.Restricted
		in.SafeDeniedTools = tp.SafeDeniedTools
	}
	binding := t.sess.Status.NativeBinding
	if t.p.rebind {
		binding = nil
	}
	withModelCredential(&in, t.p)
	t.toolsFingerprint = continueThread(&in, binding, t.req.GatewayMessages())
	in.MirrorMessages, in.MirrorDropped = t.p.mirror, t.p.mirrorDropped
	return in
}

// finish records the turn's end: the metrics, the `result` or `error`
// event, the dispatcher's part of the status (pin, lastSelection,
// nativeBinding, lastTurn, counters, activeTurn cleared), the run's end and
// the transcript's fsync. The event comes first, so the client has the
// outcome without waiting for the API server; the stream ends only with the
// run, after the status landed, so a client that reads the session after
// the stream's end finds the turn recorded there. The session's lease is
// held until then (execute releases it): the finalizer and a same-named
// successor wait for the status.
func (t *runningTurn) finish(res *wire.TurnResult, terr *wire.Error) {
	finished := metav1.Now()
	if terr == nil {
		terr = recordingFailure(t.writeErr, t.transcriptErr)
	}
	if terr == nil {
		terr = authFailure(res, t.p.harness)
	}
	recordFinished(t.labels, res, terr, finished.Sub(t.started.Time))
	state, payload, typ := store.StateFinished, t.resultPayload(res), wire.EventResult
	if terr != nil {
		// The journaled error is what gateways read (the stream, GET
		// …/turns/{runId}): without addresses or paths; the log keeps them.
		shown := terr.Redacted()
		if shown != terr {
			t.e.log.Info("turn error details withheld from the client", "session", t.session, "runId", t.req.RunID, "code", terr.Code, "error", terr.Message)
		}
		state, payload, typ = store.StateFailed, mustJSON(shown), wire.EventError
	}
	if err := t.emit(typ, payload); err != nil {
		t.e.log.Error(err, "journal append failed", "session", t.session, "runId", t.req.RunID, "event", typ)
	}
	t.cancelActive()
	t.writeStatus(t.endStatus(res, terr, finished), "apply turn status", nil)
	t.settlePlace()
	if err := t.run.Finish(state, payload); err != nil {
		t.e.log.Error(err, "journal finish failed", "session", t.session, "runId", t.req.RunID)
	}
	if err := t.e.store.SyncTranscript(t.session); err != nil {
		t.e.log.Error(err, "transcript sync failed", "session", t.session)
	}
	t.logEnd(res, terr)
}

// logEnd writes the one record of a turn's end: who asked for it, where it
// ran and how it ended (accountability: the same requester is in the run's
// journal record and GET …/turns/{runId}).
func (t *runningTurn) logEnd(res *wire.TurnResult, terr *wire.Error) {
	by := t.run.Info().Requester
	outcome := ""
	switch {
	case terr != nil:
		outcome = string(terr.Code)
	case res != nil:
		outcome = string(res.Terminal.Kind)
	}
	t.e.log.Info("turn ended", "requester", by.User, "requesterUID", by.UID, "requesterGroups", by.Groups,
		"namespace", t.sess.Namespace, "session", t.sess.Name, "runId", t.req.RunID,
		"harness", t.p.harness.Namespace+"/"+t.p.harness.Name, "outcome", outcome)
}

// resultPayload is the `result` event of a turn that completed.
func (t *runningTurn) resultPayload(res *wire.TurnResult) []byte {
	if res == nil {
		return nil
	}
	d := t.p.decision
	out := wire.ResultEvent{RunID: t.req.RunID, TurnResult: *res, AgentHarnessID: d.HarnessID}
	if t.req.CaptureRuntimeArtifact && checkArtifact(t.p.harness, t.p.server, &wire.ExpectedRuntimeArtifact{}, d.HarnessID) == nil {
		out.RuntimeArtifact = t.p.harness.Status.RuntimeArtifact.DeepCopy()
	}
	return mustJSON(out)
}

// endStatus is the dispatcher's part of the status after the turn.
func (t *runningTurn) endStatus(res *wire.TurnResult, terr *wire.Error, finished metav1.Time) *dispatcherStatus {
	d := t.p.decision
	st := t.e.current(t.sess)
	st.ActiveTurn = nil
	st.LastSelection = lastSelection(d, t.req.RunID)
	counters := st.Counters
	if counters == nil {
		counters = &v1alpha1.SessionCounters{}
	}
	counters.Turns++
	last := &v1alpha1.LastTurn{RunID: t.req.RunID, StartedAt: t.started, FinishedAt: finished}
	if t.native != nil && t.native.ThreadID() != "" {
		st.AgentHarnessID = d.HarnessID
		st.NativeBinding = &v1alpha1.NativeBinding{ThreadID: t.native.ThreadID(), Pod: t.p.server.Name, Generation: t.sess.Spec.ResetGeneration,
			SessionUID: string(t.sess.UID), HarnessNamespace: t.p.harness.Namespace, HarnessName: t.p.harness.Name,
			HostToolsFingerprint: t.toolsFingerprint, AuthProfile: authProfileID(t.p.authProfile), ModelProvider: turnModelProvider(t.p),
			ThreadState: threadState(st.NativeBinding, t.native.ThreadID(), terr == nil)}
	}
	switch {
	case terr != nil:
		last.Outcome, last.ErrorCode = v1alpha1.TurnFailed, string(terr.Code)
		counters.FailedTurns++
	default:
		last.Outcome = outcomeOf(res.Terminal.Kind)
		last.Classification = v1alpha1.TerminalClassification(res.Classification)
		if last.Outcome != v1alpha1.TurnSucceeded {
			counters.FailedTurns++
		}
	}
	if res != nil {
		addUsage(counters, res.Usage)
	}
	st.LastTurn, st.Counters = last, counters
	return st
}

// threadState is the state of thread after a turn on it: Established once
// a turn ended with a result; after a failed turn, Provisional unless the
// thread was bound and established before (prev, the binding before the
// turn).
func threadState(prev *v1alpha1.NativeBinding, thread string, result bool) v1alpha1.ThreadState {
	if result || (prev != nil && prev.ThreadID == thread && prev.ThreadState != v1alpha1.ThreadProvisional) {
		return v1alpha1.ThreadEstablished
	}
	return v1alpha1.ThreadProvisional
}

// renewLease renews the session's lease every third of its TTL until the
// returned stop is called. A renewal that is refused (another dispatcher took
// the session over) interrupts the native turn: its writes are fenced from
// then on, so it must not run on unrecorded.
func (t *runningTurn) renewLease() (stop func()) {
	ctx, cancel := context.WithCancel(t.e.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(t.e.opts.LeaseTTL / 3)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			lease, err := t.e.store.Renew(ctx, t.lease, t.e.opts.LeaseTTL)
			if err != nil {
				if ctx.Err() == nil {
					t.leaseState.lost.Store(true)
					t.e.log.Error(err, "the session lease was not renewed; interrupting the turn", "session", t.session, "runId", t.req.RunID)
					t.e.live.interrupt(t.session, func(r *liveRun) bool { return r == t.live })
				}
				return
			}
			t.lease = lease // only this goroutine writes it until stop returns
			t.leaseState.renewed(lease.Expires)
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
