package codex

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

// Isolated completion (the harness SDK's runIsolatedCompletionV2) and settled-turn
// finalization (finalizeSettledTurn) on Codex.
//
// Codex has no prompt-only inference request: model calls happen inside a
// turn on a thread. Complete therefore builds the smallest thread that can
// be proven tool-free and stateless, and refuses every other case:
//
//   - the model must be one Codex does not know (CanIsolate): for catalog
//     models Codex keeps apply_patch and the MCP-resource helpers whatever
//     the config says, so isolation cannot be proven and the call fails
//     closed with ToolPolicyUnenforceable before any thread exists;
//   - thread/start with ephemeral true (no rollout is written; the thread
//     cannot be resumed, forked or listed later), no dynamicTools,
//     IsolationConfig() (native tools, MCP servers, apps, plugins, memories,
//     sub-agents off) plus completionConfig (hooks and project docs off),
//     approvalPolicy never and a read-only sandbox, so nothing can ask for
//     or grant a permission;
//   - the caller's instructions replace Codex's base instructions (they
//     are required: without them Codex sends its own coding-agent prompt,
//     which describes tools and a sandbox the call does not have);
//   - a frozen transcript is appended with thread/inject_items before the
//     one turn/start carrying the prompt;
//   - no server-request handler is installed: any tool call, approval or
//     user-input request Codex might still send is declined, and the
//     answer is refused (fail closed), as is any completed item other than
//     the user message, reasoning and the assistant message;
//   - the thread is unsubscribed and forgotten at the end, whatever the
//     outcome.
//
// TestIsolatedCompletionOffersNoTools pins the recorded model request: no
// `tools`, no additional_tools item, the instructions and the input as sent.

// CompletionInput is one isolated completion or finalization.
type CompletionInput struct {
	// Model is the bare model id.
	Model string
	// Cwd is an absolute directory on the server for the ephemeral thread
	// (Codex requires one; nothing can run there: the sandbox is read-only
	// and no tool is offered). It is created when missing.
	Cwd string
	// Instructions replace Codex's base instructions (required: empty would
	// keep Codex's coding-agent prompt).
	Instructions string
	// Messages are injected before the prompt, as they are.
	Messages []wire.CompletionMessage
	// Prompt is the user message of the one turn.
	Prompt string
	// Deadline ends the call (zero: ctx only).
	Deadline time.Time
	// AuthProfile, when set, authenticates the call's model request instead
	// of the server's login (as a turn's, codex/authprofile.go).
	AuthProfile *adapter.AuthProfile
	// ModelCredential, when set, is the model gateway's credential for the
	// call (the harness has spec.modelGateway): its model request goes to
	// the gateway's provider with it, and AuthProfile is nil (the profile
	// rides sealed in the credential).
	ModelCredential string
}

// completionConfig adds to IsolationConfig what a completion must not load
// either: lifecycle hooks and the working directory's project docs
// (AGENTS.md), which would put text the caller did not send into the
// request.
func completionConfig() map[string]any {
	cfg := IsolationConfig()
	maps.Copy(cfg, map[string]any{
		"features.codex_hooks":                    false,
		"project_doc_max_bytes":                   0,
		"skills.bundled.enabled":                  false,
		"include_permissions_instructions":        false,
		"include_environment_context":             false,
		"include_apps_instructions":               false,
		"include_collaboration_mode_instructions": false,
	})
	return cfg
}

// Complete runs one isolated completion on c (see the comment above).
func Complete(ctx context.Context, c *appserver.Client, in CompletionInput) (*wire.CompletionResult, error) {
	if strings.TrimSpace(in.Model) == "" {
		return nil, fmt.Errorf("codex: %w: model is empty", adapter.ErrInvalidInput)
	}
	if strings.TrimSpace(in.Prompt) == "" {
		return nil, fmt.Errorf("codex: %w: prompt is empty", adapter.ErrInvalidInput)
	}
	if strings.TrimSpace(in.Instructions) == "" {
		// Without base instructions Codex sends its own coding-agent prompt,
		// which describes tools and sandboxing this call does not have.
		return nil, fmt.Errorf("codex: %w: instructions is empty: Codex would send its own coding-agent instructions instead",
			adapter.ErrInvalidInput)
	}
	if !strings.HasPrefix(in.Cwd, "/") {
		return nil, fmt.Errorf("codex: %w: cwd %q must be an absolute path", adapter.ErrInvalidInput, in.Cwd)
	}
	if !in.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, in.Deadline)
		defer cancel()
	}
	cat, err := LoadModelCatalog(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("codex: isolated completion: %w", err)
	}
	if ok, reason := CanIsolate(in.Model, cat); !ok {
		return nil, wire.Errorf(wire.CodeToolPolicyUnenforceable, "",
			"isolated completion cannot run on Codex: %s; use a model Codex does not know or another runtime", reason)
	}
	cfg := completionConfig()
	auth, err := authConfig(ctx, c, adapter.TurnInput{AuthProfile: in.AuthProfile, ModelCredential: in.ModelCredential})
	if err != nil {
		return nil, err
	}
	maps.Copy(cfg, auth)
	if err := c.Call(ctx, "fs/createDirectory", map[string]any{"path": in.Cwd, "recursive": true}, nil); err != nil {
		return nil, fmt.Errorf("codex: create the working directory %s: %w", in.Cwd, err)
	}
	th, err := c.StartThread(ctx, appserver.ThreadStartParams{
		Model:            in.Model,
		Cwd:              in.Cwd,
		ApprovalPolicy:   appserver.ApprovalNever,
		Sandbox:          appserver.SandboxReadOnly,
		BaseInstructions: in.Instructions,
		Config:           cfg,
		Ephemeral:        true,
	}, appserver.ThreadOptions{Handlers: &appserver.Handlers{}})
	if err != nil {
		return nil, fmt.Errorf("codex: isolated completion: thread/start: %w", err)
	}
	defer releaseEphemeral(c, th)
	if items := transcriptItems(in.Messages); len(items) > 0 {
		if err := c.Call(ctx, "thread/inject_items", map[string]any{"threadId": th.ID, "items": items}, nil); err != nil {
			return nil, fmt.Errorf("codex: isolated completion: thread/inject_items: %w", err)
		}
	}
	turn, err := th.StartTurn(ctx, appserver.TurnStartParams{Input: []appserver.InputItem{appserver.TextInput(in.Prompt)}})
	if err != nil {
		return nil, fmt.Errorf("codex: isolated completion: turn/start: %w", err)
	}
	res, err := turn.Wait(ctx)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			interruptCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
			_ = turn.Interrupt(interruptCtx)
			cancel()
		}
		return nil, fmt.Errorf("codex: isolated completion: %w", err)
	}
	return completionResult(res)
}

// completionResult accepts only a completed turn whose items are the
// prompt, reasoning and assistant text; anything else fails closed.
func completionResult(res *appserver.TurnResult) (*wire.CompletionResult, error) {
	if res.Status != appserver.TurnCompleted {
		msg := string(res.Status)
		if res.Error != nil {
			msg += ": " + res.Error.Message
		}
		return nil, fmt.Errorf("codex: isolated completion did not complete: %s", msg)
	}
	for _, sr := range res.ServerRequests {
		return nil, wire.Errorf(wire.CodeToolPolicyUnenforceable, "",
			"isolated completion: Codex sent a %s request (%s), which a completion must never receive; the answer is discarded",
			sr.Kind, sr.Method)
	}
	for _, it := range res.Items {
		switch it.Type {
		case "userMessage", "agentMessage", "reasoning":
		default:
			return nil, wire.Errorf(wire.CodeToolPolicyUnenforceable, "",
				"isolated completion: Codex produced a %s item, which a completion must never contain; the answer is discarded", it.Type)
		}
	}
	if strings.TrimSpace(res.Text) == "" {
		return nil, fmt.Errorf("codex: isolated completion: the model answered no text")
	}
	out := &wire.CompletionResult{Text: res.Text, Reasoning: strings.Join(nonEmpty(res.Reasoning), "\n\n"),
		FinishReason: wire.FinishStop}
	if u := res.Usage; u != nil {
		out.Usage = wire.Usage{Input: u.Last.InputTokens, CachedInput: u.Last.CachedInputTokens,
			Output: u.Last.OutputTokens, Reasoning: u.Last.ReasoningOutputTokens, Total: u.Last.TotalTokens}
	}
	return out, nil
}

// transcriptItems converts a frozen transcript to the Responses API input
// items thread/inject_items takes (the same shapes Reseed injects).
func transcriptItems(msgs []wire.CompletionMessage) []map[string]any {
	var out []map[string]any
	for _, m := range msgs {
		switch m.Role {
		case wire.MessageRoleUser:
			out = append(out, map[string]any{"type": "message", "role": "user",
				"content": []map[string]any{{"type": "input_text", "text": m.Text}}})
		case wire.MessageRoleAssistant:
			out = append(out, map[string]any{"type": "message", "role": "assistant",
				"content": []map[string]any{{"type": "output_text", "text": m.Text}}})
		case wire.MessageRoleToolCall:
			args := m.Arguments
			if args == "" {
				args = "{}"
			}
			out = append(out, map[string]any{"type": "function_call", "call_id": m.CallID, "name": m.Name, "arguments": args})
		case wire.MessageRoleToolResult:
			out = append(out, map[string]any{"type": "function_call_output", "call_id": m.CallID, "output": m.Text})
		}
	}
	return out
}

// releaseEphemeral unsubscribes from the ephemeral thread (Codex unloads
// it: there is no rollout to archive) and forgets it on the client.
func releaseEphemeral(c *appserver.Client, th *appserver.Thread) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	_ = c.Call(ctx, "thread/unsubscribe", map[string]any{"threadId": th.ID}, nil)
	th.Release()
}
