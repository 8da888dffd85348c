package wire

import (
	"strconv"
)

// Bounds of a turn's gatewayTranscript: beyond them the request is refused
// (400 naming the field) rather than cut, so the model never sees half a
// conversation. Together they stay inside the API's 1 MiB request body.
const (
	MaxGatewayTranscriptMessages = 256
	MaxGatewayTranscriptBytes    = 512 << 10 // the messages' texts together
)

// GatewayTranscriptFields are a turn request's switching field (embedded in
// TurnRequest, so the JSON stays flat).
type GatewayTranscriptFields struct {
	// GatewayTranscript is the conversation the gateway ran itself (its
	// embedded runtime) since the session's last turn on the dispatcher. The
	// turn continues on a native thread that carries it after the thread's
	// own history, and the transcript mirror records it.
	GatewayTranscript *GatewayTranscript `json:"gatewayTranscript,omitempty"`
}

// GatewayTranscript is what the gateway ran itself since the session's last
// dispatcher turn.
type GatewayTranscript struct {
	// AfterRunID is where the messages start: the runId of the session's
	// last turn the dispatcher ran (status.lastTurn.runId), empty when it ran
	// none. A transcript that starts elsewhere would repeat or skip part of
	// the conversation, so it is refused (SessionMismatch).
	AfterRunID string `json:"afterRunId,omitempty"`
	// Messages are the user and assistant messages, oldest first.
	Messages []GatewayMessage `json:"messages"`
}

// GatewayMessage is one message the gateway's embedded runtime ran.
type GatewayMessage struct {
	// Role is user or assistant.
	Role string `json:"role"`
	// Text is the message's text.
	Text string `json:"text"`
}

// GatewayMessages returns the gateway's messages; none without a transcript.
func (f GatewayTranscriptFields) GatewayMessages() []GatewayMessage {
	if f.GatewayTranscript == nil {
		return nil
	}
	return f.GatewayTranscript.Messages
}

// Validate bounds the transcript and checks each message; the error is a
// *FieldError naming the field.
func (f GatewayTranscriptFields) Validate() error {
	g := f.GatewayTranscript
	if g == nil {
		return nil
	}
	bad := func(field, msg string) error { return &FieldError{Field: "gatewayTranscript" + field, Message: msg} }
	switch {
	case len(g.AfterRunID) > MaxRunIDLength:
		return bad(".afterRunId", "must be at most "+strconv.Itoa(MaxRunIDLength)+" bytes")
	case len(g.Messages) == 0:
		return bad(".messages", "must not be empty (omit gatewayTranscript when the gateway ran nothing)")
	case len(g.Messages) > MaxGatewayTranscriptMessages:
		return bad(".messages", "must have at most "+strconv.Itoa(MaxGatewayTranscriptMessages)+" messages")
	}
	total := 0
	for i, m := range g.Messages {
		field := ".messages[" + strconv.Itoa(i) + "]"
		if m.Role != RoleUser && m.Role != RoleAssistant {
			return bad(field+".role", "must be user or assistant")
		}
		if m.Text == "" {
			return bad(field+".text", "must not be empty")
		}
		if total += len(m.Text); total > MaxGatewayTranscriptBytes {
			return bad(".messages", "texts must total at most "+strconv.Itoa(MaxGatewayTranscriptBytes)+" bytes")
		}
	}
	return nil
}
