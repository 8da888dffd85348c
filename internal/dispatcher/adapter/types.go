package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// DefaultToolTimeout bounds one host tool call when TurnInput.ToolTimeout is
// zero (the attempt's toolTimeoutMs default).
const DefaultToolTimeout = 120 * time.Second

// TurnInput is one prepared turn as the engine hands it to an adapter.
type TurnInput struct {
	// Model is the bare model id the runtime resolves itself (the attempt's
	// model without the `provider/` prefix), e.g. gpt-5.5.
	Model string `json:"model"`
	// Cwd is the session's working directory on the runtime's filesystem: a
	// per-session directory under the native home. It must be absolute; the
	// adapter creates it when it is missing.
	Cwd string `json:"cwd"`
	// Sandbox is the native sandbox mode of the thread. The engine passes
	// "danger-full-access" for servers in pods (the pod is the sandbox,
	// docs/security.md); empty keeps the runtime's own configured mode (local
	// runs).
	Sandbox string `json:"sandbox,omitempty"`
	// DeveloperInstructions come from the attempt's extraSystemPrompt.
	DeveloperInstructions string `json:"developerInstructions,omitempty"`
	// ThinkLevel is the attempt's OpenClaw thinking level: off, minimal, low,
	// medium, high or xhigh; empty or adaptive leave the model's default.
	// Each adapter documents its mapping.
	ThinkLevel string `json:"thinkLevel,omitempty"`
	// Prompt is the user's text.
	Prompt string `json:"prompt"`
	// Images are attached to the prompt.
	Images []wire.Image `json:"images,omitempty"`
	// Tools are the host tools offered in this turn (the attempt's tools[]),
	// answered by the client through Hooks.AnswerTool.
	Tools []wire.HostTool `json:"tools,omitempty"`
	// Restricted is the decision's toolPolicy.restricted (the stricter of
	// the host's pluginHarnessToolPolicyRestricted and the operator's
	// verdict): the native tool surface must be isolated, or the turn fails
	// closed with ToolPolicyUnenforceable before the thread starts.
	Restricted bool `json:"restricted,omitempty"`
	// DisableTools is the attempt's disableTools: deny every tool. No host
	// tool is offered and the turn is restricted.
	DisableTools bool `json:"disableTools,omitempty"`
	// SafeDeniedTools are the decision's toolPolicy.safeDeniedTools:
	// canonical core tool ids the adapter must deny itself — they are never
	// offered as host tools, calls to them are refused, and their native
	// equivalents are removed (or the turn fails closed).
	SafeDeniedTools []string `json:"safeDeniedTools,omitempty"`
	// ToolTimeout bounds each host tool call (DefaultToolTimeout when zero).
	// A call without an answer in time fails with executionStarted true.
	ToolTimeout time.Duration `json:"toolTimeout,omitempty"`
	// Deadline ends the turn with terminal kind timeout (the attempt's
	// timeoutMs from the start of the turn). Zero means no deadline.
	Deadline time.Time `json:"deadline,omitzero"`
	// ThreadID is the session's bound native thread to resume; empty starts
	// a new thread.
	ThreadID string `json:"threadId,omitempty"`
	// ReseedFrom, with ThreadID empty, is a thread whose conversation the
	// new thread continues: the engine sets it when the host tools offered
	// differ from those the bound thread was started with.
	ReseedFrom string `json:"reseedFrom,omitempty"`
	// GatewayMessages are messages the gateway ran itself (the attempt's
	// gatewayTranscript), which the thread lacks: they are appended to
	// ThreadID before the prompt, or a new thread carries them after
	// ReseedFrom's history (alone when ReseedFrom is empty).
	GatewayMessages []wire.GatewayMessage `json:"gatewayMessages,omitempty"`
	// MirrorMessages, with ThreadID and ReseedFrom empty, are the session's
	// conversation from the dispatcher's transcript mirror (user and
	// assistant messages): its thread is on another harness, so the new
	// thread starts with them, before GatewayMessages. MirrorDropped counts
	// older messages that did not fit. Not serialized (they can be large).
	MirrorMessages []wire.GatewayMessage `json:"-"`
	MirrorDropped  int                   `json:"-"`
	// PassThrough are the attempt's fields the operator forwards without
	// acting on them (wire.PassThrough); the Codex adapter uses none.
	PassThrough wire.PassThrough `json:"passThrough,omitzero"`
	// MCPServers are this turn's admitted MCP servers; never serialized (the
	// header values are credentials).
	MCPServers []MCPServer `json:"-"`
	// AuthProfile, when set, authenticates this session's model requests
	// instead of the runtime's own login; never serialized (it holds the
	// credential). A thread's credential source is fixed when it starts (in
	// Codex, its model provider), so a turn that adds or drops a profile
	// continues the conversation on a new thread (ReseedFrom). On a harness
	// with the model gateway the profile travels sealed in ModelCredential
	// instead, and AuthProfile is nil.
	AuthProfile *AuthProfile `json:"-"`
	// ModelCredential, when set, is the model gateway's credential for this
	// turn (internal/dispatcher/modelcred): the thread's model requests go
	// to the gateway's provider with it as their bearer token. Never
	// serialized: it is valid while the turn runs.
	ModelCredential string `json:"-"`
	// ReseedFromProvider is the model provider ReseedFrom's thread was
	// started with, when the dispatcher chose it (the adapter defines it
	// again to read that thread's history); empty: the server's own.
	ReseedFromProvider string `json:"reseedFromProvider,omitempty"`
	// NativeActionOptions are the attempt's approvalMode and
	// collaborationMode: approval requests and user-input requests reach
	// the client through Hooks.AnswerApproval and Hooks.AnswerUserInput.
	wire.NativeActionOptions
}

// EffectiveToolTimeout is ToolTimeout or DefaultToolTimeout.
func (in TurnInput) EffectiveToolTimeout() time.Duration {
	if in.ToolTimeout > 0 {
		return in.ToolTimeout
	}
	return DefaultToolTimeout
}

// Hooks connect a running turn to the engine.
type Hooks struct {
	// Emit receives the turn's stream events in order. Calls are never
	// concurrent; Emit must not block for long (it holds up the turn) and
	// must not call back into the turn except to read its ids or to
	// interrupt it. Nil drops events.
	Emit func(Event)
	// AnswerTool is called once per host tool call the model makes to a
	// tool offered in this turn, after the tool_call event was emitted. It
	// blocks until the client posts the tool's result or ctx ends — at the
	// tool timeout, or when the turn ends first; the call then fails with
	// executionStarted true. Nil fails every host tool call before it
	// starts.
	AnswerTool func(ctx context.Context, call wire.ToolCall) (wire.ToolAnswer, error)
	// AnswerApproval is called once per approval request the adapter asks
	// the client about, after the approval_request event was emitted. It
	// blocks until the client's decision or until ctx ends (the tool
	// timeout: the action is denied; or the turn's end). Nil denies every
	// request.
	AnswerApproval func(ctx context.Context, req wire.ApprovalRequest) (wire.ApprovalDecision, error)
	// AnswerUserInput is called once per user-input request, after the
	// user_input_request event was emitted. It blocks until the client's
	// answers (already checked against the questions) or until ctx ends:
	// the request then gets no answers. Nil answers nothing.
	AnswerUserInput func(ctx context.Context, req wire.UserInputRequest) (map[string]wire.UserInputValue, error)
}

// ErrInvalidInput is wrapped by errors for a TurnInput the adapter refuses
// before touching the runtime (a request error: nothing ran).
var ErrInvalidInput = errors.New("invalid turn input")

// Validate checks the runtime-neutral shape of the input: a model, an
// absolute working directory, something to say, well-formed images and
// uniquely named host tools with object schemas. Errors wrap
// ErrInvalidInput.
func (in TurnInput) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidInput}, args...)...)
	}
	if strings.TrimSpace(in.Model) == "" {
		return bad("model is empty")
	}
	if in.Cwd == "" || !path.IsAbs(in.Cwd) {
		return bad("cwd %q must be an absolute path", in.Cwd)
	}
	if strings.TrimSpace(in.Prompt) == "" && len(in.Images) == 0 {
		return bad("prompt and images are empty")
	}
	if err := wire.ValidateImages(in.Images); err != nil {
		return bad("%v", err)
	}
	seen := map[string]bool{}
	for i, t := range in.Tools {
		if strings.TrimSpace(t.Name) == "" {
			return bad("tools[%d]: name is empty", i)
		}
		if seen[t.Name] {
			return bad("tools[%d]: duplicate tool name %q", i, t.Name)
		}
		seen[t.Name] = true
		if len(t.Parameters) > 0 {
			var schema map[string]any
			if err := json.Unmarshal(t.Parameters, &schema); err != nil {
				return bad("tools[%d] %q: parameters must be a JSON object schema: %v", i, t.Name, err)
			}
		}
	}
	if in.ThreadID != "" && in.ReseedFrom != "" {
		return bad("threadId and reseedFrom are exclusive: a turn resumes a thread or re-seeds a new one")
	}
	if in.ToolTimeout < 0 {
		return bad("toolTimeout %v is negative", in.ToolTimeout)
	}
	if err := in.NativeActionOptions.Validate(); err != nil {
		return bad("%v", err)
	}
	return nil
}
