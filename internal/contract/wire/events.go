package wire

import "encoding/json"

// Stream event names (docs/dispatcher-api.md, "POST …/turns"): the `event:` of
// each SSE frame of a turn and the type of each event the journal keeps. The
// engine emits selected, result and error; an adapter the others. They are
// plain strings, as the journal and the SSE frame carry them.
const (
	// EventSelected is the decision (Decision, plus the run's runId and
	// turnToken: SelectedEvent), the first event of a turn.
	EventSelected = "selected"
	// EventPartial is a delta of visible assistant text (Partial).
	EventPartial = "partial"
	// EventAgent is runtime activity (AgentEvent): plan, reasoning, tool
	// lifecycle, declined approvals and user-input requests, errors, turn
	// lifecycle.
	EventAgent = "agent_event"
	// EventToolCall is a host tool call the client must answer (ToolCall).
	EventToolCall = "tool_call"
	// EventToolTerminal is the one terminal outcome of a tool call, host or
	// native (ToolTerminal).
	EventToolTerminal = "tool_terminal"
	// EventTranscript is a record for the transcript mirror
	// (TranscriptRecord).
	EventTranscript = "transcript"
	// EventResult is the outcome of a turn that ran to its end
	// (ResultEvent); the last event of a finished turn.
	EventResult = "result"
	// EventError is the error of a failed or refused turn (Error); the last
	// event of a failed turn.
	EventError = "error"
)

// Partial is a delta of visible assistant text. The deltas of one item,
// concatenated, are that item's text in TurnResult.AssistantTexts.
type Partial struct {
	// ItemID is the assistant message the delta belongs to.
	ItemID string `json:"itemId"`
	// Delta is the text to append.
	Delta string `json:"delta"`
}

// Agent event streams.
const (
	StreamLifecycle = "lifecycle"  // turn start and end
	StreamPlan      = "plan"       // plan text and plan updates
	StreamReasoning = "reasoning"  // reasoning summaries and text
	StreamTool      = "tool"       // tool lifecycle, host and native
	StreamApproval  = "approval"   // approval requests (declined)
	StreamUserInput = "user_input" // user-input requests (declined)
	StreamError     = "error"      // runtime errors reported during the turn
	StreamWarning   = "warning"    // adapter notes, e.g. a refused server request
	// StreamCompaction: the runtime compacted the thread's context (phase
	// start, then end); earlier history now reaches the model as a summary.
	StreamCompaction = "compaction"
)

// Agent event phases.
const (
	PhaseStart    = "start"
	PhaseDelta    = "delta"
	PhaseUpdate   = "update"
	PhaseEnd      = "end"
	PhaseDeclined = "declined"
	PhaseRefused  = "refused"
	// PhaseReseeded (stream lifecycle): the turn continues the conversation
	// on a new native thread because its host tools changed.
	PhaseReseeded = "reseeded"
)

// AgentEvent is runtime activity that is not assistant text.
type AgentEvent struct {
	// Stream is one of the Stream* constants.
	Stream string `json:"stream"`
	// Phase is one of the Phase* constants.
	Phase string `json:"phase,omitempty"`
	// ItemID is the runtime's item, when there is one.
	ItemID string `json:"itemId,omitempty"`
	// CallID is the tool call id of a tool event.
	CallID string `json:"callId,omitempty"`
	// Tool is the canonical tool name of a tool, approval or user-input event.
	Tool string `json:"tool,omitempty"`
	// Text is a delta (phase delta) or the full text (phase end) of plan and
	// reasoning events, or a human-readable message.
	Text string `json:"text,omitempty"`
	// Status is the runtime's status of the item or turn, when it has one.
	Status string `json:"status,omitempty"`
	// Data is the runtime's raw object (item, request params or plan).
	Data json.RawMessage `json:"data,omitempty"`
}

// ToolCall is a host tool call the client must answer (ToolResultRequest).
type ToolCall struct {
	// CallID is the runtime's call id.
	CallID string `json:"callId"`
	// Tool is the host tool's name.
	Tool string `json:"tool"`
	// Arguments are the arguments as the model sent them (JSON).
	Arguments json.RawMessage `json:"arguments"`
}

// ToolOutcome is the terminal outcome of a tool call.
type ToolOutcome string

// Tool outcomes.
const (
	OutcomeSuccess ToolOutcome = "success"
	OutcomeFailure ToolOutcome = "failure"
)

// Failure reasons of ToolFailure.
const (
	// FailureNotOffered: the model called a tool this turn did not offer
	// (including safe-denied tools); refused, never started.
	FailureNotOffered = "not_offered"
	// FailureDeclined: an approval or user-input request was declined.
	FailureDeclined = "declined"
	// FailureTimeout: the client did not answer within the tool timeout.
	FailureTimeout = "timeout"
	// FailureCancelled: the turn ended before the tool answered.
	FailureCancelled = "cancelled"
	// FailureNoClient: no AnswerTool hook; refused, never started.
	FailureNoClient = "no_client"
	// FailureToolError: the tool ran and reported an error.
	FailureToolError = "tool_error"
	// FailureNative: a native tool failed (non-zero exit, failed status).
	FailureNative = "native_failed"
)

// ToolFailure is the structured failure detail of a failed tool.
type ToolFailure struct {
	// Reason is one of the Failure* constants.
	Reason string `json:"reason"`
	// Message is the detail (what the model was told, or the runtime's error).
	Message string `json:"message"`
	// ExitCode of a native command, when it has one.
	ExitCode *int `json:"exitCode,omitempty"`
}

// ToolTerminal is the one terminal outcome of a tool call (the harness SDK's
// "Terminal tool outcomes"): reported for host tools, native tools, refused
// calls and declined approval or user-input requests.
type ToolTerminal struct {
	// CallID is the protocol's call id (for native tools and declined
	// requests, the runtime's item id).
	CallID string `json:"callId"`
	// Tool is the canonical tool name (host tools: their name; native
	// tools: the core tool id they implement, e.g. exec, apply_patch).
	Tool string `json:"tool"`
	// Arguments are the arguments that actually reached the tool (or, for
	// a refused call, those the model sent).
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// ExecutionStarted is false when a guard stopped the call before the
	// tool began (refusal, decline), true once dispatch may have happened.
	ExecutionStarted bool `json:"executionStarted"`
	// Outcome is success or failure.
	Outcome ToolOutcome `json:"outcome"`
	// Failure is set for a failure.
	Failure *ToolFailure `json:"failure,omitempty"`
	// Native marks a tool of the runtime's own surface (no OpenClaw tool
	// definition); its facts come from the runtime's protocol.
	Native bool `json:"native,omitempty"`
	// NativeMutation are the mutation and replay facts of a native tool;
	// nil for host tools.
	NativeMutation *NativeMutation `json:"nativeMutation,omitempty"`
}

// Transcript record types and roles.
const (
	RecordMessage    = "message"
	RecordToolCall   = "tool_call"
	RecordToolResult = "tool_result"

	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// TranscriptRecord is one record of the transcript mirror: a user-visible
// prompt, an assistant answer, or a tool call or result. The engine appends
// it (as JSON) to the session's transcript and sends it as a `transcript`
// event.
type TranscriptRecord struct {
	// Type is message, tool_call or tool_result.
	Type string `json:"type"`
	// Role is user, assistant or tool.
	Role string `json:"role"`
	// Text is the message text or the tool result's text.
	Text string `json:"text,omitempty"`
	// Images are the prompt's images (URL or runtime path), or a tool
	// result's image URLs.
	Images []string `json:"images,omitempty"`
	// CallID, Tool and Arguments describe a tool call or result.
	CallID    string          `json:"callId,omitempty"`
	Tool      string          `json:"tool,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// IsError marks a failed tool result.
	IsError bool `json:"isError,omitempty"`
	// Native marks a native tool's call or result.
	Native bool `json:"native,omitempty"`
	// Gateway marks a message the gateway ran itself (its embedded
	// runtime), which a later turn's gatewayTranscript brought here.
	Gateway bool `json:"gateway,omitempty"`
	// ThreadID, TurnID and ItemID locate the record in the native thread.
	ThreadID string `json:"threadId,omitempty"`
	TurnID   string `json:"turnId,omitempty"`
	ItemID   string `json:"itemId,omitempty"`
}

// JSON is the record as the compact JSON object the journal appends.
func (r TranscriptRecord) JSON() json.RawMessage {
	b, _ := json.Marshal(r) // plain fields: cannot fail
	return b
}
