package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openclaw/harness-operator/internal/adapter"
	"github.com/openclaw/harness-operator/internal/appserver"
	"github.com/openclaw/harness-operator/internal/toolpolicy"
	"github.com/openclaw/harness-operator/internal/wire"
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
)

// toolNameRE is what the Responses API accepts as a function name.
var toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

var (
	errAborted = errors.New("the turn was interrupted")
	errTimeout = errors.New("the turn's deadline passed")
)

// startOptions are knobs the operator does not expose; tests use them to
// reach protocol paths (approval requests need a policy other than never;
// plan items and user-input requests need plan mode).
type startOptions struct {
	approvalPolicy    appserver.ApprovalPolicy
	collaborationMode json.RawMessage
}

// Turn is one turn on a Codex app-server. Start returns it running; Wait
// relays its events until it ends; after a *DetachedError, Reattach moves it
// to a new connection and Wait continues. Interrupt may be called from any
// goroutine.
type Turn struct {
	in    adapter.TurnInput
	hooks adapter.Hooks
	opts  startOptions

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
	hostOwned  []string
	requestSeq int
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
//  3. creates the working directory (fs/createDirectory) and starts the
//     thread (thread/start: bare model, cwd, approvalPolicy never, the
//     sandbox, developer instructions, reasoning effort, the offered host
//     tools as dynamicTools, the isolation config) or resumes ThreadID
//     (thread/resume with the same overrides; Codex keeps the dynamic tools
//     of thread/start, see the package doc);
//  4. sends turn/start with the prompt and images and emits the prompt's
//     transcript record.
//
// When the connection ends after turn/start was sent, Start returns the Turn
// together with a *DetachedError: Reattach it. Any other error means no turn
// ran.
func Start(ctx context.Context, c *appserver.Client, in adapter.TurnInput, h adapter.Hooks) (*Turn, error) {
	return start(ctx, c, in, h, startOptions{})
}

func start(ctx context.Context, c *appserver.Client, in adapter.TurnInput, h adapter.Hooks, opts startOptions) (*Turn, error) {
	if err := in.Validate(); err != nil {
		return nil, fmt.Errorf("codex: %w", err)
	}
	for i, tool := range in.Tools {
		if !toolNameRE.MatchString(tool.Name) {
			return nil, fmt.Errorf("codex: %w: tools[%d]: name %q must match %s", adapter.ErrInvalidInput, i, tool.Name, toolNameRE)
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
	if opts.approvalPolicy == "" {
		opts.approvalPolicy = appserver.ApprovalNever
	}
	restricted := in.Restricted || in.DisableTools

	t := &Turn{
		in: in, hooks: h, opts: opts,
		offered:     map[string]bool{},
		safeDenied:  map[string]bool{},
		items:       map[string]*itemState{},
		terminals:   map[string]bool{},
		calls:       map[string]*hostCall{},
		promptSent:  make(chan struct{}),
		interruptCh: make(chan struct{}),
	}
	for _, id := range in.SafeDeniedTools {
		t.safeDenied[toolpolicy.Normalize(id)] = true
	}
	var dynamic []appserver.DynamicTool
	if !in.DisableTools {
		for _, tool := range in.Tools {
			if t.safeDenied[toolpolicy.Normalize(tool.Name)] {
				continue // safe-denied: never offered
			}
			t.offered[tool.Name] = true
			dynamic = append(dynamic, appserver.FunctionTool(tool.Name, tool.Description, tool.Parameters))
		}
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
			return nil, unenforceable("restricted turn cannot run on Codex: " + reason +
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
	effort, err := ReasoningEffort(in.ThinkLevel, cat.Efforts(in.Model))
	if err != nil {
		return nil, fmt.Errorf("codex: %w", err)
	}
	t.effort = effort

	if err := c.Call(ctx, "fs/createDirectory", map[string]any{"path": in.Cwd, "recursive": true}, nil); err != nil {
		return nil, fmt.Errorf("codex: create the working directory %s: %w", in.Cwd, err)
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

// openThread starts a new thread or resumes in.ThreadID, with this turn's
// overrides (isolation or safe-deny config, reasoning effort) in effect.
//
// What Codex 0.169.0 does with them (TestRestrictedTurnOffersOnlyHostTools,
// TestResumeOverridesNeedNoSubscriber):
//   - a thread keeps its thread config (thread/start's, later a resume's)
//     while it is loaded, and loses it when the server restarts;
//   - a thread/resume with a non-empty config rebuilds the thread's config
//     from the server's own config plus that config; a resume without
//     config keeps the current one — e.g. an earlier turn's isolation. So
//     every resume carries at least resumeBaseConfig;
//   - Codex applies resume overrides only when no connection is subscribed
//     to the thread; a subscribed thread is joined as it is. So this
//     connection's own subscription is dropped first (turns also end with
//     thread/unsubscribe), and a resume whose echo shows ignored overrides
//     fails a restricted turn closed.
func (t *Turn) openThread(ctx context.Context, c *appserver.Client, dynamic []appserver.DynamicTool) (*appserver.Thread, error) {
	in := t.in
	if in.ThreadID == "" {
		th, err := c.StartThread(ctx, appserver.ThreadStartParams{
			Model:                 in.Model,
			Cwd:                   in.Cwd,
			ApprovalPolicy:        t.opts.approvalPolicy,
			Sandbox:               appserver.SandboxMode(in.Sandbox),
			DynamicTools:          dynamic,
			DeveloperInstructions: in.DeveloperInstructions,
			ReasoningEffort:       t.effort,
			Config:                t.config,
		}, appserver.ThreadOptions{Handlers: &appserver.Handlers{ToolCall: t.onToolCall}})
		if err != nil {
			return nil, fmt.Errorf("codex: thread/start: %w", err)
		}
		return th, nil
	}
	_ = c.Call(ctx, "thread/unsubscribe", map[string]any{"threadId": in.ThreadID}, nil)
	th, err := t.resume(ctx, c, in.ThreadID)
	if err != nil {
		return nil, err
	}
	if err := interruptOrphan(ctx, c, th.Info); err != nil {
		t.release(c, th)
		return nil, err
	}
	if !t.overridesApplied(th.Info) {
		if t.config != nil {
			t.release(c, th)
			return nil, unenforceable(fmt.Sprintf("thread %s is subscribed by another connection, so Codex ignored "+
				"this turn's tool configuration; retry once that connection released it", in.ThreadID))
		}
		t.warnings = append(t.warnings, fmt.Sprintf("thread %s is subscribed by another connection: Codex kept its "+
			"earlier settings (reasoning effort %q) instead of this turn's", in.ThreadID, deref(th.Info.ReasoningEffort)))
	}
	return th, nil
}

// resumeBaseConfig is sent with every thread/resume so that its config is
// never empty and replaces the previous resume's overrides. The key is a
// known Codex setting that only matters when a CLI starts, so it changes
// nothing for an app-server thread (and passes --strict-config).
var resumeBaseConfig = map[string]any{"check_for_update_on_startup": false}

func (t *Turn) resume(ctx context.Context, c *appserver.Client, id string) (*appserver.Thread, error) {
	cfg := maps.Clone(resumeBaseConfig)
	maps.Copy(cfg, t.config)
	th, err := c.ResumeThread(ctx, appserver.ThreadResumeParams{
		ThreadID:              id,
		Model:                 t.in.Model,
		Cwd:                   t.in.Cwd,
		ApprovalPolicy:        t.opts.approvalPolicy,
		Sandbox:               appserver.SandboxMode(t.in.Sandbox),
		DeveloperInstructions: t.in.DeveloperInstructions,
		ReasoningEffort:       t.effort,
		Config:                cfg,
		ExcludeTurns:          true,
	}, appserver.ThreadOptions{Handlers: &appserver.Handlers{ToolCall: t.onToolCall}})
	if err != nil {
		// Codex answers a thread it has no rollout for with an invalid-request
		// error (TestResumeOfUnknownThread pins the text of the pinned release).
		var rpc *appserver.RPCError
		if errors.As(err, &rpc) && strings.HasPrefix(rpc.Message, "no rollout found") {
			return nil, fmt.Errorf("%w: thread/resume %s: %s", ErrThreadNotFound, id, rpc.Message)
		}
		return nil, fmt.Errorf("codex: thread/resume %s: %w", id, err)
	}
	return th, nil
}

// overridesApplied tells from thread/resume's echo whether Codex applied
// this turn's overrides. Only a changed reasoning effort or working
// directory is visible in the echo, so a true answer is not a proof; the
// proof is structural (every turn ends with thread/unsubscribe).
func (t *Turn) overridesApplied(info appserver.ThreadInfo) bool {
	if t.effort != "" && deref(info.ReasoningEffort) != t.effort {
		return false
	}
	if info.Cwd != "" && path.Clean(info.Cwd) != path.Clean(t.in.Cwd) {
		return false
	}
	return true
}

// sendTurnStart sends turn/start (text and images; appserver.InputItem has
// no image fields, so the request is built here) and attaches to the turn.
func (t *Turn) sendTurnStart(ctx context.Context) error {
	input := []map[string]any{}
	if t.in.Prompt != "" {
		input = append(input, map[string]any{"type": "text", "text": t.in.Prompt, "text_elements": []any{}})
	}
	for _, img := range t.in.Images {
		item := map[string]any{"type": "image", "url": img.URL}
		if img.Path != "" {
			item = map[string]any{"type": "localImage", "path": img.Path}
		}
		if img.Detail != "" {
			item["detail"] = img.Detail
		}
		input = append(input, item)
	}
	params := map[string]any{"threadId": t.threadID, "input": input}
	if len(t.opts.collaborationMode) > 0 {
		params["collaborationMode"] = t.opts.collaborationMode
	}
	var res struct {
		Turn appserver.TurnInfo `json:"turn"`
	}
	t.sentAt = time.Now()
	if err := t.c.Call(ctx, appserver.MethodTurnStart, params, &res); err != nil {
		return err
	}
	if res.Turn.ID == "" {
		return &appserver.ConnectionLostError{Method: appserver.MethodTurnStart, ThreadID: t.threadID,
			AfterTurnStarted: true, Err: errors.New("turn/start answer without turn id")}
	}
	t.mu.Lock()
	t.turnID = res.Turn.ID
	t.publicID.Store(res.Turn.ID)
	t.at = t.th.AttachTurn(res.Turn.ID)
	t.mu.Unlock()
	return nil
}

// emitPrompt emits the prompt's transcript record and adapter warnings, and
// lets host tool calls through.
func (t *Turn) emitPrompt() {
	t.mu.Lock()
	defer t.mu.Unlock()
	rec := &wire.TranscriptRecord{Type: wire.RecordMessage, Role: wire.RoleUser, Text: t.in.Prompt,
		ThreadID: t.threadID, TurnID: t.turnID}
	for _, img := range t.in.Images {
		rec.Images = append(rec.Images, img.URL+img.Path)
	}
	t.emit(adapter.Event{Type: wire.EventTranscript, Transcript: rec})
	for _, w := range t.warnings {
		t.emit(adapter.Event{Type: wire.EventAgent, Agent: &wire.AgentEvent{Stream: wire.StreamWarning, Text: w}})
	}
	t.promptOnce.Do(func() { close(t.promptSent) })
}

// ThreadID is the turn's native thread.
func (t *Turn) ThreadID() string { return t.threadID }

// ID is the native turn id (empty while a detached turn/start is
// unanswered). It may be called from Hooks.Emit.
func (t *Turn) ID() string {
	id, _ := t.publicID.Load().(string)
	return id
}

// Abandon gives up on a turn that will not be waited for again — e.g. a
// detached turn whose server is gone: host tool calls still waiting for the
// client end (their context is cancelled). The turn may still be running on
// the server; Abandon sends nothing.
func (t *Turn) Abandon() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closing = true
	t.cancelTurn()
}

// Interrupt asks the running turn to stop: Wait sends turn/interrupt and the
// turn ends with terminal kind aborted. It does not block and may be called
// any number of times, from any goroutine (including Hooks.Emit).
func (t *Turn) Interrupt() {
	t.interruptOnce.Do(func() { close(t.interruptCh) })
}

// Wait relays the turn's events to Hooks.Emit until the turn ends and
// returns its result. Cancelling ctx or calling Interrupt sends
// turn/interrupt (terminal aborted); reaching TurnInput.Deadline does too
// (terminal timeout). After an interrupt Wait waits a bounded time for
// Codex to confirm; without a confirmation the result says so and the turn
// may still be running on the server.
//
// When the connection ends, Wait returns a *DetachedError: call Reattach
// with a new connection, then Wait again. Once the turn ended, further
// calls return the same result.
func (t *Turn) Wait(ctx context.Context) (*wire.TurnResult, error) {
	t.waitMu.Lock()
	defer t.waitMu.Unlock()
	t.mu.Lock()
	if t.result != nil {
		res := t.result
		t.mu.Unlock()
		return res, nil
	}
	at := t.at
	if at == nil {
		err := &DetachedError{ThreadID: t.threadID, TurnID: t.turnID, Err: t.c.Err()}
		t.mu.Unlock()
		return nil, err
	}
	if t.pending != nil {
		ev := *t.pending
		t.mu.Unlock()
		return t.finish(ev), nil
	}
	stopping := t.stopCause != nil
	t.mu.Unlock()

	runCtx, cancelRun := context.WithCancelCause(context.Background())
	defer cancelRun(nil)
	watchDone := make(chan struct{})
	defer close(watchDone)
	go func() {
		var deadline <-chan time.Time
		if !t.in.Deadline.IsZero() {
			timer := time.NewTimer(time.Until(t.in.Deadline))
			defer timer.Stop()
			deadline = timer.C
		}
		select {
		case <-ctx.Done():
			cancelRun(errAborted)
		case <-t.interruptCh:
			cancelRun(errAborted)
		case <-deadline:
			cancelRun(errTimeout)
		case <-watchDone:
		}
	}()

	var drainCtx context.Context
	if stopping { // interrupted before a reattach: ask again
		var cancelDrain context.CancelFunc
		drainCtx, cancelDrain = context.WithTimeout(context.Background(), interruptGrace)
		defer cancelDrain()
		t.sendInterrupt(at)
	}
	for {
		nctx := context.Context(runCtx)
		if drainCtx != nil {
			nctx = drainCtx
		}
		ev, err := at.Next(nctx)
		if err == nil {
			if done, ok := ev.(appserver.TurnCompletedEvent); ok {
				return t.finish(done), nil
			}
			t.mu.Lock()
			t.relay(ev)
			t.mu.Unlock()
			continue
		}
		var lost *appserver.ConnectionLostError
		switch {
		case errors.As(err, &lost):
			t.mu.Lock()
			t.at = nil
			t.mu.Unlock()
			return nil, &DetachedError{ThreadID: t.threadID, TurnID: t.turnID, Err: err}
		case drainCtx == nil && runCtx.Err() != nil:
			t.mu.Lock()
			t.stopCause = context.Cause(runCtx)
			t.mu.Unlock()
			var cancelDrain context.CancelFunc
			drainCtx, cancelDrain = context.WithTimeout(context.Background(), interruptGrace)
			defer cancelDrain()
			t.sendInterrupt(at)
		case drainCtx != nil && drainCtx.Err() != nil:
			return t.finishUnconfirmed(), nil
		default:
			return nil, fmt.Errorf("codex: turn %s: %w", t.turnID, err)
		}
	}
}

// sendInterrupt sends turn/interrupt; a failure (the turn already ended, or
// the connection is gone) shows up in the event stream.
func (t *Turn) sendInterrupt(at *appserver.Turn) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	_ = at.Interrupt(ctx)
	t.mu.Lock()
	t.cancelTurn() // pending host tool calls end now
	t.mu.Unlock()
}

// Reattach moves a detached turn to the new connection c (to the same
// server): thread/resume (re-sending the turn's overrides; a running thread
// is joined as it is), then the turn's stream. Items that completed while
// no connection was attached are recovered from thread/turns/list and
// relayed (the missing tail of each assistant message as a partial), so the
// client sees the whole turn; a turn that ended meanwhile is finished from
// the same list. Then call Wait. A turn whose turn/start never reached the
// server gives ErrTurnNotStarted.
func (t *Turn) Reattach(ctx context.Context, c *appserver.Client) error {
	t.waitMu.Lock()
	defer t.waitMu.Unlock()
	t.mu.Lock()
	if t.result != nil {
		t.mu.Unlock()
		return nil
	}
	if t.at != nil {
		t.mu.Unlock()
		return ErrTurnAttached
	}
	t.mu.Unlock()

	th, err := t.resume(ctx, c, t.threadID)
	if err != nil {
		return err
	}
	turnID := t.turnID
	if turnID == "" {
		turnID, err = t.findStartedTurn(ctx, c)
		if err != nil {
			t.release(c, th)
			return err
		}
	}
	at := th.AttachTurn(turnID)
	listed, err := fetchTurn(ctx, c, t.threadID, turnID)
	if err != nil {
		t.release(c, th)
		return err
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	t.c, t.th, t.at, t.turnID = c, th, at, turnID
	t.publicID.Store(turnID)
	t.connGen++
	// Codex lists an item only once it is done — an assistant message
	// still streaming is not listed (TestReattachDeliversTheAnswerOnce) — so
	// every listed item is completed now, in list order, before any event
	// this connection buffered is relayed; those events of a listed item
	// then change nothing.
	for _, it := range listed.Items {
		t.itemCompleted(it)
	}
	finished := listed.Status != appserver.TurnInProgress && listed.Status != ""
	if finished {
		t.pending = &appserver.TurnCompletedEvent{
			EventMeta: appserver.EventMeta{Method: appserver.MethodTurnCompleted, ThreadID: t.threadID, TurnID: turnID},
			Turn:      listed,
		}
	}
	return nil
}

// findStartedTurn looks up the turn a lost turn/start started, if any: the
// thread's newest turn, when its user message is this turn's prompt and it
// is running or began at most two minutes (clock skew between dispatcher
// and server included) before the request was sent. The session lease keeps
// other turns off the thread.
func (t *Turn) findStartedTurn(ctx context.Context, c *appserver.Client) (string, error) {
	var res struct {
		Data []appserver.TurnInfo `json:"data"`
	}
	if err := c.Call(ctx, "thread/turns/list", map[string]any{"threadId": t.threadID, "limit": 1, "itemsView": "full"}, &res); err != nil {
		return "", fmt.Errorf("codex: thread/turns/list %s: %w", t.threadID, err)
	}
	if len(res.Data) == 1 {
		tr := res.Data[0]
		var started struct {
			StartedAt *int64 `json:"startedAtMs"`
		}
		recent := tr.Status == appserver.TurnInProgress
		for _, it := range tr.Items {
			if it.Type != "userMessage" {
				continue
			}
			_ = json.Unmarshal(it.Raw, &started)
			if userText(it) == t.in.Prompt && (recent || started.StartedAt != nil &&
				time.UnixMilli(*started.StartedAt).After(t.sentAt.Add(-2*time.Minute))) {
				return tr.ID, nil
			}
			break
		}
	}
	return "", fmt.Errorf("%w (thread %s)", ErrTurnNotStarted, t.threadID)
}

// userText is the text of a userMessage item.
func userText(it appserver.Item) string {
	var m struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	_ = json.Unmarshal(it.Raw, &m)
	var parts []string
	for _, c := range m.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "")
}

// fetchTurn reads one turn of the thread with its items.
func fetchTurn(ctx context.Context, c *appserver.Client, threadID, turnID string) (appserver.TurnInfo, error) {
	cursor := ""
	for page := 0; page < 20; page++ {
		params := map[string]any{"threadId": threadID, "limit": 5, "itemsView": "full"}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var res struct {
			Data       []appserver.TurnInfo `json:"data"`
			NextCursor *string              `json:"nextCursor"`
		}
		if err := c.Call(ctx, "thread/turns/list", params, &res); err != nil {
			return appserver.TurnInfo{}, fmt.Errorf("codex: thread/turns/list %s: %w", threadID, err)
		}
		for _, tr := range res.Data {
			if tr.ID == turnID {
				return tr, nil
			}
		}
		if res.NextCursor == nil || *res.NextCursor == "" {
			break
		}
		cursor = *res.NextCursor
	}
	return appserver.TurnInfo{}, fmt.Errorf("codex: turn %s not found in thread %s", turnID, threadID)
}

// finish finalizes a turn that completed (or was recovered as completed).
func (t *Turn) finish(done appserver.TurnCompletedEvent) *wire.TurnResult {
	t.mu.Lock()
	// Assistant messages that completed while no connection was attached
	// are in the completion's item summary.
	for _, it := range done.Turn.Items {
		if it.Type == "agentMessage" {
			t.itemCompleted(it)
		}
	}
	term := wire.Terminal{Kind: wire.TerminalOK}
	switch done.Turn.Status {
	case appserver.TurnCompleted:
	case appserver.TurnFailed:
		term.Kind = wire.TerminalFailed
		term.Message = "the turn failed"
		if e := done.Turn.Error; e != nil {
			term.Message = e.Message
			if e.AdditionalDetails != nil && *e.AdditionalDetails != "" {
				term.Message += ": " + *e.AdditionalDetails
			}
			term.ErrorInfo = e.ErrorInfo()
		}
	case appserver.TurnInterrupted:
		term = t.stopTerminal("the turn was interrupted")
	default:
		term = wire.Terminal{Kind: wire.TerminalFailed, Message: fmt.Sprintf("the turn ended with status %q", done.Turn.Status)}
	}
	t.mu.Unlock()
	return t.complete(term, string(done.Turn.Status))
}

// finishUnconfirmed ends a turn whose interrupt Codex did not confirm.
func (t *Turn) finishUnconfirmed() *wire.TurnResult {
	t.mu.Lock()
	term := t.stopTerminal("")
	term.Message += fmt.Sprintf("; Codex did not confirm the interrupt within %v, the turn may still be running", interruptGrace)
	t.mu.Unlock()
	return t.complete(term, "unconfirmed")
}

// stopTerminal is the terminal of an interrupted turn, by who stopped it.
func (t *Turn) stopTerminal(fallback string) wire.Terminal {
	switch {
	case errors.Is(t.stopCause, errTimeout):
		return wire.Terminal{Kind: wire.TerminalTimeout, Message: "the turn's deadline passed; it was interrupted"}
	case t.stopCause != nil:
		return wire.Terminal{Kind: wire.TerminalAborted, Message: "the turn was interrupted"}
	case fallback != "":
		return wire.Terminal{Kind: wire.TerminalAborted, Message: fallback}
	default:
		return wire.Terminal{Kind: wire.TerminalAborted, Message: "the turn was interrupted"}
	}
}

// complete ends pending host tool calls (their terminals precede the end
// of the turn), releases the thread on this connection, emits the
// lifecycle end and builds the result.
func (t *Turn) complete(term wire.Terminal, status string) *wire.TurnResult {
	t.mu.Lock()
	t.closing = true
	t.mu.Unlock()
	t.cancelTurn()
	waited := make(chan struct{})
	go func() { t.handlers.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(handlerGrace):
	}
	t.mu.Lock()
	c, th := t.c, t.th
	t.mu.Unlock()
	t.release(c, th)

	t.mu.Lock()
	defer t.mu.Unlock()
	t.emit(adapter.Event{Type: wire.EventAgent, Agent: &wire.AgentEvent{Stream: wire.StreamLifecycle,
		Phase: wire.PhaseEnd, Status: status, Text: term.Message}})
	res := &wire.TurnResult{
		ThreadID:               t.threadID,
		TurnID:                 t.turnID,
		AssistantTexts:         append([]string{}, t.texts...),
		Terminal:               term,
		PlanText:               strings.Join(nonEmpty(append(append([]string{}, t.plans...), t.planSteps)), "\n\n"),
		ReasoningText:          strings.Join(nonEmpty(t.reasoning), "\n\n"),
		LastToolError:          t.lastErr,
		ToolMediaURLs:          t.media,
		HostOwnedToolMediaURLs: t.hostOwned,
	}
	if t.usageSeen {
		res.Usage = wire.Usage{
			Input:       t.usageLast.InputTokens - t.usageBase.InputTokens,
			CachedInput: t.usageLast.CachedInputTokens - t.usageBase.CachedInputTokens,
			Output:      t.usageLast.OutputTokens - t.usageBase.OutputTokens,
			Reasoning:   t.usageLast.ReasoningOutputTokens - t.usageBase.ReasoningOutputTokens,
			Total:       t.usageLast.TotalTokens - t.usageBase.TotalTokens,
		}
	}
	res.Classification = adapter.Classify(term.Kind, res.AssistantTexts, res.PlanText, res.ReasoningText)
	t.result = res
	t.at = nil
	return res
}

// release unsubscribes this connection from the thread, so the next turn's
// thread/resume overrides apply, and forgets the client-side thread state.
func (t *Turn) release(c *appserver.Client, th *appserver.Thread) {
	if c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	id := t.threadID
	if th != nil {
		id = th.ID
	}
	if id != "" {
		_ = c.Call(ctx, "thread/unsubscribe", map[string]any{"threadId": id}, nil)
	}
	if th != nil {
		th.Release()
	}
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
