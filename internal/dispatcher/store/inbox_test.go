package store_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// TestNormalizeInboxRefusesWhatPostCannotKeepNamingTheField: a gateway's
// malformed answer is refused with ErrInvalidMessage and an error that
// names the field it got wrong; a valid one is kept compacted, an
// interrupt under its fixed key.
func TestNormalizeInboxRefusesWhatPostCannotKeepNamingTheField(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in       store.InboxMessage
		wantErr  string // a word of the error: the field; empty for none
		wantKey  string
		wantBody string
	}{
		{name: "tool result", in: store.InboxMessage{Kind: store.InboxToolResult, Key: "call-1", Payload: json.RawMessage("{ \"a\" : 1 }\n")},
			wantKey: "call-1", wantBody: `{"a":1}`},
		{name: "approval without payload", in: store.InboxMessage{Kind: store.InboxApproval, Key: "7", Payload: json.RawMessage("  ")}, wantKey: "7"},
		{name: "interrupt gets its key", in: store.InboxMessage{Kind: store.InboxInterrupt}, wantKey: store.InterruptKey},
		{name: "interrupt with its key", in: store.InboxMessage{Kind: store.InboxInterrupt, Key: store.InterruptKey}, wantKey: store.InterruptKey},
		{name: "unknown kind", in: store.InboxMessage{Kind: "tool-result", Key: "call-1"}, wantErr: "kind"},
		{name: "no kind", in: store.InboxMessage{Key: "call-1"}, wantErr: "kind"},
		{name: "no key", in: store.InboxMessage{Kind: store.InboxUserInput}, wantErr: "key"},
		{name: "key too long", in: store.InboxMessage{Kind: store.InboxApproval, Key: strings.Repeat("k", store.MaxInboxKeyBytes+1)}, wantErr: "key"},
		{name: "key not UTF-8", in: store.InboxMessage{Kind: store.InboxApproval, Key: "\xff"}, wantErr: "key"},
		{name: "key with NUL", in: store.InboxMessage{Kind: store.InboxApproval, Key: "a\x00b"}, wantErr: "key"},
		{name: "interrupt with another key", in: store.InboxMessage{Kind: store.InboxInterrupt, Key: "stop"}, wantErr: "key"},
		{name: "payload not JSON", in: store.InboxMessage{Kind: store.InboxToolResult, Key: "call-1", Payload: json.RawMessage("{")}, wantErr: "payload"},
		{name: "payload too large", in: store.InboxMessage{Kind: store.InboxToolResult, Key: "call-1",
			Payload: json.RawMessage(`"` + strings.Repeat("x", store.MaxInboxPayloadBytes) + `"`)}, wantErr: "payload"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := store.NormalizeInbox(tc.in)
			if tc.wantErr != "" {
				if !errors.Is(err, store.ErrInvalidMessage) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("NormalizeInbox = %v, want ErrInvalidMessage naming the %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("NormalizeInbox: %v", err)
			}
			if got.Kind != tc.in.Kind || got.Key != tc.wantKey || string(got.Payload) != tc.wantBody || (tc.wantBody == "" && got.Payload != nil) {
				t.Fatalf("NormalizeInbox = %+v (payload %q), want key %q and payload %q", got, got.Payload, tc.wantKey, tc.wantBody)
			}
		})
	}
}
