package codex

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/policy/toolpolicy"
)

// Bounds of the adapter's own protocol steps.
const (
	// interruptGrace bounds waiting for turn/completed after turn/interrupt.
	interruptGrace = 15 * time.Second
	// cleanupTimeout bounds best-effort requests after the turn
	// (thread/unsubscribe).
	cleanupTimeout = 5 * time.Second
	// handlerGrace bounds waiting for host tool handlers once the turn ended
	// (AnswerTool must return when its context ends).
	handlerGrace = 5 * time.Second
	// maxInterruptResends bounds the turn/interrupts sent again while Codex
	// goes on with a turn it was asked to stop (one per item it starts).
	maxInterruptResends = 3
)

var (
	errAborted = errors.New("the turn was interrupted")
	errTimeout = errors.New("the turn's deadline passed")
)

// Turn is one turn on a Codex app-server. Start returns it running; Wait
// relays its events until it ends; after a *DetachedError, Reattach moves it
// to a new connection and Wait continues. Interrupt may be called from any
// goroutine.
type Turn struct {
	in    adapter.TurnInput
	hooks adapter.Hooks

	// Thread parameters, re-sent on Reattach.
	config map[string]any
	effort string

	offered    map[string]bool // host tools offered in this turn
	safeDenied map[string]bool // canonical ids

	waitMu sync.Mutex // one Wait or Reattach at a time

	mu       sync.Mutex // guards everything below and serializes Emit
	c        *appserver.Client
	th       *appserver.Thread
	at       *appserver.Turn // nil while detached
	threadID string
	turnID   string
	publicID atomic.Value // turnID for ID(), readable while t.mu is held
	sentAt   time.Time    // when turn/start was sent
	connGen  int          // connection generation: 0, then +1 per Reattach
	warnings []string
	seed     *Seed // what this turn's new thread was seeded with; nil for none

	items      map[string]*itemState
	texts      []string // completed assistant messages
	plans      []string
	planSteps  string // rendered last turn/plan/updated
	reasoning  []string
	usageSeen  bool
	usageBase  appserver.TokenBreakdown
	usageLast  appserver.TokenBreakdown
	terminals  map[string]bool // call ids with a reported tool_terminal
	calls      map[string]*hostCall
	lastErr    *wire.ToolError
	media      []string
	hostMedia  []string // native artifacts among media (hostOwnedToolMediaUrls)
	requestSeq int
	native     nativeRequests                // approval and user-input requests
	pending    *appserver.TurnCompletedEvent // completion recovered by Reattach
	stopCause  error                         // errAborted or errTimeout once interrupting
	closing    bool                          // the turn is being completed: no new tool calls
	result     *wire.TurnResult

	promptSent    chan struct{} // closed once the prompt record was emitted
	promptOnce    sync.Once
	turnCtx       context.Context
	cancelTurn    context.CancelFunc
	interruptCh   chan struct{}
	interruptOnce sync.Once
	handlers      sync.WaitGroup
}

// itemState is what the relay remembers about one item.
type itemState struct {
	typ       string
	startGen  int  // connection generation that delivered item/started (-1: none)
	completed bool // item/completed relayed
	relayed   strings.Builder
}

// hostCall is one host tool call, shared by duplicate deliveries of the
// same call id.
type hostCall struct {
	done   chan struct{}
	result appserver.ToolResult
}

// Run is Start followed by Wait, for callers that do not reattach.
func Run(ctx context.Context, c *appserver.Client, in adapter.TurnInput, h adapter.Hooks) (*wire.TurnResult, error) {
	t, err := Start(ctx, c, in, h)
	if err != nil {
		return nil, err
	}
	return t.Wait(ctx)
}

// Start prepares and starts one turn on the connected app-server c:
//
//  1. validates the input (errors wrap adapter.ErrInvalidInput);
//  2. enforces the tool policy before any thread exists: a restricted turn
//     (Restricted or DisableTools) on a model whose native surface Codex
//     cannot isolate (CanIsolate), or a safe-denied tool that cannot be
//     removed (SafeDenyConfig), fails closed with a ToolPolicyUnenforceable
//     *wire.Error — no thread, no model request;
//  3. creates the working directory (fs/createDirectory), refuses an
//     images[].path outside it (confineImages), and starts the
//     thread (thread/start: bare model, cwd, the approvalMode's approvalPolicy, the
//     sandbox, developer instructions, reasoning effort, the offered host
//     tools as dynamicTools, the isolation config) or resumes ThreadID
//     (thread/resume with the same overrides; Codex keeps the dynamic tools
//     of thread/start, see the package doc), or re-seeds ReseedFrom and/or
//     GatewayMessages: a new thread with this turn's tools that continues
//     that conversation (Reseed), announced by a lifecycle/reseeded
//     agent_event;
//  4. sends turn/start with the prompt and images and emits the transcript
//     records of the gateway's messages (marked gateway) and the prompt.
//
// When the connection ends after turn/start was sent, Start returns the Turn
// together with a *DetachedError: Reattach it. Any other error means no turn
// ran.
func Start(ctx context.Context, c *appserver.Client, in adapter.TurnInput, h adapter.Hooks) (*Turn, error) {
	if err := in.Validate(); err != nil {
		return nil, fmt.Errorf("codex: %w", err)
	}
	for i, tool := range in.Tools {
		if !wire.ToolNameRE.MatchString(tool.Name) {
			return nil, fmt.Errorf("codex: %w: tools[%d]: name %q must match %s", adapter.ErrInvalidInput, i, tool.Name, wire.ToolNameRE)
		}
	}
	switch appserver.SandboxMode(in.Sandbox) {
	case "", appserver.SandboxReadOnly, appserver.SandboxWorkspaceWrite, appserver.SandboxDangerFullAccess:
	default:
		return nil, fmt.Errorf("codex: %w: sandbox %q is not read-only, workspace-write or danger-full-access",
			adapter.ErrInvalidInput, in.Sandbox)
	}
	if _, err := ReasoningEffort(in.ThinkLevel, nil); err != nil {
		return nil, fmt.Errorf("codex: %w", err)
	}
	restricted := in.Restricted || in.DisableTools

	t := &Turn{
		in: in, hooks: h,
		offered:     map[string]bool{},
		safeDenied:  map[string]bool{},
		items:       map[string]*itemState{},
		terminals:   map[string]bool{},
		calls:       map[string]*hostCall{},
		native:      newNativeRequests(),
		promptSent:  make(chan struct{}),
		interruptCh: make(chan struct{}),
	}
	for _, id := range in.SafeDeniedTools {
		t.safeDenied[toolpolicy.Normalize(id)] = true
	}
	dynamic := offeredTools(in)
	for _, tool := range dynamic {
		t.offered[tool.Name] = true
	}

	// The tool-policy gate and the reasoning effort need the catalog.
	level, _ := ReasoningEffort(in.ThinkLevel, nil)
	var cat *ModelCatalog
	if restricted || len(in.SafeDeniedTools) > 0 || level != "" {
		var err error
		cat, err = LoadModelCatalog(ctx, c)
		if err != nil && (restricted || len(in.SafeDeniedTools) > 0) {
			return nil, fmt.Errorf("codex: tool policy: %w", err)
		}
	}
	switch {
	case restricted:
		if ok, reason := CanIsolate(in.Model, cat); !ok {
			return nil, unenforceableForModel("restricted turn cannot run on Codex: " + reason +
				"; run it on another runtime or use a model Codex does not know")
		}
		t.config = IsolationConfig()
	default:
		cfg, err := SafeDenyConfig(in.Model, cat, in.SafeDeniedTools)
		if err != nil {
			return nil, err
		}
		t.config = cfg
	}
	mcp, err := mcpConfig(in, restricted)
	if err != nil {
		return nil, err
	}
	if mcp != nil {
		t.config = merged(t.config, mcp)
	}
	auth, err := authConfig(ctx, c, in)
	if err != nil {
		return nil, err
	}
	if auth != nil {
		t.config = merged(t.config, auth)
	}
	effort, err := ReasoningEffort(in.ThinkLevel, cat.Efforts(in.Model))
	if err != nil {
		return nil, fmt.Errorf("codex: %w", err)
	}
	t.effort = effort

	if err := c.Call(ctx, "fs/createDirectory", map[string]any{"path": in.Cwd, "recursive": true}, nil); err != nil {
		return nil, fmt.Errorf("codex: create the working directory %s: %w", in.Cwd, err)
	}
	if err := confineImages(ctx, c, in.Cwd, in.Images); err != nil {
		return nil, err
	}

	t.turnCtx, t.cancelTurn = context.WithCancel(context.Background())
	th, err := t.openThread(ctx, c, dynamic)
	if err != nil {
		t.cancelTurn()
		return nil, err
	}
	t.c, t.th, t.threadID = c, th, th.ID

	if err := t.sendTurnStart(ctx); err != nil {
		if appserver.MayHaveSideEffects(err) {
			t.emitPrompt()
			return t, &DetachedError{ThreadID: t.threadID, Err: err}
		}
		t.cancelTurn()
		t.promptOnce.Do(func() { close(t.promptSent) })
		t.release(c, th)
		return nil, fmt.Errorf("codex: turn/start on thread %s: %w", t.threadID, err)
	}
	t.emitPrompt()
	return t, nil
}

// ThreadID is the turn's native thread.
func (t *Turn) ThreadID() string { return t.threadID }

// ID is the native turn id (empty while a detached turn/start is
// unanswered). It may be called from Hooks.Emit.
func (t *Turn) ID() string {
	id, _ := t.publicID.Load().(string)
	return id
}

// emit sends an event to the engine; t.mu must be held.
func (t *Turn) emit(ev adapter.Event) {
	if t.hooks.Emit != nil {
		t.hooks.Emit(ev)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func nonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out
}
