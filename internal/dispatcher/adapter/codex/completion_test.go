package codex

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

func (r *rig) completion(prompt string, msgs ...wire.CompletionMessage) CompletionInput {
	return CompletionInput{Model: codextest.StubModel, Cwd: filepath.Join(r.srv.Home, "completions"),
		Instructions: "You answer in one sentence.", Messages: msgs, Prompt: prompt}
}

// inputShape renders a recorded request's input as "role:text" for
// messages and "type:call_id" for other items, the way the tests compare it.
func inputShape(q *stubmodel.Request) []string {
	var out []string
	for _, it := range q.Input {
		switch it.Type {
		case "message":
			out = append(out, it.Role+":"+it.Text())
		case "function_call":
			out = append(out, "function_call:"+it.CallID+":"+it.Name+":"+it.Arguments)
		case "function_call_output":
			out = append(out, "function_call_output:"+it.CallID+":"+it.OutputText())
		default:
			out = append(out, it.Type)
		}
	}
	return out
}

// assertNoTools fails unless the recorded request offers the model nothing
// to call: a present but empty `tools`, no additional_tools item, no
// code-mode tools.
func assertNoTools(t *testing.T, q *stubmodel.Request) {
	t.Helper()
	if !q.HasTools || len(q.Tools) != 0 || len(q.AdditionalTools()) != 0 || len(q.CodeModeTools()) != 0 {
		t.Fatalf("the model was offered tools: tools %v (present %v), additional_tools %v, code mode %v",
			q.ToolNames(), q.HasTools, q.AdditionalTools(), q.CodeModeTools())
	}
}

// An isolated completion sends the model exactly the caller's instructions
// and prompt with an empty tool list, answers with the text and finish
// reason stop, and leaves no thread behind (ephemeral: nothing is stored).
func TestIsolatedCompletionOffersNoTools(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{ExtraArgs: mcpServerArgs})
	r.stub.When("SIDE-QUESTION", stubmodel.Text("forty-two"))
	ctx := testCtx(t, 60*time.Second)
	res, err := Complete(ctx, r.c, r.completion("SIDE-QUESTION: what is six times seven?"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "forty-two" || res.FinishReason != wire.FinishStop || res.Usage.Total == 0 {
		t.Fatalf("result %+v", res)
	}
	reqs := r.stub.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests, want 1", len(reqs))
	}
	assertNoTools(t, reqs[0])
	want := []string{"developer:You answer in one sentence.", "user:SIDE-QUESTION: what is six times seven?"}
	if got := inputShape(reqs[0]); !slices.Equal(got, want) {
		t.Fatalf("model input %q, want exactly %q", got, want)
	}
	// Without instructions Codex would send its own coding-agent prompt:
	// refused before any request.
	noInstructions := r.completion("SIDE-QUESTION again")
	noInstructions.Instructions = ""
	if _, err := Complete(ctx, r.c, noInstructions); !errors.Is(err, adapter.ErrInvalidInput) || !strings.Contains(err.Error(), "instructions") {
		t.Fatalf("empty instructions: %v, want ErrInvalidInput naming instructions", err)
	}
	if n := len(r.stub.Requests()); n != 1 {
		t.Fatalf("%d model requests after the refused call, want still 1", n)
	}
	var stored struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := r.c.Call(ctx, "thread/list", map[string]any{}, &stored); err != nil || len(stored.Data) != 0 {
		t.Fatalf("stored threads %s (%v), want none", stored.Data, err)
	}
}

// A settled-turn finalization continues the frozen transcript the gateway
// sends — the user's request, the settled tool call and its result — with
// the finalization prompt on a fresh tool-less thread: the model sees that
// transcript as it was sent, and no tool.
func TestFinalizationAnswersOnTheFrozenTranscriptWithoutTools(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{ExtraArgs: mcpServerArgs})
	r.stub.When("FINALIZE", stubmodel.Text("The file has 3 lines."))
	frozen := []wire.CompletionMessage{
		{Role: wire.MessageRoleUser, Text: "count the lines of notes.txt"},
		{Role: wire.MessageRoleToolCall, CallID: "call-1", Name: "read_file", Arguments: `{"path":"notes.txt"}`},
		{Role: wire.MessageRoleToolResult, CallID: "call-1", Text: "a\nb\nc"},
	}
	res, err := Complete(testCtx(t, 60*time.Second), r.c, r.completion("FINALIZE: answer the user now.", frozen...))
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "The file has 3 lines." || res.FinishReason != wire.FinishStop {
		t.Fatalf("result %+v", res)
	}
	reqs := r.stub.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests, want 1", len(reqs))
	}
	assertNoTools(t, reqs[0])
	want := []string{"developer:You answer in one sentence.", "user:count the lines of notes.txt",
		`function_call:call-1:read_file:{"path":"notes.txt"}`, "function_call_output:call-1:a\nb\nc",
		"user:FINALIZE: answer the user now."}
	if got := inputShape(reqs[0]); !slices.Equal(got, want) {
		t.Fatalf("model input %q, want exactly %q", got, want)
	}
}

// A model of Codex's catalog keeps native tools whatever the thread config
// says, so isolation cannot be proven: the completion is refused visibly
// with ToolPolicyUnenforceable naming the model, before any thread or model
// request. The refusal is not scoped to the harness (another model may
// work). Control: the stub model on the same server completes.
func TestIsolatedCompletionRefusesACatalogModel(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	ctx := testCtx(t, 60*time.Second)
	in := r.completion("CATALOG question")
	in.Model = "gpt-6.1-sol"
	_, err := Complete(ctx, r.c, in)
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeToolPolicyUnenforceable || we.Scope != "" ||
		!strings.Contains(we.Message, `"gpt-6.1-sol"`) {
		t.Fatalf("err %v, want ToolPolicyUnenforceable naming the model, without harness scope", err)
	}
	if n := len(r.stub.Requests()); n != 0 {
		t.Fatalf("%d model requests before the refusal", n)
	}
	var loaded struct{ Data []string }
	if err := r.c.Call(ctx, "thread/loaded/list", map[string]any{}, &loaded); err != nil || len(loaded.Data) != 0 {
		t.Fatalf("threads %v (%v)", loaded.Data, err)
	}
	r.stub.When("CONTROL", stubmodel.Text("ok"))
	if res, err := Complete(ctx, r.c, r.completion("CONTROL question")); err != nil || res.Text != "ok" {
		t.Fatalf("control: %+v, %v", res, err)
	}
}
