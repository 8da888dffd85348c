package appserver

import (
	"encoding/json"
)

// Event is a server notification (or a handled server request) that belongs
// to one turn. The concrete types are ItemStarted, ItemCompleted,
// AgentMessageDelta, ReasoningDelta, PlanDelta, PlanUpdated,
// CommandOutputDelta, TokenUsageUpdated, ErrorNotice, TurnStarted,
// TurnCompletedEvent, ServerRequestHandled and OtherEvent.
type Event interface {
	// Meta returns the method, thread, turn and raw params.
	Meta() EventMeta
	isEvent()
}

// EventMeta is common to all events.
type EventMeta struct {
	Method   string
	ThreadID string
	TurnID   string
	// Params is the raw params object.
	Params json.RawMessage
}

// Meta implements Event.
func (m EventMeta) Meta() EventMeta { return m }
func (EventMeta) isEvent()          {}

// ItemStarted is item/started.
type ItemStarted struct {
	EventMeta
	Item Item
}

// ItemCompleted is item/completed.
type ItemCompleted struct {
	EventMeta
	Item Item
}

// AgentMessageDelta is item/agentMessage/delta: streamed assistant text.
type AgentMessageDelta struct {
	EventMeta
	ItemID string
	Delta  string
}

// ReasoningDelta is item/reasoning/summaryTextDelta (Summary true) or
// item/reasoning/textDelta.
type ReasoningDelta struct {
	EventMeta
	ItemID  string
	Delta   string
	Summary bool
	Index   int
}

// PlanDelta is item/plan/delta (streamed text of a plan item).
type PlanDelta struct {
	EventMeta
	ItemID string
	Delta  string
}

// PlanUpdated is turn/plan/updated (the update_plan tool's checklist).
type PlanUpdated struct {
	EventMeta
	Explanation string
	Plan        []PlanStep
}

// CommandOutputDelta is item/commandExecution/outputDelta.
type CommandOutputDelta struct {
	EventMeta
	ItemID string
	Delta  string
}

// TokenUsageUpdated is thread/tokenUsage/updated.
type TokenUsageUpdated struct {
	EventMeta
	Usage TokenUsage
}

// ErrorNotice is the error notification: a model or runtime error during the
// turn. WillRetry false means the turn is about to fail.
type ErrorNotice struct {
	EventMeta
	Error     TurnError
	WillRetry bool
}

// TurnStarted is turn/started.
type TurnStarted struct {
	EventMeta
	Turn TurnInfo
}

// TurnCompletedEvent is turn/completed; Turn.Status is completed, failed or
// interrupted. It is the last event of a turn.
type TurnCompletedEvent struct {
	EventMeta
	Turn TurnInfo
}

// ServerRequestHandled records a server-initiated request of this turn
// (dynamic tool call, approval, user input) and the answer the client sent,
// so that callers can show declined requests visibly.
type ServerRequestHandled struct {
	EventMeta
	// Kind classifies the request.
	Kind ServerRequestKind
	// Response is the JSON result sent back (nil when an error was sent).
	Response json.RawMessage
	// Declined reports an approval or user-input request that was declined
	// or cancelled, or a tool call answered with success false.
	Declined bool
}

// OtherEvent is any other notification of the turn.
type OtherEvent struct {
	EventMeta
}

// ServerRequestKind classifies server-initiated requests.
type ServerRequestKind string

// Server request kinds.
const (
	KindToolCall    ServerRequestKind = "toolCall"
	KindApproval    ServerRequestKind = "approval"
	KindUserInput   ServerRequestKind = "userInput"
	KindElicitation ServerRequestKind = "elicitation"
	KindUnsupported ServerRequestKind = "unsupported"
)

// decodeEvent turns a notification into a typed event. Decoding errors
// degrade to OtherEvent.
func decodeEvent(meta EventMeta) Event {
	p := meta.Params
	switch meta.Method {
	case MethodItemStarted, MethodItemCompleted:
		var v struct {
			Item Item `json:"item"`
		}
		if json.Unmarshal(p, &v) == nil {
			if meta.Method == MethodItemStarted {
				return ItemStarted{meta, v.Item}
			}
			return ItemCompleted{meta, v.Item}
		}
	case MethodAgentDelta, MethodPlanDelta, MethodCommandOutput, MethodReasoningDelta, MethodSummaryDelta:
		var v struct {
			ItemID       string `json:"itemId"`
			Delta        string `json:"delta"`
			SummaryIndex int    `json:"summaryIndex"`
			ContentIndex int    `json:"contentIndex"`
		}
		if json.Unmarshal(p, &v) == nil {
			switch meta.Method {
			case MethodAgentDelta:
				return AgentMessageDelta{meta, v.ItemID, v.Delta}
			case MethodPlanDelta:
				return PlanDelta{meta, v.ItemID, v.Delta}
			case MethodCommandOutput:
				return CommandOutputDelta{meta, v.ItemID, v.Delta}
			case MethodSummaryDelta:
				return ReasoningDelta{meta, v.ItemID, v.Delta, true, v.SummaryIndex}
			default:
				return ReasoningDelta{meta, v.ItemID, v.Delta, false, v.ContentIndex}
			}
		}
	case MethodPlanUpdated:
		var v struct {
			Explanation *string    `json:"explanation"`
			Plan        []PlanStep `json:"plan"`
		}
		if json.Unmarshal(p, &v) == nil {
			e := PlanUpdated{EventMeta: meta, Plan: v.Plan}
			if v.Explanation != nil {
				e.Explanation = *v.Explanation
			}
			return e
		}
	case MethodTokenUsage:
		var v struct {
			TokenUsage TokenUsage `json:"tokenUsage"`
		}
		if json.Unmarshal(p, &v) == nil {
			return TokenUsageUpdated{meta, v.TokenUsage}
		}
	case MethodError:
		var v struct {
			Error     TurnError `json:"error"`
			WillRetry bool      `json:"willRetry"`
		}
		if json.Unmarshal(p, &v) == nil {
			return ErrorNotice{meta, v.Error, v.WillRetry}
		}
	case MethodTurnStarted, MethodTurnCompleted:
		var v struct {
			Turn TurnInfo `json:"turn"`
		}
		if json.Unmarshal(p, &v) == nil {
			if meta.Method == MethodTurnStarted {
				return TurnStarted{meta, v.Turn}
			}
			return TurnCompletedEvent{meta, v.Turn}
		}
	}
	return OtherEvent{meta}
}

// TurnResult summarizes a finished turn (Turn.Wait, Turn.Run).
type TurnResult struct {
	TurnID string
	Status TurnStatus
	// Error is set for a failed turn.
	Error *TurnError
	// Text is the visible assistant text: the completed agentMessage items
	// joined by blank lines.
	Text string
	// AgentMessages are the texts of the completed agentMessage items.
	AgentMessages []string
	// Deltas counts the agent-message deltas received.
	Deltas int
	// Reasoning holds the summaries and content of completed reasoning
	// items; Plans the texts of completed plan items.
	Reasoning []string
	Plans     []string
	// Items are all completed items, in order. Items started but never
	// completed (cut off by an interrupt) are dropped.
	Items []Item
	// Usage is the last token usage reported for the turn.
	Usage *TokenUsage
	// Errors are the error notifications of the turn.
	Errors []ErrorNotice
	// ServerRequests are the server requests handled during the turn.
	ServerRequests []ServerRequestHandled
}

func (r *TurnResult) add(ev Event) {
	switch e := ev.(type) {
	case ItemCompleted:
		r.Items = append(r.Items, e.Item)
		switch e.Item.Type {
		case "agentMessage":
			r.AgentMessages = append(r.AgentMessages, e.Item.Text)
			if r.Text != "" {
				r.Text += "\n\n"
			}
			r.Text += e.Item.Text
		case "reasoning":
			r.Reasoning = append(r.Reasoning, e.Item.Summary...)
			r.Reasoning = append(r.Reasoning, e.Item.ReasoningContent...)
		case "plan":
			r.Plans = append(r.Plans, e.Item.Text)
		}
	case AgentMessageDelta:
		r.Deltas++
	case TokenUsageUpdated:
		u := e.Usage
		r.Usage = &u
	case ErrorNotice:
		r.Errors = append(r.Errors, e)
	case ServerRequestHandled:
		r.ServerRequests = append(r.ServerRequests, e)
	case TurnCompletedEvent:
		r.Status = e.Turn.Status
		r.Error = e.Turn.Error
	}
}
