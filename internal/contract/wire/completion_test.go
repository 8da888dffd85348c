package wire

import (
	"strings"
	"testing"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

func TestCompletionRequestValidate(t *testing.T) {
	settled := []CompletionMessage{
		{Role: MessageRoleUser, Text: "count the lines"},
		{Role: MessageRoleToolCall, CallID: "c1", Name: "read_file", Arguments: "{}"},
		{Role: MessageRoleToolResult, CallID: "c1", Text: "a\nb"},
	}
	cases := []struct {
		name     string
		req      CompletionRequest
		finalize bool
		wantErr  string // "" means valid
	}{
		{name: "a completion needs only a prompt", req: CompletionRequest{Prompt: "hi"}},
		{name: "a prompt is required", req: CompletionRequest{}, wantErr: "prompt: is required"},
		{name: "timeoutMs above a day is refused", req: CompletionRequest{Prompt: "hi", TimeoutMs: MaxTurnTimeout.Milliseconds() + 1},
			wantErr: "timeoutMs"},
		{name: "a finalization on the settled transcript", finalize: true,
			req: CompletionRequest{Prompt: "finish", TranscriptSource: TranscriptSourceOpenClaw, Messages: settled}},
		{name: "the harness SDK: a finalizer rejects an unsupported transcript source", finalize: true,
			req: CompletionRequest{Prompt: "finish", TranscriptSource: "native", Messages: settled}, wantErr: "transcriptSource"},
		{name: "the harness SDK: a finalizer rejects a missing context", finalize: true,
			req: CompletionRequest{Prompt: "finish", TranscriptSource: TranscriptSourceOpenClaw}, wantErr: "messages: is empty"},
		{name: "the harness SDK: every tool call must be settled", finalize: true,
			req:     CompletionRequest{Prompt: "finish", TranscriptSource: TranscriptSourceOpenClaw, Messages: settled[:2]},
			wantErr: "without a result (the transcript is not settled): c1"},
		{name: "a tool result needs its call", req: CompletionRequest{Prompt: "hi",
			Messages: []CompletionMessage{{Role: MessageRoleToolResult, CallID: "x"}}}, wantErr: "messages[0]: toolResult"},
		{name: "a tool call needs callId and name", req: CompletionRequest{Prompt: "hi",
			Messages: []CompletionMessage{{Role: MessageRoleToolCall, CallID: "x"}}}, wantErr: "messages[0]: a toolCall needs"},
		{name: "an unknown role is refused", req: CompletionRequest{Prompt: "hi",
			Messages: []CompletionMessage{{Role: "system", Text: "x"}}}, wantErr: `messages[0].role: "system"`},
		{name: "the harness SDK: an oversized context is rejected, never truncated",
			req: CompletionRequest{Prompt: "hi", Messages: []CompletionMessage{{Role: MessageRoleUser,
				Text: strings.Repeat("x", MaxCompletionBytes)}}}, wantErr: "more than the limit"},
		{name: "too many messages are refused",
			req: CompletionRequest{Prompt: "hi", Messages: make([]CompletionMessage, MaxCompletionMessages+1)}, wantErr: "entries"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.req.Validate(tc.finalize)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// The codex-app-server adapter declares every capability a gateway may ask
// for exactly once, so absent is never confused with unknown; isolated
// completion and finalization are per model; an adapter this dispatcher
// cannot drive offers nothing.
func TestAdapterCapabilitiesListEveryCapability(t *testing.T) {
	all := []v1alpha1.HarnessCapabilityName{v1alpha1.CapabilityTurns, v1alpha1.CapabilityHostTools, v1alpha1.CapabilityInterrupt,
		v1alpha1.CapabilityApprovals, v1alpha1.CapabilityUserInput, v1alpha1.CapabilityMCP, v1alpha1.CapabilityReseed,
		v1alpha1.CapabilityIsolatedCompletion, v1alpha1.CapabilitySettledTurnFinalization,
		v1alpha1.CapabilityDelegatedExecution, v1alpha1.CapabilityAuthProfiles}
	caps := AdapterCapabilities(v1alpha1.AdapterCodexAppServer)
	if len(caps) != len(all) {
		t.Fatalf("%d capabilities, want %d: %+v", len(caps), len(all), caps)
	}
	for i, n := range all {
		if caps[i].Name != n {
			t.Fatalf("capabilities[%d] is %s, want %s", i, caps[i].Name, n)
		}
	}
	for _, n := range []v1alpha1.HarnessCapabilityName{v1alpha1.CapabilityIsolatedCompletion, v1alpha1.CapabilitySettledTurnFinalization} {
		if got := CapabilityOf(caps, n); got != v1alpha1.CapabilityModelDependent {
			t.Fatalf("%s is %s, want ModelDependent", n, got)
		}
	}
	if got := CapabilityOf(caps, v1alpha1.CapabilityTurns); got != v1alpha1.CapabilitySupported {
		t.Fatalf("Turns is %s", got)
	}
	if caps := AdapterCapabilities("other"); caps != nil || CapabilityOf(caps, v1alpha1.CapabilityTurns) != v1alpha1.CapabilityUnsupported {
		t.Fatalf("an unknown adapter offers %+v", caps)
	}
}
