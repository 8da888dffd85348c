package codex

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/harness/codexconfig"
)

// A turn's thread: opening it (thread/start, or thread/resume with the
// turn's overrides in effect), sending turn/start, and releasing it once the
// turn ended.

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
		params := appserver.ThreadStartParams{
			Model:                 in.Model,
			Cwd:                   in.Cwd,
			ApprovalPolicy:        approvalPolicy(t.in.ApprovalMode),
			Sandbox:               appserver.SandboxMode(in.Sandbox),
			DynamicTools:          dynamic,
			DeveloperInstructions: in.DeveloperInstructions,
			ReasoningEffort:       t.effort,
			Config:                t.config,
		}
		opts := appserver.ThreadOptions{Handlers: t.serverHandlers()}
		if in.ReseedFrom != "" || len(in.GatewayMessages) > 0 || len(in.MirrorMessages) > 0 {
			fromConfig, err := reseedSourceConfig(ctx, c, in)
			if err != nil {
				return nil, err
			}
			th, seed, err := Reseed(ctx, c, Source{ThreadID: in.ReseedFrom, Config: fromConfig, Messages: in.MirrorMessages},
				in.GatewayMessages, params, opts)
			if err == nil {
				t.seed = &seed
			}
			return th, err
		}
		th, err := c.StartThread(ctx, params, opts)
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
				"this turn's configuration (tools, MCP servers, auth profile); retry once that connection released it", in.ThreadID))
		}
		t.warnings = append(t.warnings, fmt.Sprintf("thread %s is subscribed by another connection: Codex kept its "+
			"earlier settings (reasoning effort %q) instead of this turn's", in.ThreadID, deref(th.Info.ReasoningEffort)))
	}
	if err := t.appendGatewayMessages(ctx, c, th.ID); err != nil {
		t.release(c, th)
		return nil, err
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
		ApprovalPolicy:        approvalPolicy(t.in.ApprovalMode),
		Sandbox:               appserver.SandboxMode(t.in.Sandbox),
		DeveloperInstructions: t.in.DeveloperInstructions,
		ReasoningEffort:       t.effort,
		Config:                cfg,
		ExcludeTurns:          true,
	}, appserver.ThreadOptions{Handlers: t.serverHandlers()})
	if err != nil {
		return nil, resumeLost(err, "thread/resume "+id)
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
	// A thread that authenticates otherwise than this turn says (Codex
	// refuses to change a thread's provider, so this is the last guard).
	if want := TurnProvider(t.in); info.ModelProvider != "" && info.ModelProvider != want &&
		(want != "" || info.ModelProvider == profileProviderID || info.ModelProvider == codexconfig.ModelGatewayProvider) {
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
	if mode := t.collaborationMode(); mode != nil {
		params["collaborationMode"] = mode
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
	for _, g := range t.gatewayRecords() {
		t.emit(adapter.Event{Type: wire.EventTranscript, Transcript: g})
	}
	t.emit(adapter.Event{Type: wire.EventTranscript, Transcript: rec})
	if t.seed != nil {
		t.emit(t.reseedEvent())
	}
	for _, w := range t.warnings {
		t.emit(adapter.Event{Type: wire.EventAgent, Agent: &wire.AgentEvent{Stream: wire.StreamWarning, Text: w}})
	}
	t.promptOnce.Do(func() { close(t.promptSent) })
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
