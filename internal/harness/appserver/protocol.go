package appserver

import (
	"encoding/json"
	"maps"
)

// Method names of the app-server protocol used by this package.
const (
	MethodInitialize     = "initialize"
	MethodInitialized    = "initialized"
	MethodThreadStart    = "thread/start"
	MethodThreadResume   = "thread/resume"
	MethodTurnStart      = "turn/start"
	MethodTurnInterrupt  = "turn/interrupt"
	MethodTurnStarted    = "turn/started"
	MethodTurnCompleted  = "turn/completed"
	MethodItemStarted    = "item/started"
	MethodItemCompleted  = "item/completed"
	MethodAgentDelta     = "item/agentMessage/delta"
	MethodReasoningDelta = "item/reasoning/textDelta"
	MethodSummaryDelta   = "item/reasoning/summaryTextDelta"
	MethodPlanDelta      = "item/plan/delta"
	MethodPlanUpdated    = "turn/plan/updated"
	MethodCommandOutput  = "item/commandExecution/outputDelta"
	MethodTokenUsage     = "thread/tokenUsage/updated"
	MethodError          = "error"

	MethodToolCall            = "item/tool/call"
	MethodCommandApproval     = "item/commandExecution/requestApproval"
	MethodFileApproval        = "item/fileChange/requestApproval"
	MethodPermissions         = "item/permissions/requestApproval"
	MethodUserInput           = "item/tool/requestUserInput"
	MethodElicitation         = "mcpServer/elicitation/request"
	MethodApplyPatchApproval  = "applyPatchApproval"
	MethodExecCommandApproval = "execCommandApproval"
)

// ApprovalPolicy is thread/start's approvalPolicy ("untrusted",
// "on-request", "never").
type ApprovalPolicy string

// Approval policies.
const (
	ApprovalNever     ApprovalPolicy = "never"
	ApprovalOnRequest ApprovalPolicy = "on-request"
	ApprovalUntrusted ApprovalPolicy = "untrusted"
)

// SandboxMode is thread/start's sandbox.
type SandboxMode string

// Sandbox modes. Threads in pods run with SandboxDangerFullAccess: the pod
// is the sandbox (docs/security.md).
const (
	SandboxReadOnly         SandboxMode = "read-only"
	SandboxWorkspaceWrite   SandboxMode = "workspace-write"
	SandboxDangerFullAccess SandboxMode = "danger-full-access"
)

// ReasoningEffortConfigKey is the Codex config key thread/start and
// thread/resume set for ThreadStartParams.ReasoningEffort.
const ReasoningEffortConfigKey = "model_reasoning_effort"

// NativeToolsOffConfig returns the thread-level config overrides that remove
// Codex's native tools (exec_command/write_stdin, view_image, web_search,
// request_user_input) from a thread, leaving only the dynamic tools for a
// model Codex does not know (docs/codex-app-server.md). Codex does not
// persist thread config: send it again on every thread/resume. For Codex's
// catalog models apply_patch and the MCP-resource helpers remain.
func NativeToolsOffConfig() map[string]any {
	return map[string]any{
		"features.shell_tool":                   false,
		"features.view_image":                   false,
		"web_search":                            "disabled",
		"tools.experimental_request_user_input": map[string]any{"enabled": false},
	}
}

// DynamicTool is a client-provided tool (thread/start dynamicTools): a
// function, or a namespace of functions. Calls arrive as item/tool/call.
type DynamicTool struct {
	// Type is "function" or "namespace".
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	// Tools are the members of a namespace (each of Type "function").
	Tools        []DynamicTool `json:"tools,omitempty"`
	DeferLoading bool          `json:"deferLoading,omitempty"`
}

// FunctionTool is a dynamic function tool. A nil schema means an object
// without properties.
func FunctionTool(name, description string, inputSchema json.RawMessage) DynamicTool {
	if inputSchema == nil {
		inputSchema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return DynamicTool{Type: "function", Name: name, Description: description, InputSchema: inputSchema}
}

// NamespaceTool is a dynamic namespace of function tools.
func NamespaceTool(name, description string, tools ...DynamicTool) DynamicTool {
	return DynamicTool{Type: "namespace", Name: name, Description: description, Tools: tools}
}

// ThreadStartParams are the parameters of thread/start.
type ThreadStartParams struct {
	Model          string         `json:"model,omitempty"`
	ModelProvider  string         `json:"modelProvider,omitempty"`
	Cwd            string         `json:"cwd,omitempty"`
	ApprovalPolicy ApprovalPolicy `json:"approvalPolicy,omitempty"`
	Sandbox        SandboxMode    `json:"sandbox,omitempty"`
	// DynamicTools are persisted with the thread (a resume keeps them).
	DynamicTools          []DynamicTool `json:"dynamicTools,omitempty"`
	BaseInstructions      string        `json:"baseInstructions,omitempty"`
	DeveloperInstructions string        `json:"developerInstructions,omitempty"`
	// ReasoningEffort ("low", "medium", "high", …) is sent as the config
	// key model_reasoning_effort.
	ReasoningEffort string `json:"-"`
	// Config holds per-thread config overrides (dotted keys, as `-c`), e.g.
	// NativeToolsOffConfig(). Not persisted by Codex.
	Config map[string]any `json:"config,omitempty"`
	// Ephemeral threads write no rollout and cannot be resumed.
	Ephemeral bool `json:"ephemeral,omitempty"`
}

// ThreadResumeParams are the parameters of thread/resume. Per-thread config
// is not persisted, so resend the same Config (and ReasoningEffort) as at
// thread/start.
type ThreadResumeParams struct {
	ThreadID              string         `json:"threadId"`
	Model                 string         `json:"model,omitempty"`
	ModelProvider         string         `json:"modelProvider,omitempty"`
	Cwd                   string         `json:"cwd,omitempty"`
	ApprovalPolicy        ApprovalPolicy `json:"approvalPolicy,omitempty"`
	Sandbox               SandboxMode    `json:"sandbox,omitempty"`
	BaseInstructions      string         `json:"baseInstructions,omitempty"`
	DeveloperInstructions string         `json:"developerInstructions,omitempty"`
	ReasoningEffort       string         `json:"-"`
	Config                map[string]any `json:"config,omitempty"`
	// ExcludeTurns skips the (deprecated) full-history hydration.
	ExcludeTurns bool `json:"excludeTurns,omitempty"`
}

func withEffort(cfg map[string]any, effort string) map[string]any {
	if effort == "" {
		return cfg
	}
	out := maps.Clone(cfg)
	if out == nil {
		out = map[string]any{}
	}
	out[ReasoningEffortConfigKey] = effort
	return out
}

// InputItem is one item of a turn's input.
type InputItem struct {
	Type         string `json:"type"`
	Text         string `json:"text,omitempty"`
	TextElements []any  `json:"text_elements"`
}

// TextInput is a text input item.
func TextInput(text string) InputItem {
	return InputItem{Type: "text", Text: text, TextElements: []any{}}
}

// TurnStartParams are the parameters of turn/start (without threadId).
type TurnStartParams struct {
	Input []InputItem `json:"input"`
	// Effort overrides the reasoning effort for this and later turns.
	Effort string `json:"effort,omitempty"`
	// Cwd overrides the working directory for this and later turns.
	Cwd string `json:"cwd,omitempty"`
	// ApprovalPolicy overrides the thread's policy for this and later turns.
	ApprovalPolicy ApprovalPolicy `json:"approvalPolicy,omitempty"`
	// SandboxPolicy is the raw tagged sandbox policy, e.g.
	// {"type":"dangerFullAccess"}.
	SandboxPolicy json.RawMessage `json:"sandboxPolicy,omitempty"`
	// CollaborationMode is the raw collaboration mode, e.g.
	// {"mode":"plan","settings":{"model":"…"}}; plan mode produces plan
	// items and allows request_user_input.
	CollaborationMode json.RawMessage `json:"collaborationMode,omitempty"`
}

// ThreadInfo is what thread/start and thread/resume report.
type ThreadInfo struct {
	ID              string          `json:"-"`
	Model           string          `json:"model"`
	ModelProvider   string          `json:"modelProvider"`
	Cwd             string          `json:"cwd"`
	ReasoningEffort *string         `json:"reasoningEffort"`
	ApprovalPolicy  json.RawMessage `json:"approvalPolicy"`
	Sandbox         json.RawMessage `json:"sandbox"`
	// CollaborationMode is the thread's effective collaboration mode
	// (thread/resume only; it outlives the turn that set it).
	CollaborationMode json.RawMessage `json:"collaborationMode"`
	Thread            struct {
		ID        string          `json:"id"`
		Path      *string         `json:"path"`
		Ephemeral bool            `json:"ephemeral"`
		Status    json.RawMessage `json:"status"`
		Turns     []TurnInfo      `json:"turns"`
		Preview   string          `json:"preview"`
	} `json:"thread"`
}

// TurnStatus is a turn's status.
type TurnStatus string

// Turn statuses.
const (
	TurnInProgress  TurnStatus = "inProgress"
	TurnCompleted   TurnStatus = "completed"
	TurnFailed      TurnStatus = "failed"
	TurnInterrupted TurnStatus = "interrupted"
)

// TurnInfo is a turn as the server reports it (turn/start, turn/started,
// turn/completed, thread/resume). Items is only a summary on turn/completed.
type TurnInfo struct {
	ID         string     `json:"id"`
	Status     TurnStatus `json:"status"`
	Error      *TurnError `json:"error"`
	Items      []Item     `json:"items"`
	DurationMs *int64     `json:"durationMs"`
}

// TurnError describes why a turn failed.
type TurnError struct {
	Message           string          `json:"message"`
	CodexErrorInfo    json.RawMessage `json:"codexErrorInfo"`
	AdditionalDetails *string         `json:"additionalDetails"`
}

// ErrorInfo is codexErrorInfo as a string when it is one (e.g.
// "internalServerError", "other").
func (e *TurnError) ErrorInfo() string {
	var s string
	if e != nil && json.Unmarshal(e.CodexErrorInfo, &s) == nil {
		return s
	}
	if e == nil {
		return ""
	}
	return string(e.CodexErrorInfo)
}

// ContentItem is one part of a dynamic tool's result.
type ContentItem struct {
	// Type is "inputText", "inputImage" or "inputAudio".
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"imageUrl,omitempty"`
	AudioURL string `json:"audioUrl,omitempty"`
}

// TextContent is an inputText content item.
func TextContent(text string) ContentItem { return ContentItem{Type: "inputText", Text: text} }

// Item is a thread item (item/started, item/completed). The common fields
// of the item kinds this operator handles are decoded; Raw keeps the rest.
type Item struct {
	// Type: userMessage, agentMessage, reasoning, plan, dynamicToolCall,
	// commandExecution, fileChange, mcpToolCall, webSearch, …
	Type string `json:"type"`
	ID   string `json:"id"`
	// Text of an agentMessage or plan item.
	Text string `json:"text,omitempty"`
	// Summary and ReasoningContent of a reasoning item.
	Summary          []string `json:"summary,omitempty"`
	ReasoningContent []string `json:"-"`
	// Tool, Namespace, Arguments, Success and ContentItems of a
	// dynamicToolCall (Tool and Arguments also for mcpToolCall).
	Tool         string          `json:"tool,omitempty"`
	Namespace    *string         `json:"namespace,omitempty"`
	Arguments    json.RawMessage `json:"arguments,omitempty"`
	Success      *bool           `json:"success,omitempty"`
	ContentItems []ContentItem   `json:"contentItems,omitempty"`
	// Status of tool-like items (inProgress, completed, failed, declined).
	Status string `json:"status,omitempty"`
	// Command, ExitCode and AggregatedOutput of a commandExecution.
	Command          string  `json:"command,omitempty"`
	ExitCode         *int    `json:"exitCode,omitempty"`
	AggregatedOutput *string `json:"aggregatedOutput,omitempty"`
	// Raw is the item's JSON.
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON decodes the common fields and keeps the raw item.
func (it *Item) UnmarshalJSON(b []byte) error {
	type plain Item
	var p struct {
		plain
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*it = Item(p.plain)
	if it.Type == "reasoning" && len(p.Content) > 0 {
		_ = json.Unmarshal(p.Content, &it.ReasoningContent)
	}
	it.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// TokenUsage is thread/tokenUsage/updated's tokenUsage.
type TokenUsage struct {
	Total              TokenBreakdown `json:"total"`
	Last               TokenBreakdown `json:"last"`
	ModelContextWindow *int64         `json:"modelContextWindow"`
}

// TokenBreakdown counts tokens.
type TokenBreakdown struct {
	TotalTokens           int64 `json:"totalTokens"`
	InputTokens           int64 `json:"inputTokens"`
	CachedInputTokens     int64 `json:"cachedInputTokens"`
	OutputTokens          int64 `json:"outputTokens"`
	ReasoningOutputTokens int64 `json:"reasoningOutputTokens"`
}

// PlanStep is one step of turn/plan/updated.
type PlanStep struct {
	Step   string `json:"step"`
	Status string `json:"status"`
}
