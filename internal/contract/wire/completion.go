package wire

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Isolated completion and settled-turn finalization (the harness SDK's
// runIsolatedCompletionV2 and finalizeSettledTurn): one fresh prompt-only
// inference on the selected harness with an empty model-callable tool
// surface, no native thread state, no approvals, no user input.

// Completion limits: a request over them is refused (400 naming the field),
// never truncated — the harness SDK forbids dropping history from a frozen
// transcript.
const (
	// MaxCompletionMessages bounds a completion request's messages[].
	MaxCompletionMessages = 1000
	// MaxCompletionBytes bounds the summed text of a completion request's
	// prompt, instructions and messages.
	MaxCompletionBytes = 4 << 20
)

// TranscriptSourceOpenClaw is the only transcript source a finalization
// accepts: the gateway's application transcript, frozen at the settled
// tool-result boundary (the harness SDK's settledTurnFinalizationContext source).
const TranscriptSourceOpenClaw = "openclaw-transcript"

// CompletionRequest is the body of POST …/completions (an isolated
// completion) and of POST …/turns/{runId}/finalize (a settled-turn
// finalization): the selection attempt (embedded, so the JSON stays flat)
// plus the completion's input.
type CompletionRequest struct {
	Attempt
	// AuthProfileTurnFields: the call's model request authenticates with
	// this profile, as a turn's would (the harness SDK's V2 "credential snapshot
	// restricted to the single profile selected for that call").
	AuthProfileTurnFields

	// Instructions replace the runtime's own system prompt for this call.
	// The Codex harness requires them (without, Codex would send its own
	// coding-agent prompt, which describes tools the call does not have).
	Instructions string `json:"instructions,omitempty"`
	// TranscriptSource names where Messages come from; a finalization
	// requires TranscriptSourceOpenClaw.
	TranscriptSource string `json:"transcriptSource,omitempty"`
	// Messages are the conversation before Prompt, sent to the model as
	// they are (a finalization: the settled attempt's frozen transcript).
	Messages []CompletionMessage `json:"messages,omitzero"`
	// Prompt is the one new user message (a finalization: the host's
	// finalization prompt).
	Prompt string `json:"prompt"`
	// TimeoutMs bounds the call (the dispatcher's turn default when zero).
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
}

// Message roles of a CompletionMessage.
const (
	MessageRoleUser       = "user"
	MessageRoleAssistant  = "assistant"
	MessageRoleToolCall   = "toolCall"
	MessageRoleToolResult = "toolResult"
)

// CompletionMessage is one message of a frozen transcript.
type CompletionMessage struct {
	// Role is user, assistant, toolCall or toolResult.
	Role string `json:"role"`
	// Text is the message text (user, assistant) or the tool's output
	// (toolResult).
	Text string `json:"text,omitempty"`
	// CallID pairs a toolCall with its toolResult.
	CallID string `json:"callId,omitempty"`
	// Name is the called tool (toolCall).
	Name string `json:"name,omitempty"`
	// Arguments are the call's JSON arguments (toolCall).
	Arguments string `json:"arguments,omitempty"`
}

// Finish reasons of a CompletionResult: the harness SDK accepts only these two.
const (
	FinishStop   = "stop"
	FinishLength = "length"
)

// CompletionResult is the answer of an isolated completion or a
// finalization: only the assistant message, its finish reason and usage
// cross this boundary (no tool, delivery, session or thread state).
type CompletionResult struct {
	// HarnessID is the harness that answered.
	HarnessID string `json:"harnessId"`
	// Text is the assistant's visible answer.
	Text string `json:"text"`
	// Reasoning is the model's reasoning summary, if it reported one.
	Reasoning string `json:"reasoning,omitempty"`
	// FinishReason is stop or length.
	FinishReason string `json:"finishReason"`
	// Usage counts the call's tokens.
	Usage Usage `json:"usage"`
}

// CompletionResponse is the 200 answer of …/completions and …/finalize:
// the decision (with the selected harness's capabilities) and the result.
// A refusal is an Error, as for a turn.
type CompletionResponse struct {
	// Decision is the selection decision the call ran on.
	Decision Decision `json:"decision"`
	// Result is the assistant's answer.
	Result *CompletionResult `json:"result"`
}

// Validate checks the attempt and the completion input's shape; finalize
// also requires a settled frozen transcript. Errors are *FieldError naming
// the field.
func (r *CompletionRequest) Validate(finalize bool) error {
	if err := r.Attempt.Validate(); err != nil {
		return err
	}
	bad := func(field, format string, args ...any) error {
		return &FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
	}
	if strings.TrimSpace(r.Prompt) == "" {
		return bad("prompt", "is required")
	}
	if err := r.AuthProfileTurnFields.Validate(); err != nil {
		return err
	}
	if err := validTimeout("timeoutMs", r.TimeoutMs, MaxTurnTimeout); err != nil {
		return err
	}
	if finalize {
		if r.TranscriptSource != TranscriptSourceOpenClaw {
			return bad("transcriptSource", "must be %q (the transcript frozen at the settled tool-result boundary), got %q",
				TranscriptSourceOpenClaw, r.TranscriptSource)
		}
		if len(r.Messages) == 0 {
			return bad("messages", "is empty: a finalization needs the settled attempt's frozen transcript")
		}
	}
	if len(r.Messages) > MaxCompletionMessages {
		return bad("messages", "has %d entries, more than the limit of %d", len(r.Messages), MaxCompletionMessages)
	}
	size := len(r.Prompt) + len(r.Instructions)
	open := map[string]bool{}
	for i, m := range r.Messages {
		field := "messages[" + strconv.Itoa(i) + "]"
		size += len(m.Text) + len(m.Arguments) + len(m.Name)
		switch m.Role {
		case MessageRoleUser, MessageRoleAssistant:
		case MessageRoleToolCall:
			if m.CallID == "" || m.Name == "" {
				return bad(field, "a toolCall needs callId and name")
			}
			open[m.CallID] = true
		case MessageRoleToolResult:
			if !open[m.CallID] {
				return bad(field, "toolResult %q has no earlier toolCall", m.CallID)
			}
			delete(open, m.CallID)
		default:
			return bad(field+".role", "%q is not user, assistant, toolCall or toolResult", m.Role)
		}
	}
	if size > MaxCompletionBytes {
		return bad("messages", "prompt, instructions and messages hold %d bytes, more than the limit of %d", size, MaxCompletionBytes)
	}
	if finalize && len(open) > 0 {
		return bad("messages", "tool calls without a result (the transcript is not settled): %s",
			strings.Join(slices.Sorted(maps.Keys(open)), ", "))
	}
	return nil
}
