package adapter

import "github.com/openclaw/harness-operator/internal/wire"

// Event is one stream event an adapter emits: Type is one of the wire
// package's event names (partial, agent_event, tool_call, tool_terminal,
// transcript) and exactly the payload field it names is set; Payload returns
// it.
type Event struct {
	Type         string                 `json:"type"`
	Partial      *wire.Partial          `json:"partial,omitempty"`
	Agent        *wire.AgentEvent       `json:"agentEvent,omitempty"`
	ToolCall     *wire.ToolCall         `json:"toolCall,omitempty"`
	ToolTerminal *wire.ToolTerminal     `json:"toolTerminal,omitempty"`
	Transcript   *wire.TranscriptRecord `json:"transcript,omitempty"`
}

// Payload returns the event's payload (a *wire.Partial, *wire.AgentEvent,
// *wire.ToolCall, *wire.ToolTerminal or *wire.TranscriptRecord), or nil.
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
	}
	return nil
}
