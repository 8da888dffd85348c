package wire

import (
	"encoding/json"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// ResultEvent is the payload of the `result` event.
type ResultEvent struct {
	// RunID is the turn's runId.
	RunID string `json:"runId"`
	TurnResult
	// AgentHarnessID is the harness that ran the turn.
	AgentHarnessID string `json:"agentHarnessId"`
	// RuntimeArtifact is the attested artifact of the server, when the
	// request asked for it (captureRuntimeArtifact) and the server is attested.
	RuntimeArtifact *v1alpha1.RuntimeArtifact `json:"runtimeArtifact,omitempty"`
}

// TerminalKind is how a turn ended.
type TerminalKind string

// Terminal kinds of the `result` event.
const (
	// TerminalOK: the runtime completed the turn.
	TerminalOK TerminalKind = "ok"
	// TerminalAborted: the turn was interrupted (the engine cancelled or
	// interrupted it, or the runtime reported it interrupted).
	TerminalAborted TerminalKind = "aborted"
	// TerminalTimeout: the turn's deadline passed and it was interrupted.
	TerminalTimeout TerminalKind = "timeout"
	// TerminalFailed: the runtime failed the turn (model or runtime error).
	TerminalFailed TerminalKind = "failed"
)

// Terminal is the terminal outcome of a turn.
type Terminal struct {
	Kind TerminalKind `json:"kind"`
	// Message explains a kind other than ok.
	Message string `json:"message,omitempty"`
	// ErrorInfo is the runtime's machine-readable error class of a failed
	// turn (Codex: codexErrorInfo, e.g. internalServerError).
	ErrorInfo string `json:"errorInfo,omitempty"`
}

// Classification of a completed turn without visible assistant text
// (docs/design/contract-rules.md, rule 8; the harness SDK's
// classifyAgentHarnessTerminalOutcome).
type Classification string

// Classifications. The zero value means "not classified": the turn produced
// visible text (NO_REPLY included) or did not complete.
const (
	ClassEmpty         Classification = "empty"
	ClassReasoningOnly Classification = "reasoning-only"
	ClassPlanningOnly  Classification = "planning-only"
)

// Usage counts the tokens of one turn.
type Usage struct {
	Input       int64 `json:"input"`
	CachedInput int64 `json:"cachedInput"`
	Output      int64 `json:"output"`
	Reasoning   int64 `json:"reasoning"`
	Total       int64 `json:"total"`
}

// ToolError is the last unresolved tool failure of a turn (the harness SDK's
// lastToolError: "the host keeps an unresolved mutating failure across
// unrelated successful tools and clears it only after the matching action
// succeeds"). The rules, in order, for each tool terminal:
//   - a failure replaces it, except that a failure that is not a
//     MutatingAction never replaces one that is: the newest mutating failure
//     wins, and a later read-only or refused failure cannot hide it;
//   - a success of the matching action (same ActionFingerprint) clears it;
//   - any other success clears it only when it is not a MutatingAction (the
//     turn moved on from a failure that changed nothing).
type ToolError struct {
	CallID    string          `json:"callId"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// ExecutionStarted is the failed call's executionStarted.
	ExecutionStarted bool   `json:"executionStarted"`
	Reason           string `json:"reason"`
	Message          string `json:"message"`
	Native           bool   `json:"native,omitempty"`
	// MutatingAction: the failed call may have changed state — a native
	// tool's NativeMutation.MutatingAction, or, for a host tool (which the
	// operator cannot classify), whether it started.
	MutatingAction bool `json:"mutatingAction,omitempty"`
	// ActionFingerprint identifies the failed action: the native tool's
	// NativeMutation.ActionFingerprint, or for a host tool its name and
	// canonical arguments.
	ActionFingerprint string `json:"actionFingerprint,omitempty"`
}

// TurnResult is the outcome of one turn (the `result` event without the
// engine's own fields: runtimeArtifact, agentHarnessId).
type TurnResult struct {
	// ThreadID is the native thread (new or resumed): the session's binding.
	ThreadID string `json:"threadId"`
	// TurnID is the native turn.
	TurnID string `json:"turnId,omitempty"`
	// AssistantTexts are the turn's visible assistant messages, in order.
	AssistantTexts []string `json:"assistantTexts"`
	// Terminal is how the turn ended.
	Terminal Terminal `json:"terminal"`
	// Classification is set only for a completed turn without visible text.
	Classification Classification `json:"classification,omitempty"`
	// PlanText is the explicit plan text the runtime produced (the input of
	// planning-only); ReasoningText the reasoning summaries and text.
	PlanText      string `json:"planText,omitempty"`
	ReasoningText string `json:"reasoningText,omitempty"`
	// Usage counts the turn's tokens (zero when the runtime reported none).
	Usage Usage `json:"usage"`
	// LastToolError is the last unresolved tool failure, if any.
	LastToolError *ToolError `json:"lastToolError,omitempty"`
	// ToolMediaURLs are media produced by tools for delivery: host tool
	// answers' MediaURLs and the native runtime's own artifacts, which the
	// turn's `media` events carry and name (NativeMediaScheme).
	ToolMediaURLs []string `json:"toolMediaUrls,omitempty"`
	// HostOwnedToolMediaURLs ⊆ ToolMediaURLs are artifacts the native
	// runtime created and persisted itself (the Codex adapter: the images
	// Codex generated) — never model-selected host-tool media.
	HostOwnedToolMediaURLs []string `json:"hostOwnedToolMediaUrls,omitempty"`
}
