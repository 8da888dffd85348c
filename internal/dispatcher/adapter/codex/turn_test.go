package codex

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

var weatherSchema = json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)

func hostTools() []wire.HostTool {
	return []wire.HostTool{
		{Name: "lookup_weather", Description: "Look up the weather for a city.", Parameters: weatherSchema},
		{Name: "kb_search", Description: "Search the knowledge base."},
	}
}

// A text turn: partial events in order, the result, transcript records for
// the prompt and the answer, usage, and what reached the model (developer
// instructions, reasoning effort, sandbox, images).
func TestTextTurn(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	r.stub.When("GREET", stubmodel.Text("Hello there, operator!", "Hello", " there,", " operator!"))
	in := r.input("GREET me")
	in.DeveloperInstructions = "DEV-INSTRUCTIONS-7731"
	in.ThinkLevel = "high"
	// A path image must be inside the working directory, which this test
	// wants the turn to create: TestImagePathConfinedToWorkingDirectory
	// covers path images.
	in.Images = []wire.Image{{URL: "data:image/png;base64," + onePixelPNG, Detail: "high"},
		{URL: "data:image/png;base64," + onePixelPNG, Detail: "auto"}}
	if exists(in.Cwd) {
		t.Fatal("the session directory exists before the turn")
	}
	rec := &recorder{}
	res := run(t, r, in, rec)

	if res.Terminal.Kind != wire.TerminalOK || res.Classification != "" {
		t.Fatalf("terminal %+v classification %q", res.Terminal, res.Classification)
	}
	if !slices.Equal(res.AssistantTexts, []string{"Hello there, operator!"}) {
		t.Fatalf("assistantTexts %q", res.AssistantTexts)
	}
	if got := rec.deltas(); !slices.Equal(got, []string{"Hello", " there,", " operator!"}) {
		t.Fatalf("partials %q", got)
	}
	if res.ThreadID == "" || res.TurnID == "" {
		t.Fatalf("ids %q %q", res.ThreadID, res.TurnID)
	}
	if res.Usage != (wire.Usage{Input: 10, Output: 5, Total: 15}) {
		t.Fatalf("usage %+v", res.Usage)
	}
	tr := rec.transcript()
	if len(tr) != 2 || tr[0].Role != wire.RoleUser || tr[0].Text != "GREET me" || len(tr[0].Images) != 2 ||
		tr[1].Role != wire.RoleAssistant || tr[1].Text != "Hello there, operator!" || tr[1].TurnID != res.TurnID {
		t.Fatalf("transcript %+v", tr)
	}
	wantOrder := []string{"transcript:message/user", "agent_event:lifecycle/start", "partial",
		"transcript:message/assistant", "agent_event:lifecycle/end"}
	if got := rec.types(); !slices.Equal(got, wantOrder) {
		t.Fatalf("event order %v\nwant %v", got, wantOrder)
	}
	if !exists(in.Cwd) {
		t.Fatalf("the session directory %s was not created", in.Cwd)
	}

	req := r.stub.RequestsContaining("GREET")[0]
	body := string(req.Body)
	for _, want := range []string{"DEV-INSTRUCTIONS-7731", "danger-full-access", in.Cwd} {
		if !strings.Contains(body, want) {
			t.Errorf("the model request lacks %q", want)
		}
	}
	var b struct {
		Reasoning struct{ Effort string } `json:"reasoning"`
	}
	_ = json.Unmarshal(req.Body, &b)
	if b.Reasoning.Effort != "high" {
		t.Errorf("reasoning effort %q, want high", b.Reasoning.Effort)
	}
	last := req.Input[len(req.Input)-1]
	if n := strings.Count(string(last.Content), `"input_image"`); n != 2 {
		t.Errorf("the prompt reached the model with %d images, want 2: %s", n, last.Content)
	}
}

// A host tool round trip: tool_call, the engine's answer reaches the model,
// tool_terminal success with the arguments, tool I/O in the transcript,
// media only in toolMediaUrls.
func TestHostToolRoundTrip(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	r.stub.When("WEATHER", stubmodel.Call(stubmodel.FunctionCall{Name: "lookup_weather", Arguments: `{"city":"Paris"}`, CallID: "call_w1"}))
	rec := &recorder{}
	rec.answer = func(ctx context.Context, call wire.ToolCall) (wire.ToolAnswer, error) {
		if calls := rec.toolCalls(); len(calls) == 0 || calls[len(calls)-1].CallID != call.CallID {
			t.Errorf("AnswerTool before the tool_call event: %+v", calls)
		}
		a := wire.TextAnswer("forecast for Paris: sunny, 21C")
		a.MediaURLs = []string{"https://media.example/paris.png"}
		return a, nil
	}
	in := r.input("WEATHER in Paris?")
	in.Tools = hostTools()
	res := run(t, r, in, rec)

	if res.Terminal.Kind != wire.TerminalOK ||
		!slices.Equal(res.AssistantTexts, []string{stubmodel.ToolOutputPrefix + "forecast for Paris: sunny, 21C"}) {
		t.Fatalf("result %+v", res)
	}
	calls := rec.toolCalls()
	if len(calls) != 1 || calls[0].CallID != "call_w1" || calls[0].Tool != "lookup_weather" ||
		!jsonEq(calls[0].Arguments, json.RawMessage(`{"city":"Paris"}`)) {
		t.Fatalf("tool_call events %+v", calls)
	}
	terms := rec.terminals()
	if len(terms) != 1 || terms[0].CallID != "call_w1" || terms[0].Tool != "lookup_weather" || !terms[0].ExecutionStarted ||
		terms[0].Outcome != wire.OutcomeSuccess || terms[0].Failure != nil || !jsonEq(terms[0].Arguments, calls[0].Arguments) {
		t.Fatalf("tool_terminal events %+v", terms)
	}
	// The answer reached the model.
	outs := r.stub.FunctionCallOutputs()
	if len(outs) != 1 || outs[0] != (stubmodel.FunctionCallOutput{CallID: "call_w1", Output: "forecast for Paris: sunny, 21C"}) {
		t.Fatalf("function_call_output seen by the model: %+v", outs)
	}
	if got := r.stub.RequestsContaining("WEATHER")[0].ToolNames(); !slices.Contains(got, "lookup_weather") || !slices.Contains(got, "kb_search") {
		t.Fatalf("tools offered %v", got)
	}
	var kinds []string
	for _, rcd := range rec.transcript() {
		kinds = append(kinds, rcd.Type+"/"+rcd.Role)
	}
	if want := []string{"message/user", "tool_call/assistant", "tool_result/tool", "message/assistant"}; !slices.Equal(kinds, want) {
		t.Fatalf("transcript %v, want %v", kinds, want)
	}
	if tr := rec.transcript()[2]; tr.CallID != "call_w1" || tr.Text != "forecast for Paris: sunny, 21C" || tr.IsError {
		t.Fatalf("tool_result record %+v", tr)
	}
	order := rec.types()
	if i, j := slices.Index(order, "tool_call"), slices.Index(order, "tool_terminal"); i < 0 || j < i {
		t.Fatalf("event order %v", order)
	}
	if !slices.Equal(res.ToolMediaURLs, []string{"https://media.example/paris.png"}) || len(res.HostOwnedToolMediaURLs) != 0 {
		t.Fatalf("media %v, host-owned %v", res.ToolMediaURLs, res.HostOwnedToolMediaURLs)
	}
	if res.LastToolError != nil {
		t.Fatalf("lastToolError %+v", res.LastToolError)
	}
}

// lastToolError: a failure stays across an unrelated success and is cleared
// only by the same action succeeding.
func TestLastToolError(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	paris := stubmodel.FunctionCall{Name: "lookup_weather", Arguments: `{"city":"Paris"}`}
	r.stub.When("UNRELATED",
		stubmodel.Call(stubmodel.FunctionCall{Name: paris.Name, Arguments: paris.Arguments, CallID: "u1"}),
		stubmodel.Call(stubmodel.FunctionCall{Name: "kb_search", CallID: "u2"}))
	r.stub.When("RETRY",
		stubmodel.Call(stubmodel.FunctionCall{Name: paris.Name, Arguments: paris.Arguments, CallID: "r1"}),
		stubmodel.Call(stubmodel.FunctionCall{Name: paris.Name, Arguments: ` { "city" : "Paris" } `, CallID: "r2"}))
	rec := &recorder{answer: func(ctx context.Context, call wire.ToolCall) (wire.ToolAnswer, error) {
		if call.CallID == "u1" || call.CallID == "r1" {
			return wire.ErrorAnswer("weather service down"), nil
		}
		return wire.TextAnswer("ok"), nil
	}}
	in := r.input("UNRELATED")
	in.Tools = hostTools()
	res := run(t, r, in, rec)
	if e := res.LastToolError; e == nil || e.CallID != "u1" || e.Tool != "lookup_weather" || e.Reason != wire.FailureToolError ||
		e.Message != "weather service down" || !e.ExecutionStarted {
		t.Fatalf("after an unrelated success: lastToolError %+v", e)
	}
	if terms := rec.terminals(); len(terms) != 2 || terms[0].Outcome != wire.OutcomeFailure || terms[1].Outcome != wire.OutcomeSuccess {
		t.Fatalf("terminals %+v", terms)
	}
	if outs := r.stub.FunctionCallOutputs(); outs[0].Output != "weather service down" {
		t.Fatalf("the model was told %+v", outs)
	}

	in = r.input("RETRY")
	in.Tools = hostTools()
	in.ThreadID = res.ThreadID
	if res = run(t, r, in, &recorder{answer: rec.answer}); res.LastToolError != nil {
		t.Fatalf("after the same action succeeded: lastToolError %+v", res.LastToolError)
	}
}

// Tools not offered in this turn. Codex itself answers a call to a tool the
// thread never registered with "unsupported call: <name>" (no request, no
// item: nothing ran and nothing can be reported). Dynamic tools are fixed at
// thread/start, so on a resumed thread that registered more tools than this
// turn offers, the adapter refuses the call: the model is told, a failed
// tool_terminal with executionStarted false is emitted, the client is never
// asked. Safe-denied tools are not offered and refused with their own
// message; their native equivalents are switched off, on resume too.
func TestToolsNotOfferedAreRefused(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	all := append(hostTools(), wire.HostTool{Name: "web_fetch", Description: "Fetch a URL."})
	in := r.input("FIRST with every tool")
	in.Tools = all
	first := run(t, r, in, &recorder{})
	if got := r.stub.RequestsContaining("FIRST")[0].ToolNames(); !slices.Contains(got, "web_fetch") || !slices.Contains(got, "exec_command") {
		t.Fatalf("first turn tools %v", got)
	}

	r.stub.When("SNEAKY",
		stubmodel.Call(stubmodel.FunctionCall{Name: "kb_search", Arguments: `{"q":1}`, CallID: "call_x"}),
		stubmodel.Call(stubmodel.FunctionCall{Name: "web_fetch", Arguments: `{"url":"https://example.com"}`, CallID: "call_y"}),
		stubmodel.Call(stubmodel.FunctionCall{Name: "secret_tool", CallID: "call_z"}))
	rec := &recorder{answer: func(ctx context.Context, call wire.ToolCall) (wire.ToolAnswer, error) {
		t.Errorf("the client was asked for %+v", call)
		return wire.ToolAnswer{}, nil
	}}
	in = r.input("SNEAKY")
	in.ThreadID = first.ThreadID
	in.Tools = all[:1] // lookup_weather only
	in.SafeDeniedTools = []string{"web_fetch", "exec"}
	res := run(t, r, in, rec)
	if res.Terminal.Kind != wire.TerminalOK {
		t.Fatalf("terminal %+v", res.Terminal)
	}
	offered := r.stub.RequestsContaining("SNEAKY")[0].ToolNames()
	// Codex keeps the thread's dynamic tools; the resumed config removed
	// the shell (exec safe-denied) and kept the rest of the native surface.
	if !slices.Contains(offered, "kb_search") || !slices.Contains(offered, "web_fetch") ||
		slices.Contains(offered, "exec_command") || slices.Contains(offered, "write_stdin") || !slices.Contains(offered, "view_image") {
		t.Fatalf("tools offered on resume %v", offered)
	}
	if calls := rec.toolCalls(); len(calls) != 0 {
		t.Fatalf("tool_call events for refused calls: %+v", calls)
	}
	want := map[string]string{
		"call_x": `tool "kb_search" is not available in this turn`,
		"call_y": `tool "web_fetch" is denied by the tool policy of this turn`,
		"call_z": "unsupported call: secret_tool", // Codex's own answer
	}
	terms := rec.terminals()
	if len(terms) != 2 {
		t.Fatalf("terminals %+v", terms)
	}
	for _, term := range terms {
		if term.Outcome != wire.OutcomeFailure || term.ExecutionStarted || term.Failure == nil ||
			term.Failure.Reason != wire.FailureNotOffered || term.Failure.Message != want[term.CallID] {
			t.Errorf("terminal %+v", term)
		}
	}
	if !jsonEq(terms[0].Arguments, json.RawMessage(`{"q":1}`)) {
		t.Errorf("refused call's arguments %s", terms[0].Arguments)
	}
	outs := r.stub.FunctionCallOutputs()
	if len(outs) != 3 {
		t.Fatalf("function_call_outputs %+v", outs)
	}
	for _, o := range outs {
		if o.Output != want[o.CallID] {
			t.Errorf("the model was told %q for %s, want %q", o.Output, o.CallID, want[o.CallID])
		}
	}
	if refused := rec.agent(wire.StreamTool); len(refused) < 2 || refused[0].Phase != wire.PhaseRefused {
		t.Errorf("tool agent events %+v", refused)
	}
}

// A host tool without an answer in time fails with executionStarted true;
// the turn goes on.
func TestToolTimeout(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	r.stub.When("SLOWTOOL", stubmodel.Call(stubmodel.FunctionCall{Name: "kb_search", Arguments: `{"q":"x"}`, CallID: "call_t"}))
	rec := &recorder{answer: func(ctx context.Context, call wire.ToolCall) (wire.ToolAnswer, error) {
		<-ctx.Done()
		return wire.ToolAnswer{}, ctx.Err()
	}}
	in := r.input("SLOWTOOL")
	in.Tools = hostTools()
	in.ToolTimeout = 300 * time.Millisecond
	res := run(t, r, in, rec)
	terms := rec.terminals()
	msg := `tool "kb_search" did not answer within 300ms`
	if len(terms) != 1 || !terms[0].ExecutionStarted || terms[0].Outcome != wire.OutcomeFailure ||
		terms[0].Failure.Reason != wire.FailureTimeout || terms[0].Failure.Message != msg {
		t.Fatalf("terminals %+v", terms)
	}
	if outs := r.stub.FunctionCallOutputs(); len(outs) != 1 || outs[0].Output != msg {
		t.Fatalf("the model was told %+v", outs)
	}
	if res.Terminal.Kind != wire.TerminalOK || res.LastToolError == nil || res.LastToolError.Reason != wire.FailureTimeout {
		t.Fatalf("result %+v / %+v", res.Terminal, res.LastToolError)
	}
}

// HTTP 500 from the model fails the turn; the thread serves the next turn.
func TestModelFailureThenNextTurn(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	r.stub.When("FAIL500", stubmodel.HTTPError(500, "upstream exploded"))
	rec := &recorder{}
	res := run(t, r, r.input("FAIL500 please"), rec)
	if res.Terminal.Kind != wire.TerminalFailed || res.Terminal.ErrorInfo != "internalServerError" ||
		res.Terminal.Message == "" || res.Classification != "" || len(res.AssistantTexts) != 0 {
		t.Fatalf("failed turn %+v", res)
	}
	if errs := rec.agent(wire.StreamError); len(errs) == 0 || errs[0].Status != "internalServerError" {
		t.Fatalf("error agent events %+v", errs)
	}
	in := r.input("are you still there?")
	in.ThreadID = res.ThreadID
	next := run(t, r, in, &recorder{})
	if next.Terminal.Kind != wire.TerminalOK || next.ThreadID != res.ThreadID ||
		!slices.Equal(next.AssistantTexts, []string{stubmodel.DefaultText}) {
		t.Fatalf("next turn %+v", next)
	}
}

// Interrupt, a cancelled context and the deadline all send turn/interrupt:
// aborted, aborted, timeout. A host tool still waiting fails as cancelled.
func TestInterruptCancelAndDeadline(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	gate := stubmodel.NewGate()
	t.Cleanup(gate.Release)
	r.stub.When("TOOLSTALL", stubmodel.Call(stubmodel.FunctionCall{Name: "kb_search", CallID: "call_i"}))
	r.stub.When("STALL", stubmodel.Stall(gate, stubmodel.Text("too late")), stubmodel.Stall(gate, stubmodel.Text("too late")),
		stubmodel.Stall(gate, stubmodel.Text("too late")))

	t.Run("Interrupt with a host tool pending", func(t *testing.T) {
		ctx := testCtx(t, 60*time.Second)
		var turn *Turn
		rec := &recorder{}
		rec.answer = func(ctx context.Context, call wire.ToolCall) (wire.ToolAnswer, error) {
			turn.Interrupt()
			<-ctx.Done()
			return wire.ToolAnswer{}, ctx.Err()
		}
		in := r.input("TOOLSTALL")
		in.Tools = hostTools()
		var err error
		turn, err = Start(ctx, r.c, in, rec.hooks())
		if err != nil {
			t.Fatal(err)
		}
		res, err := turn.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res.Terminal.Kind != wire.TerminalAborted || res.Classification != "" {
			t.Fatalf("result %+v", res)
		}
		terms := rec.terminals()
		if len(terms) != 1 || terms[0].Failure == nil || terms[0].Failure.Reason != wire.FailureCancelled || !terms[0].ExecutionStarted {
			t.Fatalf("terminals %+v", terms)
		}
	})
	t.Run("context cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(testCtx(t, 60*time.Second))
		defer cancel()
		turn, err := Start(ctx, r.c, r.input("STALL cancel"), (&recorder{}).hooks())
		if err != nil {
			t.Fatal(err)
		}
		req, err := r.stub.WaitMarker(ctx, "STALL cancel")
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		res, err := turn.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res.Terminal.Kind != wire.TerminalAborted {
			t.Fatalf("terminal %+v", res.Terminal)
		}
		if out, err := req.Wait(testCtx(t, 10*time.Second)); err != nil || out != stubmodel.OutcomeClientGone {
			t.Fatalf("the model request was not dropped: %v %v", out, err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		in := r.input("STALL deadline")
		in.Deadline = time.Now().Add(700 * time.Millisecond)
		res := run(t, r, in, &recorder{})
		if res.Terminal.Kind != wire.TerminalTimeout || res.Classification != "" {
			t.Fatalf("terminal %+v", res.Terminal)
		}
	})
	// A deadline that passes while a host tool call is pending ends the
	// turn as a timeout (TestTerminalOf: even when Codex completes it
	// after the interrupt, as the fault campaign saw under load).
	t.Run("deadline with a host tool pending", func(t *testing.T) {
		r.stub.When("TOOLDEADLINE", stubmodel.Call(stubmodel.FunctionCall{Name: "kb_search", CallID: "call_d"}),
			stubmodel.Text("written after the deadline"))
		rec := &recorder{}
		rec.answer = func(ctx context.Context, call wire.ToolCall) (wire.ToolAnswer, error) {
			<-ctx.Done() // the gateway never answers
			return wire.ToolAnswer{}, ctx.Err()
		}
		in := r.input("TOOLDEADLINE")
		in.Tools = hostTools()
		in.Deadline = time.Now().Add(700 * time.Millisecond)
		res := run(t, r, in, rec)
		if res.Terminal.Kind != wire.TerminalTimeout {
			t.Fatalf("a turn past its deadline ended %+v (texts %q), want a timeout", res.Terminal, res.AssistantTexts)
		}
	})
}

// The second turn resumes the same thread and the model sees the history.
func TestSecondTurnResumesThread(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	first := run(t, r, r.input("first turn MARK1"), &recorder{})
	in := r.input("second turn MARK2")
	in.ThreadID = first.ThreadID
	second := run(t, r, in, &recorder{})
	if second.ThreadID != first.ThreadID || second.TurnID == first.TurnID || second.Terminal.Kind != wire.TerminalOK {
		t.Fatalf("second turn %+v (first %s/%s)", second, first.ThreadID, first.TurnID)
	}
	req := r.stub.RequestsContaining("MARK2")[0]
	if !slices.Contains(req.UserTexts(), "first turn MARK1") || !slices.Contains(req.AssistantTexts(), stubmodel.DefaultText) {
		t.Fatalf("history seen by the model: users %q assistants %q", req.UserTexts(), req.AssistantTexts())
	}
}

// Classification of completed turns without visible text (rule 8).
func TestClassification(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	r.stub.When("EMPTY", stubmodel.Text("", ""))
	r.stub.When("REASON", stubmodel.Reasoning("Thinking it over."))
	r.stub.When("PLANONLY", stubmodel.Text("<proposed_plan>\n# Plan\n- step one\n</proposed_plan>\n"))
	r.stub.When("SILENT", stubmodel.Text("NO_REPLY"))
	cases := []struct {
		prompt string
		mode   wire.CollaborationMode
		want   wire.Classification
		check  func(*wire.TurnResult, *recorder) string
	}{
		{"EMPTY", "", wire.ClassEmpty, nil},
		{"REASON", "", wire.ClassReasoningOnly, func(res *wire.TurnResult, rec *recorder) string {
			if res.ReasoningText != "Thinking it over." || len(rec.agent(wire.StreamReasoning)) < 2 {
				return "reasoning text/events missing"
			}
			return ""
		}},
		{"PLANONLY", wire.CollaborationPlan, wire.ClassPlanningOnly, func(res *wire.TurnResult, rec *recorder) string {
			ends := rec.agent(wire.StreamPlan)
			if res.PlanText != "# Plan\n- step one\n" || len(ends) == 0 || ends[len(ends)-1].Text != res.PlanText {
				return "plan text/events missing: " + res.PlanText
			}
			return ""
		}},
		{"SILENT", "", "", func(res *wire.TurnResult, rec *recorder) string {
			if !slices.Equal(res.AssistantTexts, []string{"NO_REPLY"}) {
				return "NO_REPLY not kept"
			}
			return ""
		}},
	}
	for _, tc := range cases {
		rec := &recorder{}
		in := r.input(tc.prompt)
		in.CollaborationMode = tc.mode
		res := run(t, r, in, rec)
		if res.Terminal.Kind != wire.TerminalOK || res.Classification != tc.want {
			t.Errorf("%s: terminal %s classification %q, want %q (texts %q)", tc.prompt, res.Terminal.Kind, res.Classification, tc.want, res.AssistantTexts)
			continue
		}
		if tc.check != nil {
			if msg := tc.check(res, rec); msg != "" {
				t.Errorf("%s: %s", tc.prompt, msg)
			}
		}
	}
}

// Input errors are refused before anything reaches the server.
func TestStartRefusesBadInput(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	bad := []func(*adapter.TurnInput){
		func(in *adapter.TurnInput) { in.Cwd = "relative/dir" },
		func(in *adapter.TurnInput) { in.ThinkLevel = "ludicrous" },
		func(in *adapter.TurnInput) { in.Tools = []wire.HostTool{{Name: "has space"}} },
		func(in *adapter.TurnInput) { in.Tools = []wire.HostTool{{Name: "a"}, {Name: "a"}} },
		func(in *adapter.TurnInput) { in.Images = []wire.Image{{URL: "file:///etc/passwd"}} },
		func(in *adapter.TurnInput) { in.Prompt = "" },
		func(in *adapter.TurnInput) { in.Sandbox = "yolo" },
	}
	for i, mutate := range bad {
		in := r.input("hello")
		mutate(&in)
		if _, err := Start(testCtx(t, 10*time.Second), r.c, in, adapter.Hooks{}); !errors.Is(err, adapter.ErrInvalidInput) {
			t.Errorf("case %d: err %v, want ErrInvalidInput", i, err)
		}
	}
	if n := len(r.stub.Requests()); n != 0 {
		t.Fatalf("%d model requests", n)
	}
}
