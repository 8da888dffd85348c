package wire

import (
	"encoding/hex"
	"encoding/json"
	"testing"
)

// The JSON on the wire is what gateways and kubectl-harness parse; these
// literals were produced by the four error structs this package replaced
// (selection.Error, dispatch.TurnError, dispatchapi.Error and the CLI's
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
