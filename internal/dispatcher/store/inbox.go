package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// InboxKind is what an inbox message answers (Store.Post).
type InboxKind string

// The kinds of inbox messages.
const (
	// InboxToolResult is a host tool's result; its key is the callId.
	InboxToolResult InboxKind = "tool_result"
	// InboxApproval is an approval decision; its key is the requestId.
	InboxApproval InboxKind = "approval"
	// InboxUserInput is a user-input answer; its key is the requestId.
	InboxUserInput InboxKind = "user_input"
	// InboxInterrupt asks the turn to stop; its key is InterruptKey.
	InboxInterrupt InboxKind = "interrupt"
)

// InterruptKey is the key of every interrupt: a run is interrupted once.
const InterruptKey = "interrupt"

// Limits of an inbox message.
const (
	// MaxInboxKeyBytes is the longest key Post accepts.
	MaxInboxKeyBytes = 512
	// MaxInboxPayloadBytes is the largest payload Post accepts, compacted:
	// above the dispatcher API's default body limit, so that only a
	// message the API would not take either is refused here.
	MaxInboxPayloadBytes = 4 << 20
)

// InboxMessage is one answer posted to a running run for the dispatcher
// that owns its turn.
type InboxMessage struct {
	// Seq is 1, 2, … per run, in the order the messages were posted; Post
	// assigns it.
	Seq  int64     `json:"seq"`
	Kind InboxKind `json:"kind"`
	// Key names what the message answers within its kind: the callId of a
	// tool result, the requestId of an approval or user-input answer,
	// InterruptKey for an interrupt.
	Key string `json:"key"`
	// Payload is the answer as compact JSON, or nil.
	Payload json.RawMessage `json:"payload,omitempty"`
	// At is when Post recorded it (the store's clock); Post assigns it.
	At time.Time `json:"at"`
}

// NormalizeInbox checks the message Post was given and returns it as the
// store keeps it: an interrupt's empty key is InterruptKey, the payload is
// compacted (nil when empty); Seq and At are left for Post. It fails with
// ErrInvalidMessage naming the field: a kind that is not one of the four, a
// key that is empty, longer than MaxInboxKeyBytes, not UTF-8 or holds NUL,
// an interrupt key other than InterruptKey, a payload that is not JSON or
// larger than MaxInboxPayloadBytes.
func NormalizeInbox(m InboxMessage) (InboxMessage, error) {
	switch m.Kind {
	case InboxToolResult, InboxApproval, InboxUserInput:
	case InboxInterrupt:
		if m.Key == "" {
			m.Key = InterruptKey
		}
		if m.Key != InterruptKey {
			return InboxMessage{}, fmt.Errorf("%w: key %q of an interrupt: want %q or empty", ErrInvalidMessage, m.Key, InterruptKey)
		}
	default:
		return InboxMessage{}, fmt.Errorf("%w: kind %q: want %s, %s, %s or %s",
			ErrInvalidMessage, m.Kind, InboxToolResult, InboxApproval, InboxUserInput, InboxInterrupt)
	}
	if m.Key == "" || len(m.Key) > MaxInboxKeyBytes || !utf8.ValidString(m.Key) || strings.ContainsRune(m.Key, 0) {
		return InboxMessage{}, fmt.Errorf("%w: key of the %s message: must be 1 to %d bytes of UTF-8 without NUL (its callId or requestId)",
			ErrInvalidMessage, m.Kind, MaxInboxKeyBytes)
	}
	if len(bytes.TrimSpace(m.Payload)) == 0 {
		m.Payload = nil
		return m, nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, m.Payload); err != nil {
		return InboxMessage{}, fmt.Errorf("%w: payload of %s %q: not JSON: %w", ErrInvalidMessage, m.Kind, m.Key, err)
	}
	if b.Len() > MaxInboxPayloadBytes {
		return InboxMessage{}, fmt.Errorf("%w: payload of %s %q: %d bytes, over the limit of %d",
			ErrInvalidMessage, m.Kind, m.Key, b.Len(), MaxInboxPayloadBytes)
	}
	m.Payload = b.Bytes()
	return m, nil
}

// AlreadyPostedError reports a Post refused because the run's inbox already
// holds a message of that kind and key: the request was answered (the
// dispatcher maps it to RequestAlreadyResolved, 409). Nothing was recorded.
type AlreadyPostedError struct {
	Session string
	RunID   string
	Kind    InboxKind
	Key     string
	Seq     int64 // the recorded message's
}

// Error implements error.
func (e *AlreadyPostedError) Error() string {
	return fmt.Sprintf("store: run %q of session %s already has the %s %q (inbox message %d)", e.RunID, e.Session, e.Kind, e.Key, e.Seq)
}

// Unwrap makes errors.Is(err, ErrAlreadyPosted) true.
func (e *AlreadyPostedError) Unwrap() error { return ErrAlreadyPosted }
