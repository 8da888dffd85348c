package wire

import (
	"encoding/json"
	"time"
)

// Native requests: what a runtime asks the gateway during a turn — an
// approval for a native action, or the user's answer to a question — and
// how the gateway answers. OpenClaw owns approvals and the user's blocking
// reply path even when a native runtime runs the turn (the harness SDK), so the
// dispatcher relays each request as a stream event and waits for the
// gateway's answer (POST …/turns/{runId}/approvals, …/user-input, with the
// turn token). Every request ends with exactly one `request_resolved` event:
// answered, denied at its deadline, or cancelled with its turn.

// Stream events of native requests.
const (
	// EventApprovalRequest asks the gateway to approve a native action
	// (ApprovalRequest).
	EventApprovalRequest = "approval_request"
	// EventUserInputRequest asks the gateway for the user's answers
	// (UserInputRequest).
	EventUserInputRequest = "user_input_request"
	// EventRequestResolved is the one outcome of an approval or user-input
	// request (RequestResolved), journaled before the runtime hears it.
	EventRequestResolved = "request_resolved"
)

// NativeActionOptions are the turn fields that say how native actions are
// approved and whether the runtime may ask the user. The zero value keeps
// the runtime's actions unattended: approvalMode never, no user input.
type NativeActionOptions struct {
	// ApprovalMode is how native actions (commands, file changes,
	// permission and MCP requests) are approved: never (the default: they
	// run without asking), untrusted (every action the runtime does not
	// consider safe is asked for) or on-request (the model asks when it
	// wants to).
	ApprovalMode ApprovalMode `json:"approvalMode,omitempty"`
	// CollaborationMode is the runtime's collaboration mode for the turn:
	// default or plan (the runtime proposes a plan and may ask the user).
	CollaborationMode CollaborationMode `json:"collaborationMode,omitempty"`
}

// ApprovalMode is the attempt's approvalMode.
type ApprovalMode string

// Approval modes.
const (
	ApprovalModeNever     ApprovalMode = "never"
	ApprovalModeUntrusted ApprovalMode = "untrusted"
	ApprovalModeOnRequest ApprovalMode = "on-request"
)

// CollaborationMode is the attempt's collaborationMode.
type CollaborationMode string

// Collaboration modes.
const (
	CollaborationDefault CollaborationMode = "default"
	CollaborationPlan    CollaborationMode = "plan"
)

// ApprovalKind says what a native action approval is about.
type ApprovalKind string

// Approval kinds.
const (
	ApprovalCommand        ApprovalKind = "command"
	ApprovalFileChange     ApprovalKind = "file_change"
	ApprovalPermissions    ApprovalKind = "permissions"
	ApprovalMCPElicitation ApprovalKind = "mcp_elicitation"
)

// ApprovalDecision is the gateway's answer to an approval request.
type ApprovalDecision string

// Approval decisions.
const (
	// ApproveOnce lets this one action run.
	ApproveOnce ApprovalDecision = "approve_once"
	// ApproveForTurn lets this action and every identical later one of the
	// same turn run without asking again; it ends with the turn.
	ApproveForTurn ApprovalDecision = "approve_for_turn"
	// Deny stops the action; the turn goes on and the model is told.
	Deny ApprovalDecision = "deny"
)

// ApprovalRequest is the payload of an approval_request event: the facts of
// the native action the runtime wants to run, before it runs.
type ApprovalRequest struct {
	// RequestID identifies the request within the run; the answer names it.
	RequestID string `json:"requestId"`
	// Kind is command, file_change, permissions or mcp_elicitation.
	Kind ApprovalKind `json:"kind"`
	// CallID is the native item id: the callId of the action's tool events
	// and tool_terminal.
	CallID string `json:"callId"`
	// Tool is the canonical tool name (exec, apply_patch, permissions, mcp).
	Tool string `json:"tool"`
	// Command is the command line of a command approval.
	Command string `json:"command,omitempty"`
	// Cwd is the working directory of the action.
	Cwd string `json:"cwd,omitempty"`
	// ChangedPaths are the files a file change would write.
	ChangedPaths []string `json:"changedPaths,omitzero"`
	// Reason is the runtime's explanation, when it gives one.
	Reason string `json:"reason,omitempty"`
	// Permissions is what approving grants beyond the action itself, as
	// the runtime receives it: the whole permissions object of a
	// permissions request (kept by the runtime for the rest of the turn),
	// or the additional permissions a command asks for. A JSON object of
	// at most 16 KiB (MaxApprovalPermissionsBytes). Show it in full: the
	// reason is the model's and need not match it. A permissions request
	// always has it.
	Permissions json.RawMessage `json:"permissions,omitempty"`
	// Decisions are the answers the gateway may give.
	Decisions []ApprovalDecision `json:"decisions"`
	// ExpiresAt is when the request is denied without an answer (the
	// turn's tool timeout from the request).
	ExpiresAt time.Time `json:"expiresAt"`
	// Data is the runtime's raw request.
	Data json.RawMessage `json:"data,omitempty"`
}

// MaxApprovalPermissionsBytes bounds an approval request's permissions
// object. A runtime request with a larger one is denied without asking:
// nobody can review a grant too large to show.
const MaxApprovalPermissionsBytes = 16 << 10

// ApprovalAnswer is the body of POST …/turns/{runId}/approvals.
type ApprovalAnswer struct {
	// RequestID is the approval_request's requestId.
	RequestID string `json:"requestId"`
	// Decision is approve_once, approve_for_turn or deny.
	Decision ApprovalDecision `json:"decision"`
}

// UserInputRequest is the payload of a user_input_request event.
type UserInputRequest struct {
	// RequestID identifies the request within the run; the answer names it.
	RequestID string `json:"requestId"`
	// CallID is the native item id of the request.
	CallID string `json:"callId"`
	// Questions are asked together; each is answered by its id.
	Questions []UserInputQuestion `json:"questions"`
	// ExpiresAt is when the request is resolved without answers (the
	// turn's tool timeout from the request).
	ExpiresAt time.Time `json:"expiresAt"`
}

// UserInputQuestion is one question of a user-input request.
type UserInputQuestion struct {
	// ID names the question in the answer.
	ID string `json:"id"`
	// Header is a short title.
	Header string `json:"header,omitempty"`
	// Question is the text shown to the user.
	Question string `json:"question"`
	// Options are the choices; empty means a free-form answer.
	Options []UserInputOption `json:"options,omitzero"`
	// AllowOther allows a free-form answer besides the options.
	AllowOther bool `json:"allowOther,omitempty"`
	// Secret asks the client not to echo or keep the answer.
	Secret bool `json:"secret,omitempty"`
}

// UserInputOption is one choice of a question.
type UserInputOption struct {
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// UserInputAnswer is the body of POST …/turns/{runId}/user-input.
type UserInputAnswer struct {
	// RequestID is the user_input_request's requestId.
	RequestID string `json:"requestId"`
	// Answers map question ids to answers; a question left out is
	// unanswered.
	Answers map[string]UserInputValue `json:"answers"`
}

// UserInputValue answers one question: chosen option labels, free-form
// text, or both (an "other" answer next to choices).
type UserInputValue struct {
	Choices []string `json:"choices,omitzero"`
	Text    string   `json:"text,omitempty"`
}

// Resolution is how a native request ended.
type Resolution string

// Resolutions.
const (
	ResolvedApprovedOnce    Resolution = "approved_once"
	ResolvedApprovedForTurn Resolution = "approved_for_turn"
	ResolvedDenied          Resolution = "denied"
	ResolvedAnswered        Resolution = "answered"
	// ResolvedTimedOut: no answer before ExpiresAt; an approval is denied,
	// a user-input request gets no answers.
	ResolvedTimedOut Resolution = "timed_out"
	// ResolvedCancelled: the turn ended (interrupt, deadline, shutdown)
	// before an answer.
	ResolvedCancelled Resolution = "cancelled"
)

// RequestResolved is the payload of a request_resolved event.
type RequestResolved struct {
	// RequestID is the resolved request.
	RequestID string `json:"requestId"`
	// CallID is the native item id of the action or question (the callId
	// of its tool events and tool_terminal).
	CallID string `json:"callId,omitempty"`
	// Resolution is how it ended.
	Resolution Resolution `json:"resolution"`
	// AutoApproved marks an approval answered by an earlier
	// approve_for_turn of the same turn, not asked again.
	AutoApproved bool `json:"autoApproved,omitempty"`
	// Answers are a user-input request's answers (omitted for secret
	// questions).
	Answers map[string]UserInputValue `json:"answers,omitzero"`
}
