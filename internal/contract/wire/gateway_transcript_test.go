package wire

import (
	"strings"
	"testing"
)

func TestGatewayTranscriptIsBoundedAndRefusedByField(t *testing.T) {
	msg := func(role, text string) string { return `{"role":"` + role + `","text":"` + text + `"}` }
	many := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = msg("user", "x")
		}
		return strings.Join(parts, ",")
	}
	big := strings.Repeat("a", MaxGatewayTranscriptBytes/2)
	cases := []struct {
		name, transcript, field string // field "" accepts the request
	}{
		{"a user message and a reply after a run", `{"afterRunId":"run-1","messages":[` + msg("user", "q") + `,` + msg("assistant", "a") + `]}`, ""},
		{"the most messages", `{"messages":[` + many(MaxGatewayTranscriptMessages) + `]}`, ""},
		{"one message too many", `{"messages":[` + many(MaxGatewayTranscriptMessages+1) + `]}`, "gatewayTranscript.messages"},
		{"texts exactly at the byte bound", `{"messages":[` + msg("user", big) + `,` + msg("assistant", big) + `]}`, ""},
		{"texts one byte beyond it", `{"messages":[` + msg("user", big) + `,` + msg("assistant", big+"a") + `]}`, "gatewayTranscript.messages"},
		{"no messages", `{"afterRunId":"run-1","messages":[]}`, "gatewayTranscript.messages"},
		{"a tool role", `{"messages":[` + msg("tool", "x") + `]}`, "gatewayTranscript.messages[0].role"},
		{"an empty text", `{"messages":[` + msg("user", "q") + `,` + msg("assistant", "") + `]}`, "gatewayTranscript.messages[1].text"},
		{"a runId too long", `{"afterRunId":"` + strings.Repeat("r", MaxRunIDLength+1) + `","messages":[` + msg("user", "q") + `]}`, "gatewayTranscript.afterRunId"},
		{"an unknown field", `{"messages":[` + msg("user", "q") + `],"source":"x"}`, "gatewayTranscript.source"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeTurnRequest(strings.NewReader(`{"prompt":"hi","gatewayTranscript":` + c.transcript + `}`))
			expectFieldError(t, err, c.field)
		})
	}
}

func TestGatewayTranscriptIsPartOfTheRequestDigest(t *testing.T) {
	digest := func(text string) [32]byte {
		t.Helper()
		req, err := DecodeTurnRequest(strings.NewReader(`{"prompt":"hi","gatewayTranscript":{"messages":[{"role":"user","text":"` + text + `"}]}}`))
		if err != nil {
			t.Fatal(err)
		}
		d, err := req.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if digest("a") == digest("b") {
		t.Fatal("a retry with another gateway transcript has the same digest: the journal would take it for the recorded request")
	}
}
