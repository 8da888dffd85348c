package codex

import (
	"encoding/json"
	"testing"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

// How Codex's end of a turn, and why the adapter asked it to stop, become
// the turn's terminal. A gateway whose turn passed its deadline or that
// interrupted it is never told it completed, even when Codex completed it.
func TestTerminalOf(t *testing.T) {
	details := "HTTP 500"
	for _, tc := range []struct {
		name      string
		info      appserver.TurnInfo
		stopCause error
		want      wire.Terminal
	}{
		{"completed", appserver.TurnInfo{Status: appserver.TurnCompleted}, nil, wire.Terminal{Kind: wire.TerminalOK}},
		{"completed after the deadline's interrupt", appserver.TurnInfo{Status: appserver.TurnCompleted}, errTimeout,
			wire.Terminal{Kind: wire.TerminalTimeout, Message: "the turn's deadline passed; it was interrupted; Codex completed the turn before the interrupt took effect"}},
		{"completed after the gateway's interrupt", appserver.TurnInfo{Status: appserver.TurnCompleted}, errAborted,
			wire.Terminal{Kind: wire.TerminalAborted, Message: "the turn was interrupted; Codex completed the turn before the interrupt took effect"}},
		{"interrupted at the deadline", appserver.TurnInfo{Status: appserver.TurnInterrupted}, errTimeout,
			wire.Terminal{Kind: wire.TerminalTimeout, Message: "the turn's deadline passed; it was interrupted"}},
		{"interrupted by the gateway", appserver.TurnInfo{Status: appserver.TurnInterrupted}, errAborted,
			wire.Terminal{Kind: wire.TerminalAborted, Message: "the turn was interrupted"}},
		{"interrupted by no one the adapter knows", appserver.TurnInfo{Status: appserver.TurnInterrupted}, nil,
			wire.Terminal{Kind: wire.TerminalAborted, Message: "the turn was interrupted"}},
		{"failed with details", appserver.TurnInfo{Status: appserver.TurnFailed, Error: &appserver.TurnError{
			Message: "the model failed", CodexErrorInfo: json.RawMessage(`"internalServerError"`), AdditionalDetails: &details}}, nil,
			wire.Terminal{Kind: wire.TerminalFailed, Message: "the model failed: HTTP 500", ErrorInfo: "internalServerError"}},
		{"failed after the deadline's interrupt stays failed", appserver.TurnInfo{Status: appserver.TurnFailed}, errTimeout,
			wire.Terminal{Kind: wire.TerminalFailed, Message: "the turn failed"}},
		{"an unknown status fails", appserver.TurnInfo{Status: "paused"}, nil,
			wire.Terminal{Kind: wire.TerminalFailed, Message: `the turn ended with status "paused"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := terminalOf(tc.info, tc.stopCause); got != tc.want {
				t.Fatalf("terminalOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}
