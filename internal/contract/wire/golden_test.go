package wire

import (
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// The JSON on the wire is what gateways and kubectl-harness parse; these
// literals were produced by the four error structs this package replaced
// (selection.Error, engine.TurnError, httpapi.Error and the CLI's
// apiError), so a change here is a change of the API.
func TestErrorJSONIsTheDesignShape(t *testing.T) {
	for name, tc := range map[string]struct {
		err  *Error
		want string
	}{
		"outcome unknown": {OutcomeUnknown("the dispatcher stopped"),
			`{"code":"HarnessUnavailable","message":"the turn's outcome is unknown: the dispatcher stopped","scope":"","retryable":true,"replaySafe":false}`},
		"runId conflict": {RunIDConflict("ns/s-uid", "run-1"),
			`{"code":"RunIdConflict","message":"runId \"run-1\" of AgentSession ns/s-uid was used for a different request","scope":"","retryable":false}`},
		"harness-scoped, touched": {Errorf(CodeToolPolicyUnenforceable, ScopeHarness, "m").Touched(true),
			`{"code":"ToolPolicyUnenforceable","message":"m","scope":"harness","retryable":false,"replaySafe":true}`},
		"API code": {Errorf(CodeAuthUnavailable, "", "x"),
			`{"code":"AuthUnavailable","message":"x","scope":"","retryable":true}`},
	} {
		got := mustMarshal(t, tc.err)
		if got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, tc.want)
		}
	}
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The request's JSON is also the journal's digest input: a changed field
// order or tag changes the digest of every request, and a gateway's retry
// of a turn begun before the change would be refused as a RunIdConflict.
func TestTurnRequestJSONAndDigestAreStable(t *testing.T) {
	req := TurnRequest{
		Attempt: Attempt{RunID: "run-1", AgentID: "main", SessionKey: "sk", SessionID: "sid", Provider: "openai", ModelID: "gpt-5", ThinkLevel: "high",
			AgentHarnessID: "codex", AgentHarnessRuntimeOverride: "codex",
			ModelProvider: &ModelProvider{API: "openai-responses", BaseURL: "https://x", RequestTransportOverrides: TransportOverridesNone,
				RuntimePolicy: &RouteRuntimePolicy{CompatibleIDs: []string{"codex"}},
				PreparedAuth:  &PreparedAuth{Source: AuthSourceProfile, Mode: "api-key", Requirement: AuthRequirementAPIKey}},
			ModelProviders: []ModelProvider{{API: "a", RequestTransportOverrides: TransportOverridesPresent}},
			ToolPolicy:     &ToolPolicy{Profile: "coding", AlsoAllow: []string{"x"}, Layers: []ToolPolicyLayer{{Name: "l", Allow: ToolList{}, Deny: []string{"*"}}}},
			ToolsAllow:     ToolList{"read"}, DisableTools: true, PluginHarnessToolPolicyRestricted: true},
		Prompt: "hi", Images: []Image{{URL: "https://i", Detail: "low"}},
		Tools:             []HostTool{{Name: "t", Description: "d", Parameters: json.RawMessage(`{"type":"object"}`)}},
		ExtraSystemPrompt: "x", TimeoutMs: 1000, ToolTimeoutMs: 500, CaptureRuntimeArtifact: true,
		ExpectedRuntimeArtifact: &ExpectedRuntimeArtifact{HarnessID: "codex", ID: "a", Fingerprint: "sha256:f"},
	}
	for _, tc := range []struct {
		req        TurnRequest
		json, hash string
	}{
		{req,
			`{"runId":"run-1","agentId":"main","sessionKey":"sk","sessionId":"sid","provider":"openai","modelId":"gpt-5","thinkLevel":"high","agentHarnessId":"codex","agentHarnessRuntimeOverride":"codex","modelProvider":{"api":"openai-responses","baseUrl":"https://x","requestTransportOverrides":"none","runtimePolicy":{"compatibleIds":["codex"]},"preparedAuth":{"source":"profile","mode":"api-key","requirement":"api-key"}},"modelProviders":[{"api":"a","requestTransportOverrides":"present"}],"toolPolicy":{"profile":"coding","alsoAllow":["x"],"layers":[{"name":"l","allow":[],"deny":["*"]}]},"toolsAllow":["read"],"disableTools":true,"pluginHarnessToolPolicyRestricted":true,"prompt":"hi","images":[{"url":"https://i","detail":"low"}],"tools":[{"name":"t","description":"d","parameters":{"type":"object"}}],"extraSystemPrompt":"x","timeoutMs":1000,"toolTimeoutMs":500,"captureRuntimeArtifact":true,"expectedRuntimeArtifact":{"harnessId":"codex","id":"a","fingerprint":"sha256:f"}}`,
			"120678250c3ff42b10191a10d13c8d2bc16821e4d73a4907e86869f8a46e2ad9"},
		{TurnRequest{}, `{}`, "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"},
	} {
		if got := mustMarshal(t, tc.req); got != tc.json {
			t.Errorf("request JSON:\n got %s\nwant %s", got, tc.json)
		}
		d, err := tc.req.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(d[:]); got != tc.hash {
			t.Errorf("digest of %s = %s, want %s", tc.json, got, tc.hash)
		}
	}
}

func TestEventPayloadJSONIsStable(t *testing.T) {
	exit := 2
	for name, tc := range map[string]struct {
		v    any
		want string
	}{
		// A route's unscoped error carries "scope":"" since its type is the
		// one Error (selection.Error omitted an empty scope;
		// docs/dispatcher-api.md, "Errors": every error carries it). Nothing
		// else changed.
		"selected": {Decision{
			RequestedRuntime: "codex", HarnessID: "codex", HarnessRef: &HarnessRef{Namespace: "ns", Name: "codex-h"},
			RuntimeSource: v1alpha1.RuntimeSourceSession,
			Candidates:    []Candidate{{HarnessID: "codex", HarnessRef: HarnessRef{Namespace: "ns", Name: "codex-h"}, Label: "Codex", Priority: 1, Reason: "why"}},
			Routes: []RouteDecision{{Route: "modelProviders[0]", Runtime: "codex", HarnessID: "codex", Reason: ReasonForcedPlugin},
				{Route: "modelProviders[1]", Error: &Error{Code: CodeHarnessUnsupported, Message: "no"}}},
			ToolPolicy:      &ToolPolicyDecision{Restricted: true, SafeDeniedTools: []string{"exec"}, Reasons: []string{"r"}},
			MatchedPolicies: []string{"p1"},
			Error:           &Error{Code: CodeHarnessUnsupported, Message: "no", Scope: ScopeHarness},
		}, `{"requestedRuntime":"codex","harnessId":"codex","harnessRef":{"namespace":"ns","name":"codex-h"},"runtimeSource":"session","candidates":[{"harnessId":"codex","harnessRef":{"namespace":"ns","name":"codex-h"},"label":"Codex","supported":false,"priority":1,"reason":"why"}],"routes":[{"route":"modelProviders[0]","runtime":"codex","harnessId":"codex","reason":"forced_plugin"},{"route":"modelProviders[1]","error":{"code":"HarnessUnsupported","message":"no","scope":"","retryable":false}}],"toolPolicy":{"restricted":true,"safeDeniedTools":["exec"],"reasons":["r"]},"matchedPolicies":["p1"],"error":{"code":"HarnessUnsupported","message":"no","scope":"harness","retryable":false}}`},
		"result": {ResultEvent{RunID: "run-1", AgentHarnessID: "codex",
			TurnResult: TurnResult{ThreadID: "th", TurnID: "tu", AssistantTexts: []string{"a"}, Terminal: Terminal{Kind: TerminalFailed, Message: "m", ErrorInfo: "e"},
				Classification: ClassEmpty, PlanText: "p", ReasoningText: "r", Usage: Usage{Input: 1, CachedInput: 2, Output: 3, Reasoning: 4, Total: 10},
				LastToolError: &ToolError{CallID: "c", Tool: "t", Arguments: json.RawMessage(`{}`), ExecutionStarted: true, Reason: FailureToolError, Message: "m", Native: true,
					MutatingAction: true, ActionFingerprint: "sha256:f"},
				ToolMediaURLs: []string{"u"}, HostOwnedToolMediaURLs: []string{"u"}},
			RuntimeArtifact: &v1alpha1.RuntimeArtifact{ID: "a", Fingerprint: "f"},
		}, `{"runId":"run-1","threadId":"th","turnId":"tu","assistantTexts":["a"],"terminal":{"kind":"failed","message":"m","errorInfo":"e"},"classification":"empty","planText":"p","reasoningText":"r","usage":{"input":1,"cachedInput":2,"output":3,"reasoning":4,"total":10},"lastToolError":{"callId":"c","tool":"t","arguments":{},"executionStarted":true,"reason":"tool_error","message":"m","native":true,"mutatingAction":true,"actionFingerprint":"sha256:f"},"toolMediaUrls":["u"],"hostOwnedToolMediaUrls":["u"],"agentHarnessId":"codex","runtimeArtifact":{"id":"a","fingerprint":"f"}}`},
		"tool_terminal": {ToolTerminal{CallID: "c", Tool: "t", Arguments: json.RawMessage(`{}`), ExecutionStarted: true, Outcome: OutcomeFailure,
			Failure: &ToolFailure{Reason: FailureNative, Message: "m", ExitCode: &exit}, Native: true,
			NativeMutation: &NativeMutation{Mutation: MutationYes, MutatingAction: true, ChangedPaths: []string{"/w/a"}, ActionFingerprint: "sha256:f"}},
			`{"callId":"c","tool":"t","arguments":{},"executionStarted":true,"outcome":"failure","failure":{"reason":"native_failed","message":"m","exitCode":2},"native":true,` +
				`"nativeMutation":{"mutation":"yes","mutatingAction":true,"replaySafe":false,"changedPaths":["/w/a"],"actionFingerprint":"sha256:f"}}`},
		"tool result body": {ToolResultRequest{CallID: "c", ToolAnswer: ToolAnswer{Content: []ToolContent{{Type: "image", ImageURL: "data:x"}}, IsError: true, ErrorMessage: "m", MediaURLs: []string{"u"}}},
			`{"callId":"c","content":[{"type":"image","imageUrl":"data:x"}],"isError":true,"errorMessage":"m","mediaUrls":["u"]}`},
	} {
		if got := mustMarshal(t, tc.v); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, tc.want)
		}
	}
}
