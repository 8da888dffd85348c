package adapter

import "github.com/openclaw/harness-operator/internal/contract/wire"

// Event is one stream event an adapter emits: Type is one of the wire
// package's event names (partial, agent_event, tool_call, tool_terminal,
// transcript, approval_request, user_input_request, request_resolved,
// media) and exactly the payload field it names is set; Payload returns
// it.
type Event struct {
	Type         string                 `json:"type"`
	Partial      *wire.Partial          `json:"partial,omitempty"`
	Agent        *wire.AgentEvent       `json:"agentEvent,omitempty"`
	ToolCall     *wire.ToolCall         `json:"toolCall,omitempty"`
	ToolTerminal *wire.ToolTerminal     `json:"toolTerminal,omitempty"`
	Transcript   *wire.TranscriptRecord `json:"transcript,omitempty"`

	ApprovalRequest  *wire.ApprovalRequest  `json:"approvalRequest,omitempty"`
	UserInputRequest *wire.UserInputRequest `json:"userInputRequest,omitempty"`
	RequestResolved  *wire.RequestResolved  `json:"requestResolved,omitempty"`

	Media *wire.NativeMedia `json:"media,omitempty"`
}

// Payload returns the event's payload (a *wire.Partial, *wire.AgentEvent,
// *wire.ToolCall, *wire.ToolTerminal, *wire.TranscriptRecord,
// *wire.ApprovalRequest, *wire.UserInputRequest, *wire.RequestResolved or
// *wire.NativeMedia),
// or nil.
func (e Event) Payload() any {
	switch e.Type {
	case wire.EventPartial:
		return e.Partial
	case wire.EventAgent:
		return e.Agent
	case wire.EventToolCall:
		return e.ToolCall
	case wire.EventToolTerminal:
		return e.ToolTerminal
	case wire.EventTranscript:
		return e.Transcript
	case wire.EventApprovalRequest:
		return e.ApprovalRequest
	case wire.EventUserInputRequest:
		return e.UserInputRequest
	case wire.EventRequestResolved:
		return e.RequestResolved
	case wire.EventMedia:
		return e.Media
	}
	return nil
}
