package appserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// EnvBinBelowFloor names the binary of a real Codex release below the floor
// (hack/setup-codex.sh 0.148.0).
const EnvBinBelowFloor = "CODEX_BIN_BELOW_FLOOR"

var weatherSchema = json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)

func dynamicTools() []appserver.DynamicTool {
	return []appserver.DynamicTool{
		appserver.FunctionTool("lookup_weather", "Look up the weather for a city.", weatherSchema),
		appserver.NamespaceTool("kb", "Knowledge base.",
			appserver.FunctionTool("search", "Search the knowledge base.", nil)),
	}
}

func TestHandshake(t *testing.T) {
	t.Parallel()
	r := startRig(t, codextest.Options{})
	c := connectStdio(t, r.srv, appserver.Options{ClientName: "harness-operator", ClientVersion: "1.2.3"})
	info := c.ServerInfo()
	if info.Version != "0.169.0" {
		t.Fatalf("version %q from userAgent %q", info.Version, info.UserAgent)
	}
	if !strings.HasPrefix(info.UserAgent, "harness-operator/0.169.0 (") || !strings.Contains(info.UserAgent, "(harness-operator; 1.2.3)") {
		t.Fatalf("userAgent %q", info.UserAgent)
	}
	if info.CodexHome != r.srv.Home || info.PlatformOS != "linux" {
		t.Fatalf("server info %+v, want codexHome %s", info, r.srv.Home)
	}
	// experimentalApi was negotiated: dynamic tools are accepted.
	startThread(t, c, r.srv, appserver.ThreadStartParams{DynamicTools: dynamicTools(), Ephemeral: true}, nil)
}

// A minVersion above the running release refuses the real server before any
// thread exists.
func TestHandshakeRefusesServerBelowMinVersion(t *testing.T) {
	t.Parallel()
	r := startRig(t, codextest.Options{})
	out, in := r.srv.Stdio()
	c, err := appserver.Connect(testCtx(t, 30*time.Second), appserver.NewStdioTransport(out, in), appserver.Options{MinVersion: "0.170.0"})
	if c != nil {
		t.Fatal("Connect returned a client for a refused server")
	}
	want := "Codex app-server 0.170.0 or newer is required, but detected 0.169.0. Update the AgentHarness image to a newer Codex release."
	var ve *appserver.VersionError
	if !errors.As(err, &ve) || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	if !strings.HasPrefix(ve.UserAgent, "harness-operator/0.169.0 ") {
		t.Fatalf("VersionError.UserAgent = %q", ve.UserAgent)
	}
	// The transport was closed, so the server exits; no thread was started.
	if err := r.srv.WaitExit(testCtx(t, 10*time.Second)); err != nil {
		t.Fatalf("server after refusal: %v", err)
	}
	if _, err := os.Stat(filepath.Join(r.srv.Home, "sessions")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a session was written: %v", err)
	}
	if n := len(r.stub.Requests()); n != 0 {
		t.Fatalf("the model was called %d times", n)
	}
}

// A real Codex release below the floor (0.148.0) is refused.
func TestHandshakeRefusesReleaseBelowFloor(t *testing.T) {
	t.Parallel()
	bin := os.Getenv(EnvBinBelowFloor)
	if bin == "" {
		// Like CODEX_BIN (codextest.Bin): a missing release fails the run
		// instead of hiding the version floor's only real-binary check.
		t.Fatalf("%s is not set: run with %s=$(hack/setup-codex.sh 0.148.0) (make test sets it)", EnvBinBelowFloor, EnvBinBelowFloor)
	}
	r := startRig(t, codextest.Options{Bin: bin})
	out, in := r.srv.Stdio()
	_, err := appserver.Connect(testCtx(t, 30*time.Second), appserver.NewStdioTransport(out, in), appserver.Options{})
	want := "Codex app-server 0.149.0 or newer is required, but detected 0.148.0. Update the AgentHarness image to a newer Codex release."
	var ve *appserver.VersionError
	if !errors.As(err, &ve) || err.Error() != want {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	if ve.Detected != "0.148.0" {
		t.Fatalf("detected %q", ve.Detected)
	}
}

func TestTextTurnWithDeltasAndReasoning(t *testing.T) {
	t.Parallel()
	r := startRig(t, codextest.Options{})
	c := connectStdio(t, r.srv, appserver.Options{})
	r.stub.When("GREET", stubmodel.Reasoning("Consider the greeting.").And(
		stubmodel.Text("Hello there, operator!", "Hello", " there,", " operator!")))
	th := startThread(t, c, r.srv, appserver.ThreadStartParams{
		DeveloperInstructions: "DEV-INSTRUCTIONS-7731",
		ReasoningEffort:       "low",
		Ephemeral:             true,
	}, nil)
	if th.Info.ReasoningEffort == nil || *th.Info.ReasoningEffort != "low" {
		t.Fatalf("thread/start reasoningEffort = %v, want low", th.Info.ReasoningEffort)
	}
	if th.Info.Model != codextest.StubModel || th.Info.ModelProvider != "stub" {
		t.Fatalf("thread model %q provider %q", th.Info.Model, th.Info.ModelProvider)
	}

	ctx := testCtx(t, 60*time.Second)
	turn, err := th.StartTurn(ctx, appserver.TurnStartParams{Input: []appserver.InputItem{appserver.TextInput("GREET me")}})
	if err != nil {
		t.Fatal(err)
	}
	var deltas []string
	var methods []string
	res, err := turn.Run(ctx, func(ev appserver.Event) {
		methods = append(methods, ev.Meta().Method)
		if ev.Meta().TurnID != turn.ID || ev.Meta().ThreadID != th.ID {
			t.Errorf("event %s routed to the wrong turn: %+v", ev.Meta().Method, ev.Meta())
		}
		if d, ok := ev.(appserver.AgentMessageDelta); ok {
			deltas = append(deltas, d.Delta)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != appserver.TurnCompleted || res.Text != "Hello there, operator!" {
		t.Fatalf("result %s %q", res.Status, res.Text)
	}
	if !slices.Equal(deltas, []string{"Hello", " there,", " operator!"}) || res.Deltas != 3 {
		t.Fatalf("deltas %q (%d)", deltas, res.Deltas)
	}
	if !slices.Equal(res.Reasoning, []string{"Consider the greeting."}) {
		t.Fatalf("reasoning %q", res.Reasoning)
	}
	for _, m := range []string{"turn/started", "item/started", "item/reasoning/summaryTextDelta", "item/agentMessage/delta",
		"item/completed", "thread/tokenUsage/updated", "turn/completed"} {
		if !slices.Contains(methods, m) {
			t.Errorf("no %s event; got %v", m, methods)
		}
	}
	if methods[len(methods)-1] != "turn/completed" {
		t.Errorf("last event %s", methods[len(methods)-1])
	}
	if res.Usage == nil || res.Usage.Last.TotalTokens != 15 {
		t.Fatalf("usage %+v", res.Usage)
	}
	if _, err := turn.Next(ctx); !errors.Is(err, appserver.ErrTurnDone) {
		t.Fatalf("Next after completion: %v", err)
	}
	// What reached the model: the developer instructions and the user text.
	req, err := r.stub.WaitMarker(ctx, "GREET")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(req.Body), "DEV-INSTRUCTIONS-7731") {
		t.Fatal("developer instructions did not reach the model")
	}
	if req.Header.Get("Authorization") != "Bearer "+codextest.StubAPIKey || req.Header.Get("Originator") != appserver.DefaultClientName {
		t.Fatalf("model request headers %v", req.Header)
	}
}

func TestDynamicToolRoundTrip(t *testing.T) {
	t.Parallel()
	r := startRig(t, codextest.Options{})
	c := connectStdio(t, r.srv, appserver.Options{})
	r.stub.When("WEATHER", stubmodel.Call(stubmodel.FunctionCall{Name: "lookup_weather", Arguments: `{"city":"Paris"}`, CallID: "call_w1"}))
	r.stub.When("SEARCH", stubmodel.Call(stubmodel.FunctionCall{Name: "search", Namespace: "kb", Arguments: `{"q":"floor"}`, CallID: "call_s1"}))

	var calls []appserver.ToolCall
	h := &appserver.Handlers{ToolCall: func(ctx context.Context, call appserver.ToolCall) appserver.ToolResult {
		calls = append(calls, call) // handlers of one turn run one at a time here
		if call.Tool == "lookup_weather" {
			var args struct{ City string }
			_ = json.Unmarshal(call.Arguments, &args)
			return appserver.ToolText("forecast for "+args.City+": sunny, 21C", true)
		}
		return appserver.ToolText("tool "+call.Tool+" is not offered in this turn", false)
	}}
	th := startThread(t, c, r.srv, appserver.ThreadStartParams{DynamicTools: dynamicTools(), Ephemeral: true}, h)

	res := runTurn(t, th, "WEATHER in Paris?")
	if res.Status != appserver.TurnCompleted || res.Text != stubmodel.ToolOutputPrefix+"forecast for Paris: sunny, 21C" {
		t.Fatalf("turn %s %q", res.Status, res.Text)
	}
	if len(calls) != 1 || calls[0].CallID != "call_w1" || calls[0].ThreadID != th.ID || calls[0].TurnID != res.TurnID ||
		string(calls[0].Arguments) != `{"city":"Paris"}` {
		t.Fatalf("handler saw %+v", calls)
	}
	var tool *appserver.Item
	for i := range res.Items {
		if res.Items[i].Type == "dynamicToolCall" {
			tool = &res.Items[i]
		}
	}
	if tool == nil || tool.Tool != "lookup_weather" || tool.Status != "completed" || tool.Success == nil || !*tool.Success {
		t.Fatalf("dynamicToolCall item %+v", tool)
	}
	if len(res.ServerRequests) != 1 || res.ServerRequests[0].Kind != appserver.KindToolCall || res.ServerRequests[0].Declined {
		t.Fatalf("server requests %+v", res.ServerRequests)
	}
	// The tool's output reached the model as a function_call_output.
	outs := r.stub.FunctionCallOutputs()
	if len(outs) != 1 || outs[0] != (stubmodel.FunctionCallOutput{CallID: "call_w1", Output: "forecast for Paris: sunny, 21C"}) {
		t.Fatalf("function_call_output seen by the model: %+v", outs)
	}

	// A namespaced tool the handler refuses: the model sees the refusal,
	// the item fails, and the turn still completes.
	res = runTurn(t, th, "SEARCH the kb")
	if res.Status != appserver.TurnCompleted {
		t.Fatalf("turn %s", res.Status)
	}
	if len(calls) != 2 || calls[1].Tool != "search" || calls[1].Namespace == nil || *calls[1].Namespace != "kb" {
		t.Fatalf("namespaced call %+v", calls[1:])
	}
	if len(res.ServerRequests) != 1 || !res.ServerRequests[0].Declined {
		t.Fatalf("refused call not visible: %+v", res.ServerRequests)
	}
	outs = r.stub.FunctionCallOutputs()
	if len(outs) != 2 || outs[1].CallID != "call_s1" || outs[1].Output != "tool search is not offered in this turn" {
		t.Fatalf("function_call_output after refusal: %+v", outs)
	}
}

func TestModelFailuresFailTheTurnAndThreadStaysUsable(t *testing.T) {
	t.Parallel()
	r := startRig(t, codextest.Options{})
	c := connectStdio(t, r.srv, appserver.Options{})
	r.stub.When("FAIL500", stubmodel.HTTPError(500, "upstream exploded"))
	r.stub.When("CUTSTREAM", stubmodel.Cut(stubmodel.Text("partial answer")))
	th := startThread(t, c, r.srv, appserver.ThreadStartParams{Ephemeral: true}, nil)

	res := runTurn(t, th, "FAIL500 please")
	if res.Status != appserver.TurnFailed || res.Error == nil || res.Error.ErrorInfo() != "internalServerError" {
		t.Fatalf("HTTP 500: status %s error %+v", res.Status, res.Error)
	}
	if len(res.Errors) != 1 || res.Errors[0].WillRetry {
		t.Fatalf("error notifications %+v", res.Errors)
	}

	res = runTurn(t, th, "CUTSTREAM please")
	if res.Status != appserver.TurnFailed || res.Error == nil || !strings.Contains(res.Error.Message, "response.completed") {
		t.Fatalf("cut stream: status %s error %+v", res.Status, res.Error)
	}

	res = runTurn(t, th, "are you still there?")
	if res.Status != appserver.TurnCompleted || res.Text != stubmodel.DefaultText {
		t.Fatalf("turn after failures: %s %q", res.Status, res.Text)
	}
}

func TestInterrupt(t *testing.T) {
	t.Parallel()
	r := startRig(t, codextest.Options{})
	c := connectStdio(t, r.srv, appserver.Options{})
	gate := stubmodel.NewGate()
	t.Cleanup(gate.Release)
	r.stub.When("STALL", stubmodel.Stall(gate, stubmodel.Text("too late")))
	th := startThread(t, c, r.srv, appserver.ThreadStartParams{Ephemeral: true}, nil)

	ctx := testCtx(t, 60*time.Second)
	turn, err := th.StartTurn(ctx, appserver.TurnStartParams{Input: []appserver.InputItem{appserver.TextInput("STALL forever")}})
	if err != nil {
		t.Fatal(err)
	}
	req, err := r.stub.WaitMarker(ctx, "STALL")
	if err != nil {
		t.Fatal(err)
	}
	if err := turn.Interrupt(ctx); err != nil {
		t.Fatalf("turn/interrupt: %v", err)
	}
	res, err := turn.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != appserver.TurnInterrupted || res.Text != "" {
		t.Fatalf("interrupted turn: %s %q", res.Status, res.Text)
	}
	// Codex dropped the model stream.
	if out, err := req.Wait(ctx); err != nil || out != stubmodel.OutcomeClientGone {
		t.Fatalf("model request outcome %v %v", out, err)
	}
	// Interrupting a finished turn is a server error.
	var rpcErr *appserver.RPCError
	if err := turn.Interrupt(ctx); !errors.As(err, &rpcErr) {
		t.Fatalf("second interrupt: %v", err)
	}
	// The next turn works and tells the model about the interruption.
	res = runTurn(t, th, "next")
	if res.Status != appserver.TurnCompleted {
		t.Fatalf("turn after interrupt: %s", res.Status)
	}
	next, _ := r.stub.WaitMarker(ctx, "next")
	if !slices.ContainsFunc(next.UserTexts(), func(s string) bool { return strings.Contains(s, "<turn_aborted>") }) {
		t.Fatalf("model was not told about the interrupt: %q", next.UserTexts())
	}
}

// Resume after a process restart on the same CODEX_HOME: history and the
// dynamic tools persist, the per-thread config does not (so it is re-sent).
func TestResumeAfterRestart(t *testing.T) {
	t.Parallel()
	stub := stubmodel.Start(t)
	dir := t.TempDir()
	h := &appserver.Handlers{ToolCall: func(ctx context.Context, call appserver.ToolCall) appserver.ToolResult {
		return appserver.ToolText("rainy", true)
	}}
	restricted := appserver.NativeToolsOffConfig()

	// Process 1: a restricted thread with dynamic tools, one turn.
	srv1 := codextest.Start(t, codextest.Options{ProviderURL: stub.BaseURL(), Dir: dir})
	c1 := connectStdio(t, srv1, appserver.Options{})
	th := startThread(t, c1, srv1, appserver.ThreadStartParams{DynamicTools: dynamicTools(), Config: restricted}, h)
	if res := runTurn(t, th, "first turn MARK1"); res.Status != appserver.TurnCompleted {
		t.Fatalf("turn 1: %s", res.Status)
	}
	_ = c1.Close() // closes stdin: the server exits
	if err := srv1.Stop(10 * time.Second); err != nil {
		t.Fatalf("process 1 exit: %v", err)
	}

	resume := func(srv *codextest.Server, c *appserver.Client, cfg map[string]any) *appserver.Thread {
		t.Helper()
		rt, err := c.ResumeThread(testCtx(t, 30*time.Second), appserver.ThreadResumeParams{
			ThreadID: th.ID, Cwd: srv.Workdir, ApprovalPolicy: appserver.ApprovalNever,
			Sandbox: appserver.SandboxReadOnly, Config: cfg, ExcludeTurns: true,
		}, appserver.ThreadOptions{Handlers: h})
		if err != nil {
			t.Fatalf("thread/resume: %v", err)
		}
		if rt.ID != th.ID {
			t.Fatalf("resumed %s, want %s", rt.ID, th.ID)
		}
		return rt
	}

	// Process 2: resume without config: history and dynamic tools are back,
	// and so is the native tool surface.
	srv2 := codextest.Start(t, codextest.Options{ProviderURL: stub.BaseURL(), Dir: dir})
	c2 := connectStdio(t, srv2, appserver.Options{})
	rt := resume(srv2, c2, nil)
	if res := runTurn(t, rt, "second turn MARK2"); res.Status != appserver.TurnCompleted {
		t.Fatalf("turn 2: %s", res.Status)
	}
	_ = c2.Close()
	_ = srv2.Stop(10 * time.Second)

	// Process 3: resume with the restricted config re-sent.
	srv3 := codextest.Start(t, codextest.Options{ProviderURL: stub.BaseURL(), Dir: dir})
	c3 := connectStdio(t, srv3, appserver.Options{})
	rt = resume(srv3, c3, restricted)
	stub.When("MARK3", stubmodel.Call(stubmodel.FunctionCall{Name: "lookup_weather", Arguments: `{"city":"Oslo"}`}))
	if res := runTurn(t, rt, "third turn MARK3"); res.Status != appserver.TurnCompleted || res.Text != stubmodel.ToolOutputPrefix+"rainy" {
		t.Fatalf("turn 3: %s %q", res.Status, res.Text)
	}

	only := []string{"lookup_weather", "kb.search"}
	r1 := stub.RequestsContaining("MARK1")[0]
	r2 := stub.RequestsContaining("MARK2")[0]
	r3 := stub.RequestsContaining("MARK3")[0]
	if !slices.Equal(r1.ToolNames(), only) {
		t.Errorf("process 1 tools %v, want %v", r1.ToolNames(), only)
	}
	if got := r2.ToolNames(); !slices.Contains(got, "exec_command") || !slices.Contains(got, "lookup_weather") {
		t.Errorf("process 2 (resume without config) tools %v: want the native tools back and the persisted dynamic tool", got)
	}
	if !slices.Equal(r3.ToolNames(), only) {
		t.Errorf("process 3 (config re-sent) tools %v, want %v", r3.ToolNames(), only)
	}
	// History survived both restarts.
	if u := r3.UserTexts(); !slices.Contains(u, "first turn MARK1") || !slices.Contains(u, "second turn MARK2") {
		t.Errorf("history after restart: %q", u)
	}
	if a := r3.AssistantTexts(); len(a) < 2 || a[0] != stubmodel.DefaultText {
		t.Errorf("assistant history after restart: %q", a)
	}
}

// The same scenario over both transports.
func TestTransports(t *testing.T) {
	t.Parallel()
	for _, tr := range []struct {
		name string
		opts codextest.Options
	}{
		{"stdio", codextest.Options{Transport: codextest.Stdio}},
		{"websocket", codextest.Options{Transport: codextest.WebSocket}},
	} {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			r := startRig(t, tr.opts)
			var c *appserver.Client
			if tr.opts.Transport == codextest.WebSocket {
				c = connectWS(t, r.srv, "", appserver.Options{})
			} else {
				c = connectStdio(t, r.srv, appserver.Options{})
			}
			if c.ServerInfo().Version != "0.169.0" {
				t.Fatalf("version %q", c.ServerInfo().Version)
			}
			r.stub.When("TOOL", stubmodel.Call(stubmodel.FunctionCall{Name: "lookup_weather", Arguments: `{"city":"Rome"}`}))
			th := startThread(t, c, r.srv, appserver.ThreadStartParams{DynamicTools: dynamicTools(), Ephemeral: true},
				&appserver.Handlers{ToolCall: func(ctx context.Context, call appserver.ToolCall) appserver.ToolResult {
					return appserver.ToolText("via "+tr.name, true)
				}})
			if res := runTurn(t, th, "hello"); res.Text != stubmodel.DefaultText || res.Deltas == 0 {
				t.Fatalf("text turn %q (%d deltas)", res.Text, res.Deltas)
			}
			if res := runTurn(t, th, "TOOL please"); res.Text != stubmodel.ToolOutputPrefix+"via "+tr.name {
				t.Fatalf("tool turn %q", res.Text)
			}
		})
	}
}

// In plan mode Codex streams plan items and may ask the user for input; a
// user-input request without an answer is declined visibly and the model is
// told that nothing was answered.
func TestPlanModeItemsAndDeclinedUserInput(t *testing.T) {
	t.Parallel()
	r := startRig(t, codextest.Options{})
	c := connectStdio(t, r.srv, appserver.Options{})
	r.stub.When("ASK", stubmodel.CallJSON("request_user_input", map[string]any{"questions": []any{map[string]any{
		"id": "color", "header": "Color", "question": "Which color?", "options": []any{
			map[string]any{"label": "Red", "description": "warm"}, map[string]any{"label": "Blue", "description": "cool"}}}}}))
	r.stub.When("PLAN", stubmodel.Text("Here is the plan.\n<proposed_plan>\n# Plan\n- step one\n- step two\n</proposed_plan>\n"))
	var asked []appserver.UserInputRequest
	th := startThread(t, c, r.srv, appserver.ThreadStartParams{Ephemeral: true}, &appserver.Handlers{
		UserInput: func(ctx context.Context, req appserver.UserInputRequest) map[string][]string {
			asked = append(asked, req)
			return nil // decline
		}})
	plan := json.RawMessage(`{"mode":"plan","settings":{"model":"` + codextest.StubModel + `","reasoning_effort":null,"developer_instructions":null}}`)
	run := func(text string) *appserver.TurnResult {
		ctx := testCtx(t, 60*time.Second)
		turn, err := th.StartTurn(ctx, appserver.TurnStartParams{Input: []appserver.InputItem{appserver.TextInput(text)}, CollaborationMode: plan})
		if err != nil {
			t.Fatal(err)
		}
		res, err := turn.Wait(ctx)
		if err != nil || res.Status != appserver.TurnCompleted {
			t.Fatalf("turn %q: %v %v", text, res.Status, err)
		}
		return res
	}

	res := run("ASK me")
	if len(asked) != 1 || asked[0].TurnID != res.TurnID || !strings.Contains(string(asked[0].Params), "Which color?") {
		t.Fatalf("user-input callback saw %+v", asked)
	}
	if len(res.ServerRequests) != 1 || res.ServerRequests[0].Kind != appserver.KindUserInput || !res.ServerRequests[0].Declined {
		t.Fatalf("declined user input not visible: %+v", res.ServerRequests)
	}
	reqs := r.stub.RequestsContaining("ASK")
	if outs := reqs[len(reqs)-1].FunctionCallOutputs(); len(outs) != 1 || outs[0].Output != `{"answers":{}}` {
		t.Fatalf("model told %+v", outs)
	}

	res = run("PLAN it")
	if !slices.Equal(res.Plans, []string{"# Plan\n- step one\n- step two\n"}) || res.Text != "Here is the plan.\n" {
		t.Fatalf("plans %q, text %q", res.Plans, res.Text)
	}
}
