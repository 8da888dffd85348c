package wire

import (
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
