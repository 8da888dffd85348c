package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/adapter"
	"github.com/openclaw/harness-operator/internal/adapter/codex"
	"github.com/openclaw/harness-operator/internal/appserver"
	"github.com/openclaw/harness-operator/internal/journal"
	"github.com/openclaw/harness-operator/internal/selection"
	"github.com/openclaw/harness-operator/internal/snapshot"
)

// Defaults of Options.
const (
	// DefaultFieldManager is the dispatcher's server-side apply field manager
	// for its part of the AgentSession status (DESIGN.md §3).
	DefaultFieldManager = "harness-operator-dispatcher"
	// DefaultTurnTimeout bounds a turn whose request has no timeoutMs.
	DefaultTurnTimeout = 10 * time.Minute
	// DefaultPodSandbox is the native sandbox of threads on server pods: the
	// pod is the sandbox (DESIGN.md §3).
	DefaultPodSandbox = "danger-full-access"
	// DefaultReattachTimeout is how long the engine tries to reconnect to the
	// server of a turn whose connection dropped before it declares the server
	// gone.
	DefaultReattachTimeout = 30 * time.Second
	// workspacesDir is the directory under the server's native home (its
	// CODEX_HOME) that holds the per-session working directories.
	workspacesDir = "workspaces"
	// dialTimeout bounds one dial and handshake.
	dialTimeout = 15 * time.Second
)

// Event types the engine adds to the adapter's vocabulary.
const (
	EventSelected = "selected"
	EventResult   = "result"
	EventError    = "error"
)

// Sink receives the stream events of a turn, in order, from one goroutine at
// a time. It must not block for long: it holds up the turn.
type Sink func(eventType string, payload json.RawMessage)

// Options tune an Engine; the zero value takes the defaults.
type Options struct {
	// FieldManager is the field manager of status writes (DefaultFieldManager).
	FieldManager string
	// DefaultTurnTimeout bounds turns without timeoutMs (DefaultTurnTimeout).
	DefaultTurnTimeout time.Duration
	// PodSandbox is the sandbox of threads on server pods (DefaultPodSandbox);
	// external servers keep their own configured mode.
	PodSandbox string
	// WorkspaceRoot is the directory, on the app-server's filesystem, under
	// which each session gets its working directory <root>/<ns>/<uid>.
	// Empty means <the server's native home>/workspaces.
	WorkspaceRoot string
	// ReattachTimeout bounds reconnecting to a turn's server after its
	// connection dropped (DefaultReattachTimeout).
	ReattachTimeout time.Duration
	// Logger receives the engine's structured records (the `agent harness
	// selected` record among them). The zero value discards them.
	Logger logr.Logger
}

func (o Options) withDefaults() Options {
	if o.FieldManager == "" {
		o.FieldManager = DefaultFieldManager
	}
	if o.DefaultTurnTimeout <= 0 {
		o.DefaultTurnTimeout = DefaultTurnTimeout
	}
	if o.PodSandbox == "" {
		o.PodSandbox = DefaultPodSandbox
	}
	if o.ReattachTimeout <= 0 {
		o.ReattachTimeout = DefaultReattachTimeout
	}
	return o
}

// Engine executes prepared turns (DESIGN.md §4, issue 6).
//
// It reads, through the reader (in the dispatcher an informer cache):
// AgentHarnesses and AgentSessions in every namespace, RuntimePolicies,
// Namespaces (labels, for harness visibility and policy selection), Pods in
// harness namespaces (server pods, by the agentharness annotation) and
// Secrets (a harness's token: the operator-generated one of a managed
// harness, spec.external.tokenSecretRef of an external one). It writes only
// the dispatcher's part of AgentSession status, by server-side apply under
// Options.FieldManager, through the writer. Tokens are never logged,
// emitted or stored.
type Engine struct {
	reader  client.Reader
	writer  client.Client
	journal *journal.Journal
	opts    Options
	log     logr.Logger

	locks sessionLocks
	pool  connPool

	mu      sync.Mutex
	tools   map[toolKey]chan adapter.ToolAnswer // host tool calls waiting for the client
	active  map[string]*activeRun               // running turns by session
	applied map[k8stypes.UID]*dispatcherStatus  // last applied dispatcher status by AgentSession UID
}

type toolKey struct{ session, runID, callID string }

type activeRun struct {
	runID string
	turn  *codex.Turn // nil while codex.Start is still starting the turn
	// interrupted records an Interrupt that arrived before the turn started;
	// drive delivers it as soon as the turn exists, so none is lost.
	interrupted bool
}

// New returns an Engine. reader serves the objects the engine reads (see
// Engine), writer applies AgentSession status, j is the journal it owns for
// its lifetime.
func New(reader client.Reader, writer client.Client, j *journal.Journal, opts Options) *Engine {
	opts = opts.withDefaults()
	return &Engine{
		reader: reader, writer: writer, journal: j, opts: opts, log: opts.Logger,
		tools:   map[toolKey]chan adapter.ToolAnswer{},
		active:  map[string]*activeRun{},
		applied: map[k8stypes.UID]*dispatcherStatus{},
	}
}

// Close closes the pooled app-server connections. Running turns detach (and
// keep running on their servers).
func (e *Engine) Close() { e.pool.closeAll() }

// ErrSessionNotFound is returned (wrapped) for a turn of an AgentSession that
// does not exist, or that is being deleted (a turn that waited for the
// session lock while the dispatcher finalizer deleted its journal).
var ErrSessionNotFound = errors.New("dispatch: AgentSession not found")

// ErrNoPendingToolCall is returned by SubmitToolResult when no host tool call
// with that id is waiting for an answer.
var ErrNoPendingToolCall = errors.New("dispatch: no pending host tool call")

// Decide returns the selection decision for req on the session without side
// effects (turn-only fields are ignored). A SessionMismatch is the decision's
// error; the returned error is for lookups that failed.
func (e *Engine) Decide(ctx context.Context, ns, name string, req *TurnRequest) (selection.Decision, error) {
	sess, err := e.session(ctx, ns, name)
	if err != nil {
		return selection.Decision{}, err
	}
	snap, err := snapshot.For(ctx, e.reader, sess)
	if err != nil {
		return selection.Decision{}, err
	}
	return selection.Select(snap, &req.Attempt), nil
}

// SubmitToolResult answers the host tool call callID of the running turn
// runID of the session (SessionKey), as the client posted it. It returns
// ErrNoPendingToolCall when no such call waits (unknown, answered, timed
// out or its turn ended).
func (e *Engine) SubmitToolResult(session, runID, callID string, answer adapter.ToolAnswer) error {
	e.mu.Lock()
	ch := e.tools[toolKey{session, runID, callID}]
	e.mu.Unlock()
	if ch == nil {
		return fmt.Errorf("%w: %s in run %q of %s", ErrNoPendingToolCall, callID, runID, session)
	}
	select {
	case ch <- answer:
		return nil
	default:
		return fmt.Errorf("%w: %s in run %q of %s was already answered", ErrNoPendingToolCall, callID, runID, session)
	}
}

// Interrupt asks the running turn runID of the session (SessionKey) to stop;
// it reports whether such a turn was running. An interrupt that arrives while
// the turn is still being started is delivered once it has started.
func (e *Engine) Interrupt(session, runID string) bool {
	return e.interrupt(session, func(a *activeRun) bool { return a.runID == runID })
}

// interruptSession interrupts the running turn of the session, whatever its
// runId; it reports whether one was running.
func (e *Engine) interruptSession(session string) bool {
	return e.interrupt(session, func(*activeRun) bool { return true })
}

func (e *Engine) interrupt(session string, match func(*activeRun) bool) bool {
	e.mu.Lock()
	a := e.active[session]
	if a == nil || !match(a) {
		e.mu.Unlock()
		return false
	}
	t := a.turn
	if t == nil {
		a.interrupted = true
	}
	e.mu.Unlock()
	if t != nil {
		t.Interrupt()
	}
	return true
}

// validateAgainstSession refuses a turn whose attempt contradicts the
// session (SessionMismatch), counting the refusal.
func validateAgainstSession(ns string, sess *v1alpha1.AgentSession, req *TurnRequest) error {
	err := selection.ValidateAgainstSession(sess, &req.Attempt)
	var se *selection.Error
	if errors.As(err, &se) {
		recordRefused(labelsOf(ns, selection.Decision{}), se.Code)
		return turnError(se)
	}
	return err
}

// Turn executes one prepared turn on the session ns/name and streams its
// events to sink, in this order of steps:
//
//  1. the AgentSession is fetched and is authoritative: a contradicting
//     attempt fails with SessionMismatch, nothing executed;
//  2. a runId the journal knows is not run again: a finished (or failed)
//     run's recorded events are replayed to sink, a running one is followed
//     live, a reused runId with another body is RunIdConflict;
//  3. one turn at a time per session (in-memory lock, waiting in order);
//  4. selection: the `selected` event; a fail-closed decision and the
//     embedded `openclaw` runtime (EmbeddedRuntimeSelected) touch no
//     runtime; an expected runtime artifact is checked against the chosen
//     server (ArtifactMismatch); the server is the session's bound one or
//     the least-loaded ready one (NativeThreadLost, HarnessUnavailable,
//     HarnessAtCapacity); the pooled connection is opened with the floor.
//     Failures of this step are not journaled: nothing ran, so the same
//     runId may be retried;
//  5. the run is journaled, status.activeTurn applied, and the adapter runs
//     the turn on the bound native thread (thread/resume) or a new one
//     (none bound, or spec.resetGeneration ≠ nativeBinding.generation: a
//     transcript reset marker is written). Every adapter event goes to the
//     journal, the transcript mirror (transcript events) and sink, in
//     order; host tool calls wait for SubmitToolResult; a dropped
//     connection is reattached on a new one, never replayed; a server that
//     stays gone ends the turn with `error` (replaySafe false);
//  6. the `result` event (or `error`), the transcript fsync, and the
//     dispatcher's part of the status: pin, lastSelection, nativeBinding,
//     lastTurn, counters, activeTurn cleared.
//
// Cancelling ctx interrupts the turn (terminal aborted). A request without
// runId gets a generated one (req.RunID is set). Turn returns nil for a
// completed turn (whatever its terminal kind), a *TurnError for a turn that
// failed or was refused (after emitting it as the `error` event, except for
// SessionMismatch and RunIdConflict, which are request errors answered
// before any event), the journal's *RunPrunedError (a known runId whose
// payload retention pruned) and *RetentionLimitError (the namespace's
// journal remembers as many runs as it may; nothing runs) before any event,
// and other errors for failed lookups and writes.
func (e *Engine) Turn(ctx context.Context, ns, name string, req *TurnRequest, sink Sink) error {
	if sink == nil {
		sink = func(string, json.RawMessage) {}
	}
	if err := req.Validate(); err != nil {
		return err
	}
	if req.RunID == "" {
		req.RunID = newRunID()
	}
	sess, err := e.session(ctx, ns, name)
	if err != nil {
		return err
	}
	session := SessionKey(sess)
	if err := validateAgainstSession(ns, sess, req); err != nil {
		return err
	}
	digest, err := req.Digest()
	if err != nil {
		return err
	}
	switch _, err := e.journal.Lookup(session, req.RunID); {
	case err == nil:
		return e.follow(ctx, session, req.RunID, digest, sink)
	case errors.Is(err, journal.ErrRunPayloadPruned):
		return err // known and ended; retention kept only its tombstone: never run again
	}
	if err := e.journal.Admit(session); err != nil {
		// The namespace's journal holds as many runs as it may remember:
		// a new runId could not be remembered, so nothing runs.
		recordRefused(labelsOf(ns, selection.Decision{}), selection.CodeRetentionLimitReached)
		return err
	}

	lockCtx, stopWaiting := queueContext(ctx)
	waiting := turnsWaiting.WithLabelValues(ns)
	waiting.Inc()
	unlock, err := e.locks.lock(lockCtx, session)
	waiting.Dec()
	stopWaiting()
	if err != nil {
		return fmt.Errorf("dispatch: wait for the session lock of %s: %w", session, err)
	}
	defer unlock()
	if _, err := e.journal.Lookup(session, req.RunID); err == nil {
		unlock()
		return e.follow(ctx, session, req.RunID, digest, sink)
	}
	// The session may have changed while this turn waited for the lock —
	// or been deleted and created again under its name.
	if sess, err = e.session(ctx, ns, name); err != nil {
		return err
	}
	if SessionKey(sess) != session {
		return fmt.Errorf("%w: %s/%s was deleted while the turn waited", ErrSessionNotFound, ns, name)
	}
	if !sess.DeletionTimestamp.IsZero() {
		// Its journal is being deleted (FinalizerReconciler): nothing may
		// start on it any more.
		return fmt.Errorf("%w: %s/%s is being deleted", ErrSessionNotFound, ns, name)
	}
	if err := validateAgainstSession(ns, sess, req); err != nil {
		return err
	}

	p, terr := e.prepare(ctx, sess, req, sink)
	if terr != nil {
		sink(EventError, mustJSON(terr))
		return terr
	}
	return e.execute(ctx, session, sess, req, digest, p, sink)
}

// prepared is a turn ready to run: its decision, harness, server and
// connection.
type prepared struct {
	decision selection.Decision
	harness  *v1alpha1.AgentHarness
	server   Server
	conn     serverConn
	client   *appserver.Client
	rebind   bool
	pod      bool // the server is a managed pod (not external)
}

// prepare is step 4 of Turn: nothing it does starts a thread or a turn.
func (e *Engine) prepare(ctx context.Context, sess *v1alpha1.AgentSession, req *TurnRequest, sink Sink) (_ *prepared, terr *TurnError) {
	var d selection.Decision
	defer func() {
		if terr != nil {
			recordRefused(labelsOf(sess.Namespace, d), terr.Code)
		}
	}()
	snap, err := snapshot.For(ctx, e.reader, sess)
	if err != nil {
		return nil, newTurnError(selection.CodeHarnessUnavailable, selection.ScopeHarness, "read the selection inputs: %v", err)
	}
	d = selection.Select(snap, &req.Attempt)
	e.logDecision(sess, req.RunID, d)
	sink(EventSelected, mustJSON(d))
	if d.Error != nil {
		return nil, turnError(d.Error)
	}
	if d.HarnessID == "" || d.HarnessRef == nil || d.Runtime == string(v1alpha1.RuntimeOpenClaw) {
		return nil, newTurnError(selection.CodeEmbeddedRuntimeSelected, selection.ScopeHarness,
			"The decision for this turn is the embedded openclaw runtime (reason %s); run it on the gateway's embedded runtime.", d.Reason)
	}
	if exp := req.ExpectedRuntimeArtifact; exp != nil && exp.HarnessID != "" && selection.NormalizeRuntimeID(exp.HarnessID) != d.HarnessID {
		return nil, newTurnError(selection.CodeArtifactMismatch, selection.ScopeHarness,
			"Verified inference requires agent harness %s, but %s was selected.", exp.HarnessID, d.HarnessID)
	}
	h := &v1alpha1.AgentHarness{}
	if err := e.reader.Get(ctx, client.ObjectKey{Namespace: d.HarnessRef.Namespace, Name: d.HarnessRef.Name}, h); err != nil {
		return nil, newTurnError(selection.CodeHarnessUnavailable, selection.ScopeHarness,
			"read AgentHarness %s/%s: %v", d.HarnessRef.Namespace, d.HarnessRef.Name, err)
	}
	if h.Spec.Adapter != v1alpha1.AdapterCodexAppServer {
		return nil, newTurnError(selection.CodeHarnessUnsupported, selection.ScopeHarness,
			"AgentHarness %s/%s uses adapter %q, which this dispatcher cannot drive.", h.Namespace, h.Name, h.Spec.Adapter)
	}

	binding := sess.Status.NativeBinding
	rebind := binding == nil || binding.Generation != sess.Spec.ResetGeneration
	if terr := trustedBinding(sess); terr != nil {
		return nil, terr
	}
	if !rebind {
		// A reset starts a new transcript; otherwise a full one refuses the
		// turn before it starts, instead of interrupting it mid-answer.
		session := SessionKey(sess)
		full, err := e.journal.TranscriptFull(session)
		if err != nil {
			return nil, newTurnError(selection.CodeHarnessUnavailable, "", "read the transcript mirror of AgentSession %s: %v", session, err)
		}
		if full {
			return nil, newTurnError(selection.CodeTranscriptLimitExceeded, "",
				"the transcript mirror of AgentSession %s is full; reset the session (/reset bumps spec.resetGeneration) to start a new one", session)
		}
	}
	pods, err := e.serverPods(ctx, h, d.HarnessID)
	if err != nil {
		return nil, newTurnError(selection.CodeHarnessUnavailable, selection.ScopeHarness, "list the app-server pods: %v", err)
	}
	if binding != nil && !rebind && h.Spec.External != nil && binding.Pod != ExternalServerName {
		return nil, newTurnError(selection.CodeNativeThreadLost, "",
			"app-server pod %s, where this session's native thread lived, no longer serves AgentHarness %s/%s; reset the session (/reset bumps spec.resetGeneration) to start a new thread",
			binding.Pod, h.Namespace, h.Name)
	}
	srv, serr := PickServer(h, pods, binding, rebind)
	if serr != nil {
		return nil, turnError(serr)
	}
	if terr := checkArtifact(h, srv, req.ExpectedRuntimeArtifact, d.HarnessID); terr != nil {
		return nil, terr
	}
	conn, err := e.serverConn(ctx, h, srv)
	if err != nil {
		return nil, newTurnError(selection.CodeHarnessUnavailable, selection.ScopeHarness, "%v", err)
	}
	p := &prepared{decision: d, harness: h, server: srv, conn: conn, rebind: rebind, pod: h.Spec.External == nil}
	c, err := e.open(ctx, conn)
	if err != nil {
		var verr *appserver.VersionError
		if errors.As(err, &verr) {
			return nil, newTurnError(selection.CodeVersionBelowFloor, selection.ScopeHarness,
				"app-server %s of AgentHarness %s/%s: %v", srv.Name, h.Namespace, h.Name, verr)
		}
		return nil, newTurnError(selection.CodeHarnessUnavailable, selection.ScopeHarness,
			"connect to app-server %s of AgentHarness %s/%s: %v", srv.Name, h.Namespace, h.Name, err)
	}
	p.client = c
	return p, nil
}

// checkArtifact refuses a turn that expects a runtime artifact unless the
// chosen server is attested and runs exactly that artifact.
func checkArtifact(h *v1alpha1.AgentHarness, srv Server, exp *ExpectedRuntimeArtifact, harnessID string) *TurnError {
	if exp == nil {
		return nil
	}
	att := meta.FindStatusCondition(h.Status.Conditions, v1alpha1.HarnessConditionAttested)
	art := h.Status.RuntimeArtifact
	switch {
	case srv.Name == ExternalServerName || h.Spec.External != nil:
		return newTurnError(selection.CodeArtifactMismatch, selection.ScopeHarness,
			"Verified inference requires an attested runtime artifact, but agent harness %s is an external server, which is not attested.", harnessID)
	case att == nil || att.Status != metav1.ConditionTrue || art == nil:
		return newTurnError(selection.CodeArtifactMismatch, selection.ScopeHarness,
			"Verified inference requires an attested runtime artifact, but agent harness %s is not attested.", harnessID)
	case (exp.ID != "" && exp.ID != art.ID) || (exp.Fingerprint != "" && exp.Fingerprint != art.Fingerprint):
		return newTurnError(selection.CodeArtifactMismatch, selection.ScopeHarness,
			"Verified inference requires runtime artifact %s (%s), but server %s of agent harness %s runs %s (%s).",
			exp.ID, exp.Fingerprint, srv.Name, harnessID, art.ID, art.Fingerprint)
	}
	for _, s := range h.Status.Servers {
		if s.Name == srv.Name {
			return nil
		}
	}
	return newTurnError(selection.CodeArtifactMismatch, selection.ScopeHarness,
		"Verified inference requires an attested runtime artifact, but server %s of agent harness %s is not attested yet.", srv.Name, harnessID)
}

// runCtx is the state of one executing turn.
type runCtx struct {
	session       string
	runID         string
	run           *journal.Run
	sink          Sink
	turn          *codex.Turn
	transcriptErr error
	labels        turnLabels // the turn's metric labels
	started       time.Time
	partialSeen   bool // the time to the first partial is recorded
}

// execute is steps 5 and 6 of Turn.
func (e *Engine) execute(ctx context.Context, session string, sess *v1alpha1.AgentSession, req *TurnRequest,
	digest [32]byte, p *prepared, sink Sink) error {
	run, outcome, err := e.journal.Begin(session, req.RunID, digest)
	if err != nil {
		var conflict *journal.RunConflictError
		if errors.As(err, &conflict) {
			recordRefused(labelsOf(sess.Namespace, p.decision), selection.CodeRunIDConflict)
			return RunIDConflict(session, req.RunID)
		}
		return fmt.Errorf("dispatch: journal: %w", err)
	}
	if outcome != journal.BeginNew { // not reachable under the session lock
		return e.follow(ctx, session, req.RunID, digest, sink)
	}
	started := metav1.Now()
	rc := &runCtx{session: session, runID: req.RunID, run: run, sink: sink,
		labels: labelsOf(sess.Namespace, p.decision), started: started.Time}
	if _, err := run.Append(EventSelected, mustJSON(p.decision)); err != nil {
		e.log.Error(err, "journal append failed", "session", session, "runId", req.RunID)
	}

	d := p.decision
	timeout := e.opts.DefaultTurnTimeout
	if req.TimeoutMs > 0 {
		timeout = time.Duration(req.TimeoutMs) * time.Millisecond
	}
	deadline := started.Add(timeout)
	st := e.current(sess)
	st.LastSelection = lastSelection(d, req.RunID)
	st.ActiveTurn = &v1alpha1.ActiveTurn{RunID: req.RunID, StartedAt: started, Deadline: metav1.NewTime(deadline)}
	if err := e.apply(ctx, sess, st); err != nil {
		e.log.Error(err, "apply activeTurn failed", "session", session, "runId", req.RunID)
	}

	_, model := selection.SplitModel("", sess.Spec.Model)
	threadID := ""
	if !p.rebind && sess.Status.NativeBinding != nil {
		threadID = sess.Status.NativeBinding.ThreadID
	}
	if p.rebind && sess.Status.NativeBinding != nil {
		if err := e.journal.ResetTranscript(session, sess.Spec.ResetGeneration); err != nil {
			e.log.Error(err, "transcript reset marker failed", "session", session)
		}
	}
	root := e.workspaceRoot(p.client)
	in := adapter.TurnInput{
		Model:                 model,
		Cwd:                   workDir(root, sess),
		DeveloperInstructions: req.ExtraSystemPrompt,
		ThinkLevel:            req.ThinkLevel,
		Prompt:                req.Prompt,
		Images:                req.Images,
		Tools:                 req.hostTools(),
		DisableTools:          req.DisableTools,
		ToolTimeout:           time.Duration(req.ToolTimeoutMs) * time.Millisecond,
		Deadline:              deadline,
		ThreadID:              threadID,
	}
	if p.pod {
		in.Sandbox = e.opts.PodSandbox
	}
	if tp := d.ToolPolicy; tp != nil {
		in.Restricted = tp.Restricted
		in.SafeDeniedTools = tp.SafeDeniedTools
	}
	hooks := adapter.Hooks{
		Emit: func(ev adapter.Event) { e.relay(rc, ev) },
		AnswerTool: func(ctx context.Context, call adapter.ToolCall) (adapter.ToolAnswer, error) {
			return e.awaitTool(ctx, rc, call)
		},
	}

	res, terr := e.drive(ctx, rc, p, in, hooks)

	// Step 6.
	finished := metav1.Now()
	st = e.current(sess)
	st.ActiveTurn = nil
	st.LastSelection = lastSelection(d, req.RunID)
	counters := st.Counters
	if counters == nil {
		counters = &v1alpha1.SessionCounters{}
	}
	counters.Turns++
	last := &v1alpha1.LastTurn{RunID: req.RunID, StartedAt: started, FinishedAt: finished}
	threadID = ""
	if rc.turn != nil {
		threadID = rc.turn.ThreadID()
	}
	if threadID != "" {
		st.AgentHarnessID = d.HarnessID
		st.NativeBinding = &v1alpha1.NativeBinding{ThreadID: threadID, Pod: p.server.Name, Generation: sess.Spec.ResetGeneration,
			SessionUID: string(sess.UID), HarnessNamespace: p.harness.Namespace, HarnessName: p.harness.Name}
	}
	if terr == nil && rc.transcriptErr != nil {
		terr = newTurnError(selection.CodeTranscriptLimitExceeded, "", "%v", rc.transcriptErr).touched(false)
	}
	recordFinished(rc.labels, res, terr, finished.Sub(started.Time))
	if terr != nil {
		last.Outcome = v1alpha1.TurnFailed
		last.ErrorCode = string(terr.Code)
		counters.FailedTurns++
		if res != nil {
			addUsage(counters, res.Usage)
		}
		e.emit(rc, EventError, mustJSON(terr))
		if err := run.Finish(journal.StateFailed, mustJSON(terr)); err != nil {
			e.log.Error(err, "journal finish failed", "session", session, "runId", req.RunID)
		}
	} else {
		last.Outcome = outcomeOf(res.Terminal.Kind)
		last.Classification = v1alpha1.TerminalClassification(res.Classification)
		if last.Outcome != v1alpha1.TurnSucceeded {
			counters.FailedTurns++
		}
		addUsage(counters, res.Usage)
		out := ResultEvent{RunID: req.RunID, TurnResult: *res, AgentHarnessID: d.HarnessID}
		if req.CaptureRuntimeArtifact && checkArtifact(p.harness, p.server, &ExpectedRuntimeArtifact{}, d.HarnessID) == nil {
			out.RuntimeArtifact = p.harness.Status.RuntimeArtifact.DeepCopy()
		}
		payload := mustJSON(out)
		e.emit(rc, EventResult, payload)
		if err := run.Finish(journal.StateFinished, payload); err != nil {
			e.log.Error(err, "journal finish failed", "session", session, "runId", req.RunID)
		}
	}
	if err := e.journal.SyncTranscript(session); err != nil {
		e.log.Error(err, "transcript sync failed", "session", session)
	}
	st.LastTurn = last
	st.Counters = counters
	// The status write must not be lost to a client that went away.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := e.apply(wctx, sess, st); err != nil {
		e.log.Error(err, "apply turn status failed", "session", session, "runId", req.RunID)
		if terr == nil {
			return fmt.Errorf("dispatch: turn %q ran, but its status was not written: %w", req.RunID, err)
		}
	}
	if terr != nil {
		return terr
	}
	return nil
}

// drive runs the adapter turn to its end, reattaching across dropped
// connections. A nil *TurnError comes with a result.
func (e *Engine) drive(ctx context.Context, rc *runCtx, p *prepared, in adapter.TurnInput, hooks adapter.Hooks) (*adapter.TurnResult, *TurnError) {
	// The run is interruptible from the moment it starts being started.
	a := &activeRun{runID: rc.runID}
	e.mu.Lock()
	e.active[rc.session] = a
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.active, rc.session)
		e.mu.Unlock()
	}()

	t, err := codex.Start(ctx, p.client, in, hooks)
	var detached *codex.DetachedError
	switch {
	case err == nil:
	case t != nil && errors.As(err, &detached):
	default:
		var se *selection.Error
		if errors.As(err, &se) {
			// The adapter refused the turn before it started: a fail-closed
			// decision (its turn is counted when execute records it).
			recordFailClosed(rc.labels, se.Code)
			return nil, turnError(se).touched(true)
		}
		if errors.Is(err, adapter.ErrInvalidInput) {
			return nil, newTurnError(selection.CodeHarnessUnsupported, selection.ScopeHarness, "%v", err).touched(true)
		}
		if errors.Is(err, codex.ErrThreadNotFound) {
			// Retrying cannot help: the server will never have the thread.
			return nil, newTurnError(selection.CodeNativeThreadLost, "",
				"app-server %s does not have this session's native thread %s (it was lost, or the server's native home was replaced); reset the session (/reset bumps spec.resetGeneration) to start a new thread",
				p.server.Name, in.ThreadID).touched(true)
		}
		return nil, newTurnError(selection.CodeHarnessUnavailable, selection.ScopeHarness,
			"start the turn on app-server %s: %v", p.server.Name, err).touched(true)
	}
	rc.turn = t
	e.mu.Lock()
	a.turn = t
	interrupted := a.interrupted
	e.mu.Unlock()
	if interrupted {
		t.Interrupt()
	}

	for {
		if err == nil {
			var res *adapter.TurnResult
			res, err = t.Wait(ctx)
			if err == nil {
				return res, nil
			}
		}
		if !errors.As(err, &detached) {
			t.Abandon()
			return nil, newTurnError(selection.CodeHarnessUnavailable, "",
				"the turn on app-server %s ended without a result: %v", p.server.Name, err).touched(false)
		}
		e.log.Info("app-server connection lost during a turn; reattaching", "session", rc.session, "runId", rc.runID, "server", p.server.Name)
		err = e.reattach(ctx, t, p)
		if errors.Is(err, codex.ErrTurnNotStarted) {
			return nil, newTurnError(selection.CodeHarnessUnavailable, selection.ScopeHarness,
				"the connection to app-server %s dropped before the turn started; nothing ran", p.server.Name).touched(true)
		}
		if err != nil {
			t.Abandon()
			return nil, newTurnError(selection.CodeHarnessUnavailable, "",
				"app-server %s is gone while the turn was running; the turn is not replayed (the next turn resumes the thread once the server is back): %v",
				p.server.Name, err).touched(false)
		}
	}
}

// reattach reconnects to the turn's server and reattaches the turn, retrying
// until Options.ReattachTimeout.
func (e *Engine) reattach(ctx context.Context, t *codex.Turn, p *prepared) error {
	deadline := time.Now().Add(e.opts.ReattachTimeout)
	backoff := 200 * time.Millisecond
	for {
		c, err := e.open(ctx, p.conn)
		if err == nil {
			err = t.Reattach(ctx, c)
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

// relay sends one adapter event to the journal, the transcript mirror and
// the sink.
func (e *Engine) relay(rc *runCtx, ev adapter.Event) {
	if ev.Type == adapter.EventPartial && !rc.partialSeen {
		rc.partialSeen = true
		recordFirstPartial(rc.labels, time.Since(rc.started))
	}
	payload := mustJSON(ev.Payload())
	if ev.Type == adapter.EventTranscript && rc.transcriptErr == nil {
		if err := e.journal.AppendTranscript(rc.session, payload); err != nil {
			rc.transcriptErr = err
			if rc.turn != nil {
				rc.turn.Interrupt()
			}
		}
	}
	if ev.Type == adapter.EventToolCall && ev.ToolCall != nil {
		// Registered before the client hears of the call, so an answer can
		// never arrive before its waiter.
		e.mu.Lock()
		key := toolKey{rc.session, rc.runID, ev.ToolCall.CallID}
		if e.tools[key] == nil {
			e.tools[key] = make(chan adapter.ToolAnswer, 1)
		}
		e.mu.Unlock()
	}
	e.emit(rc, string(ev.Type), payload)
}

func (e *Engine) emit(rc *runCtx, typ string, payload json.RawMessage) {
	if _, err := rc.run.Append(typ, payload); err != nil {
		e.log.Error(err, "journal append failed", "session", rc.session, "runId", rc.runID, "event", typ)
	}
	rc.sink(typ, payload)
}

// awaitTool waits for the client's answer to a host tool call.
func (e *Engine) awaitTool(ctx context.Context, rc *runCtx, call adapter.ToolCall) (adapter.ToolAnswer, error) {
	key := toolKey{rc.session, rc.runID, call.CallID}
	e.mu.Lock()
	ch := e.tools[key]
	if ch == nil {
		ch = make(chan adapter.ToolAnswer, 1)
		e.tools[key] = ch
	}
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.tools, key)
		e.mu.Unlock()
	}()
	select {
	case a := <-ch:
		return a, nil
	case <-ctx.Done():
		return adapter.ToolAnswer{}, fmt.Errorf("dispatch: host tool %s (%s) got no answer: %w", call.Tool, call.CallID, ctx.Err())
	}
}
