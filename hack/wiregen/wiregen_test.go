package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

const root = "../.."

// TestCommittedFilesAreGenerated fails when the committed schema or the
// docs' error tables differ from what the wire package generates now.
func TestCommittedFilesAreGenerated(t *testing.T) {
	schema, err := Schema(root)
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, SchemaPath); got != string(schema) {
		t.Errorf("%s differs from what internal/contract/wire generates: run `make generate-wire`\n%s", SchemaPath, firstDiff(got, string(schema)))
	}
	tables, err := ErrorTables(root)
	if err != nil {
		t.Fatal(err)
	}
	doc := read(t, DocsPath)
	want, err := splice(doc, tables)
	if err != nil {
		t.Fatal(err)
	}
	if doc != want {
		t.Errorf("the error tables of %s differ from internal/contract/wire's codes: run `make generate-wire`\n%s", DocsPath, firstDiff(doc, want))
	}
}

// The schema is the wire package's: its JSON names, its required fields
// (those always sent) and its closed sets of constants.
func TestSchemaFollowsTheWirePackage(t *testing.T) {
	b, err := Schema(root)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Defs map[string]struct {
			Enum       []string                   `json:"enum"`
			Const      any                        `json:"const"`
			Value      bool                       `json:"x-value"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	codes := s.Defs["ErrorCode"].Enum
	for _, c := range wire.ErrorCodes() {
		if !slices.Contains(codes, string(c)) {
			t.Errorf("ErrorCode's enum lacks the turn code %s", c)
		}
	}
	for _, c := range []wire.ErrorCode{wire.CodeBadRequest, wire.CodeStoreUnavailable, wire.CodeNoNativeThread} {
		if !slices.Contains(codes, string(c)) {
			t.Errorf("ErrorCode's enum lacks the API's code %s", c)
		}
	}
	if got := s.Defs["Scope"].Enum; !slices.Equal(got, []string{"harness", ""}) {
		t.Errorf("Scope = %q, want harness and the empty scope", got)
	}
	if got := s.Defs["ApprovalDecision"].Enum; !slices.Equal(got, []string{"approve_once", "approve_for_turn", "deny"}) {
		t.Errorf("ApprovalDecision = %q", got)
	}
	if got := s.Defs["EventName"].Enum; len(got) != len(events) || !slices.Contains(got, wire.EventToolCall) {
		t.Errorf("EventName = %q, want the %d events", got, len(events))
	}
	if got := s.Defs["EventPayloads"].Required; !slices.Contains(got, wire.EventRequestResolved) {
		t.Errorf("EventPayloads names %q, not request_resolved", got)
	}
	if got := s.Defs["TurnTokenHeader"].Const; got != wire.TurnTokenHeader {
		t.Errorf("TurnTokenHeader = %q", got)
	}
	if got := s.Defs["RouteToolResults"].Const; got != wire.RouteToolResults {
		t.Errorf("RouteToolResults = %q", got)
	}
	// The values the plugin reads: the native tools in their constants'
	// order, and the completion bounds.
	natives := []any{wire.NativeToolExec, wire.NativeToolProcess, wire.NativeToolApplyPatch, wire.NativeToolWebSearch,
		wire.NativeToolViewImage, wire.NativeToolImageGenerate, wire.NativeToolCodeExecution, wire.NativeToolSpawnAgent}
	for name, want := range map[string]any{
		"NativeToolIds":         natives,
		"MaxCompletionMessages": float64(wire.MaxCompletionMessages),
		"MaxCompletionBytes":    float64(wire.MaxCompletionBytes),
	} {
		if d := s.Defs[name]; !d.Value || !reflect.DeepEqual(d.Const, want) {
			t.Errorf("%s: const %v (x-value %t), want the value %v", name, d.Const, d.Value, want)
		}
	}
	// Embedded structs are flat, as encoding/json sends them.
	tr := s.Defs["TurnRequest"].Properties
	for _, f := range []string{"runId", "modelProvider", "prompt", "mcpServers", "approvalMode", "gatewayTranscript", "authProfile", "trigger"} {
		if _, ok := tr[f]; !ok {
			t.Errorf("TurnRequest has no property %s", f)
		}
	}
	if got := s.Defs["Error"].Required; !slices.Equal(got, []string{"code", "message", "scope", "retryable"}) {
		t.Errorf("Error requires %q; replaySafe is omitempty, the others always sent", got)
	}
}

func TestErrorTablesComeFromTheCodeTable(t *testing.T) {
	tables, err := ErrorTables(root)
	if err != nil {
		t.Fatal(err)
	}
	turn, api, ok := strings.Cut(tables, "The API's own codes")
	if !ok {
		t.Fatalf("no second table:\n%s", tables)
	}
	for _, want := range []string{
		"| `RunIdConflict` | 409 | no | a `runId` reused with a different body |",
		"| `HarnessUnavailable` | 503 | yes | ",
	} {
		if !strings.Contains(turn, want) {
			t.Errorf("the turn's table has no row %q", want)
		}
	}
	if !strings.Contains(api, "| `RateLimited` | 429 | yes | ") || strings.Contains(api, "`RunIdConflict`") {
		t.Errorf("the API's table is wrong:\n%s", api)
	}
}

func TestSplice(t *testing.T) {
	doc := "intro\n" + beginMarker + "\nold\n" + endMarker + "\nrest\n"
	got, err := splice(doc, "new\n")
	if err != nil || got != "intro\n"+beginMarker+"\nnew\n"+endMarker+"\nrest\n" {
		t.Errorf("splice = %q, %v", got, err)
	}
	if _, err := splice("no markers\n", "new\n"); err == nil || !strings.Contains(err.Error(), DocsPath) {
		t.Errorf("splice without markers: %v, want an error naming %s", err, DocsPath)
	}
	if _, err := splice(beginMarker+"\nold\n", "new\n"); err == nil {
		t.Error("splice without the end marker: no error")
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// firstDiff shows the first line that differs, committed then generated.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return "line " + strconv.Itoa(i+1) + ":\n  committed: " + gl + "\n  generated: " + wl
		}
	}
	return ""
}
