package engine

import (
	"context"
	"errors"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/modelcred"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/platform/netguard"
	"github.com/openclaw/harness-operator/internal/policy/snapshot"
)

// Defaults of Options.
const (
	// DefaultFieldManager is the dispatcher's server-side apply field manager
	// for its part of the AgentSession status (docs/api.md, AgentSession).
	DefaultFieldManager = "harness-operator-dispatcher"
	// DefaultTurnTimeout bounds a turn whose request has no timeoutMs.
	DefaultTurnTimeout = 10 * time.Minute
	// DefaultPodSandbox is the native sandbox of threads on server pods: the
	// pod is the sandbox (docs/security.md).
	DefaultPodSandbox = "danger-full-access"
	// DefaultReattachTimeout is how long the engine tries to reconnect to the
	// server of a turn whose connection dropped before it declares the server
	// gone.
	DefaultReattachTimeout = 30 * time.Second
	// workspacesDir is the directory under the server's native home (its
	// CODEX_HOME) that holds the per-session working directories.
	workspacesDir = "workspaces"
	// DefaultLeaseTTL is how long a session's lease lasts without renewal:
	// a dispatcher that dies mid-turn holds its sessions this long.
	DefaultLeaseTTL = 30 * time.Second
	// dialTimeout bounds one dial and handshake.
	dialTimeout = 15 * time.Second
)

// Options tune an Engine; the zero value takes the defaults.
type Options struct {
	// FieldManager is the field manager of status writes (DefaultFieldManager).
	FieldManager string
	// DefaultTurnTimeout bounds turns without timeoutMs (DefaultTurnTimeout).
	DefaultTurnTimeout time.Duration
	// PodSandbox is the sandbox of threads on server pods (DefaultPodSandbox);
	// external servers keep their own configured mode.
	PodSandbox string
	// ExternalDial is the policy every dial of an external app-server passes
	// (refused cluster ranges, metadata and link-local addresses, checked on
	// each resolved address). The zero Policy refuses loopback too.
	ExternalDial netguard.Policy
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
	// Owner names this engine to the store: the holder of the session
	// leases it takes. It must be the same after a restart of the same
	// dispatcher (Recover ends the runs of its previous process) and differ
	// between dispatchers sharing a store. Empty means "dispatcher".
	Owner string
	// ModelCredentials seals the model gateway's credentials for turns on
	// harnesses with spec.modelGateway (derived from the turn-token key:
	// modelcred.DeriveKey). Nil refuses such turns, HarnessUnavailable.
	ModelCredentials *modelcred.Key
	// LeaseTTL is how long a session's lease lasts without renewal
	// (DefaultLeaseTTL); a running turn renews it every third of it.
	LeaseTTL time.Duration
	// ActiveTurnDelay is how long a turn runs before status.activeTurn is
	// written (DefaultActiveTurnDelay; ActiveTurnImmediately writes it as
	// soon as the native turn started). A shorter turn makes one status
	// write, at its end (activeturn.go).
	ActiveTurnDelay time.Duration
	// APIReader, when set, reads an AgentSession from the API server when
	// the cached one contradicts a turn's model alone (freshSession): a
	// gateway changes spec.model just before such a turn, and the cache may
	// not have seen the change yet.
	APIReader client.Reader
	// SelectionViews, when set, keeps each namespace's selection inputs
	// between turns (selection.go): the reader must then be the informer
	// cache whose AgentHarness, RuntimePolicy and Namespace events reach
	// it. Nil reads them on every turn.
	SelectionViews *snapshot.Views
	// SharedStore says other dispatchers share the store (PostgreSQL): an
	// answer for a turn this engine does not run is forwarded through the
	// run's inbox (inbox.go). Alone on its store, an engine runs every turn
	// that runs, and refuses such an answer at once.
	SharedStore bool
}

// podSandbox is the native sandbox of threads on h's pods: Codex's
// workspace-write when the harness asks for Codex's sandbox (its pods only
// start where the sandbox works, so this never runs unsandboxed), else
// Options.PodSandbox.
func (e *Engine) podSandbox(h *v1alpha1.AgentHarness) string {
	if sb := h.Spec.AppServer.Sandbox; sb != nil && sb.Mode == v1alpha1.SandboxModeWorkspaceWrite {
		return string(appserver.SandboxWorkspaceWrite)
	}
	return e.opts.PodSandbox
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
	if o.Owner == "" {
		o.Owner = "dispatcher"
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	return o
}

// Engine executes prepared turns (docs/dispatcher-api.md).
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
	reader client.Reader
	writer client.Client
	store  store.Store
	opts   Options
	log    logr.Logger

	// ctx is the context turns run on once journaled (not their callers'):
	// Drain ends it when the shutdown grace is over.
	ctx    context.Context
	cancel context.CancelFunc

	pool   connPool    // app-server connections
	live   liveTurns   // running turns and their host tool calls
	status statusCache // the last status applied per session UID
}

// New returns an Engine. reader serves the objects the engine reads (see
// Engine), writer applies AgentSession status, s is the store of its runs,
// leases, transcripts and reservations (internal/dispatcher/store; the journal).
func New(reader client.Reader, writer client.Client, s store.Store, opts Options) *Engine {
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	return &Engine{reader: reader, writer: writer, store: s, opts: opts, log: opts.Logger, ctx: ctx, cancel: cancel}
}

// Close ends the turns still running (as Drain does once its grace is over)
// and closes the pooled app-server connections.
func (e *Engine) Close() {
	e.cancel()
	e.live.wait(drainAfterCancel)
	e.pool.closeAll()
}

// drainAfterCancel bounds how long Drain and Close wait for interrupted turns
// to record their end.
const drainAfterCancel = 10 * time.Second

// Drain waits until every running turn has ended, or ctx ends (the shutdown
// grace is over): then each running turn is interrupted on its app-server (a
// native turn does not keep spending tokens after the dispatcher is gone),
// its context ends (a host tool call still waiting for its client stops
// waiting), and Drain waits up to 10 s more for the turns to record their
// end. It reports whether every turn ended.
func (e *Engine) Drain(ctx context.Context) bool {
	if e.live.waitCtx(ctx) {
		return true
	}
	e.live.interruptAll()
	e.cancel()
	return e.live.wait(drainAfterCancel)
}

// ErrSessionNotFound is returned (wrapped) for a turn of an AgentSession that
// does not exist, or that is being deleted (a turn that waited for the
// session lease while the dispatcher finalizer deleted its journal).
var ErrSessionNotFound = errors.New("dispatch: AgentSession not found")

// ErrNoPendingToolCall is returned by SubmitToolResult when no host tool call
// with that id is waiting for an answer.
var ErrNoPendingToolCall = errors.New("dispatch: no pending host tool call")

// Decide returns the selection decision for req on the session without side
// effects (turn-only fields are ignored). A SessionMismatch is the decision's
// error; the returned error is for lookups that failed.
func (e *Engine) Decide(ctx context.Context, ns, name string, req *wire.TurnRequest) (wire.Decision, error) {
	sess, err := e.session(ctx, ns, name)
	if err != nil {
		return wire.Decision{}, err
	}
	_, d, err := e.selectTurn(ctx, sess, &req.Attempt)
	return d, err
}

// SubmitToolResult answers the host tool call callID of the running turn
// runID of the session (SessionKey), as the client posted it. It returns
// ErrNoPendingToolCall when no such call waits (unknown, answered, timed
// out or its turn ended).
// The turn may run on another dispatcher sharing the store (inbox.go).
func (e *Engine) SubmitToolResult(session, runID, callID string, answer wire.ToolAnswer) error {
	err := e.live.answerTool(toolKey{session, runID, callID}, answer)
	if !errors.Is(err, ErrNoPendingToolCall) {
		return err
	}
	return e.forward(session, runID, store.InboxToolResult, callID, answer, err, ErrNoPendingToolCall)
}

// Interrupt asks the running turn runID of the session (SessionKey) to stop;
// it reports whether such a turn runs in this engine, or runs on another
// dispatcher sharing the store and was asked through the run's inbox. A
// turn is interruptible from the moment Start returns its run: an interrupt
// that arrives while it is still being started is delivered once it has
// started.
func (e *Engine) Interrupt(session, runID string) bool {
	if e.live.interrupt(session, func(r *liveRun) bool { return r.runID == runID }) {
		return true
	}
	err := e.forward(session, runID, store.InboxInterrupt, store.InterruptKey, struct{}{}, errNotRunning, errAlreadyAsked)
	return err == nil || errors.Is(err, errAlreadyAsked)
}

var (
	// errNotRunning: the run runs neither here nor on another dispatcher.
	errNotRunning = errors.New("dispatch: the run is not running")
	// errAlreadyAsked: an interrupt of the run was already posted to its inbox.
	errAlreadyAsked = errors.New("dispatch: the interrupt was already asked")
)

// interruptSession interrupts the running turn of the session, whatever its
// runId; it reports whether one was running.
func (e *Engine) interruptSession(session string) bool {
	return e.live.interrupt(session, func(*liveRun) bool { return true })
}
