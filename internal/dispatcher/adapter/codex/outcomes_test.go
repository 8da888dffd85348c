package codex

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// The mutation facts of each native item kind: file changes mutate, commands
// and MCP calls possibly do, the rest only read; nothing that did not start
// is a mutating action.
func TestNativeMutationFactsByItemKind(t *testing.T) {
	args := json.RawMessage(`{"command":"ls","cwd":"/w"}`)
	for _, tc := range []struct {
		itemType string
		started  bool
		want     string
		mutating bool
	}{
		{"fileChange", true, wire.MutationYes, true},
		{"fileChange", false, wire.MutationYes, false},
		{"commandExecution", true, wire.MutationPossibly, true},
		{"commandExecution", false, wire.MutationPossibly, false},
		{"mcpToolCall", true, wire.MutationPossibly, true},
		{"webSearch", true, wire.MutationNo, false},
		{"imageView", true, wire.MutationNo, false},
		{"imageGeneration", true, wire.MutationNo, false},
	} {
		m := nativeMutation(tc.itemType, "t", tc.started, args, nil)
		if m.Mutation != tc.want || m.MutatingAction != tc.mutating || m.ReplaySafe == tc.mutating || m.ActionFingerprint == "" {
			t.Errorf("%s started=%v: %+v, want mutation %s mutatingAction %v", tc.itemType, tc.started, m, tc.want, tc.mutating)
		}
	}
}

// A patch's changed paths include a move's destination, sorted, once each.
func TestChangedPathsOfAFileChange(t *testing.T) {
	got := changedPaths(json.RawMessage(`[{"path":"/w/b","kind":{"type":"update","move_path":"/w/c"},"diff":""},
		{"path":"/w/a","kind":{"type":"add"},"diff":""},{"path":"/w/b","kind":{"type":"update","move_path":null},"diff":""}]`))
	if want := []string{"/w/a", "/w/b", "/w/c"}; !slices.Equal(got, want) {
		t.Fatalf("changed paths %v, want %v", got, want)
	}
}

// Arguments that differ only in formatting and key order are the same
// action; different arguments or tools are not.
func TestActionFingerprintIgnoresJSONFormatting(t *testing.T) {
	a := fingerprint("exec", json.RawMessage(`{"command":"ls","cwd":"/w"}`))
	if b := fingerprint("exec", json.RawMessage(` { "cwd" : "/w", "command" : "ls" } `)); a != b {
		t.Errorf("reformatted arguments: %s != %s", a, b)
	}
	if b := fingerprint("exec", json.RawMessage(`{"command":"ls -a","cwd":"/w"}`)); a == b {
		t.Error("different arguments share a fingerprint")
	}
	if b := fingerprint("apply_patch", json.RawMessage(`{"command":"ls","cwd":"/w"}`)); a == b {
		t.Error("different tools share a fingerprint")
	}
}

// The lastToolError rules (wire.ToolError): an unresolved mutating failure
// survives unrelated successes and later non-mutating failures, the newest
// mutating failure wins, and only the matching action's success clears it;
// a non-mutating failure is cleared by any later success.
func TestLastToolErrorRules(t *testing.T) {
	native := func(id, fp string, mutating bool, outcome wire.ToolOutcome) *wire.ToolTerminal {
		return &wire.ToolTerminal{CallID: id, Tool: "exec", ExecutionStarted: true, Outcome: outcome, Native: true,
			NativeMutation: &wire.NativeMutation{MutatingAction: mutating, ReplaySafe: !mutating, ActionFingerprint: fp}}
	}
	host := func(id, args string, started bool, outcome wire.ToolOutcome) *wire.ToolTerminal {
		return &wire.ToolTerminal{CallID: id, Tool: "lookup", Arguments: json.RawMessage(args), ExecutionStarted: started, Outcome: outcome}
	}
	const fail, ok = wire.OutcomeFailure, wire.OutcomeSuccess
	for _, tc := range []struct {
		name  string
		terms []*wire.ToolTerminal
		want  string // the CallID of lastToolError, "" for none
	}{
		{"a failure is reported", []*wire.ToolTerminal{native("m1", "A", true, fail)}, "m1"},
		{"a mutating failure survives an unrelated success",
			[]*wire.ToolTerminal{native("m1", "A", true, fail), native("s1", "B", false, ok)}, "m1"},
		{"a mutating failure survives an unrelated mutating success",
			[]*wire.ToolTerminal{native("m1", "A", true, fail), native("s1", "B", true, ok)}, "m1"},
		{"the matching action's success clears a mutating failure",
			[]*wire.ToolTerminal{native("m1", "A", true, fail), native("s1", "B", false, ok), native("m2", "A", true, ok)}, ""},
		{"a later non-mutating failure does not replace a mutating one",
			[]*wire.ToolTerminal{native("m1", "A", true, fail), native("n1", "B", false, fail)}, "m1"},
		{"a refused host call does not replace a mutating failure",
			[]*wire.ToolTerminal{native("m1", "A", true, fail), host("h1", `{}`, false, fail)}, "m1"},
		{"the newest mutating failure wins",
			[]*wire.ToolTerminal{native("m1", "A", true, fail), native("m2", "B", true, fail)}, "m2"},
		{"resolving the newest mutating failure leaves none",
			[]*wire.ToolTerminal{native("m1", "A", true, fail), native("m2", "B", true, fail), native("s", "B", true, ok)}, ""},
		{"a mutating failure replaces a non-mutating one",
			[]*wire.ToolTerminal{native("n1", "B", false, fail), native("m1", "A", true, fail)}, "m1"},
		{"a non-mutating failure replaces a non-mutating one",
			[]*wire.ToolTerminal{native("n1", "B", false, fail), native("n2", "C", false, fail)}, "n2"},
		{"any success clears a non-mutating failure",
			[]*wire.ToolTerminal{native("n1", "B", false, fail), native("s1", "C", false, ok)}, ""},
		{"a started host tool's failure counts as mutating",
			[]*wire.ToolTerminal{host("h1", `{"city":"Paris"}`, true, fail), host("h2", `{"city":"Rome"}`, true, ok)}, "h1"},
		{"a host tool's failure is matched by its canonical arguments",
			[]*wire.ToolTerminal{host("h1", `{"city":"Paris"}`, true, fail), host("h2", ` { "city" : "Paris" } `, true, ok)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cur *wire.ToolError
			for _, term := range tc.terms {
				cur = nextToolError(cur, term)
			}
			got := ""
			if cur != nil {
				got = cur.CallID
			}
			if got != tc.want {
				t.Fatalf("lastToolError %+v, want call %q", cur, tc.want)
			}
		})
	}
}
