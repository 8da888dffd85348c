package codex

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// echoCall makes Codex run `echo x >> marker` (exec_command).
func echoCall(marker string) stubmodel.Reply {
	return stubmodel.CallJSON("exec_command", map[string]string{"cmd": "echo x >> " + marker})
}

// patchCall makes Codex apply a patch that adds name: Codex intercepts an
// apply_patch heredoc in exec_command and runs it as a file change (the
// stub model cannot send the freeform apply_patch tool call).
func patchCall(name string) stubmodel.Reply {
	return stubmodel.CallJSON("exec_command", map[string]string{
		"cmd": "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: " + name + "\n+hello\n*** End Patch\nEOF\n"})
}

// decide answers every approval with d and counts the questions.
func decide(d wire.ApprovalDecision, asked *atomic.Int32) func(context.Context, wire.ApprovalRequest) (wire.ApprovalDecision, error) {
	return func(context.Context, wire.ApprovalRequest) (wire.ApprovalDecision, error) {
		asked.Add(1)
		return d, nil
	}
}

func (rec *recorder) approvalRequests() []wire.ApprovalRequest {
	var out []wire.ApprovalRequest
	for _, ev := range rec.all() {
		if ev.Type == wire.EventApprovalRequest {
			out = append(out, *ev.ApprovalRequest)
		}
	}
	return out
}

func (rec *recorder) resolutions() []wire.RequestResolved {
	var out []wire.RequestResolved
	for _, ev := range rec.all() {
		if ev.Type == wire.EventRequestResolved {
			out = append(out, *ev.RequestResolved)
		}
	}
	return out
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}

// lastOutputs are the function_call_outputs of the last model request that
// contains marker: what the model was told.
func lastOutputs(r *rig, marker string) []stubmodel.FunctionCallOutput {
	reqs := r.stub.RequestsContaining(marker)
	if len(reqs) == 0 {
		return nil
	}
	return reqs[len(reqs)-1].FunctionCallOutputs()
}

// In approval mode untrusted a command is asked for before it runs, with its
// facts; approved once, it runs exactly once.
func TestApprovedCommandRunsOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	marker := filepath.Join(r.srv.Workdir, "once.txt")
	r.stub.When("RUNONCE", echoCall(marker))
	var asked atomic.Int32
	rec := &recorder{approve: decide(wire.ApproveOnce, &asked)}
	in := r.input("RUNONCE")
	in.ApprovalMode = wire.ApprovalModeUntrusted
	res := run(t, r, in, rec)
	if res.Terminal.Kind != wire.TerminalOK {
		t.Fatalf("terminal %+v", res.Terminal)
	}
	if got := readFile(t, marker); got != "x\n" {
		t.Fatalf("marker %q, want one line", got)
	}
	reqs := rec.approvalRequests()
	if len(reqs) != 1 || reqs[0].Kind != wire.ApprovalCommand || reqs[0].Tool != "exec" ||
		!strings.Contains(reqs[0].Command, "echo x >> "+marker) || reqs[0].Cwd != in.Cwd || reqs[0].CallID == "" ||
		reqs[0].RequestID == "" || reqs[0].ExpiresAt.IsZero() {
		t.Fatalf("approval requests %+v", reqs)
	}
	if got := rec.resolutions(); len(got) != 1 || got[0].RequestID != reqs[0].RequestID || got[0].Resolution != wire.ResolvedApprovedOnce {
		t.Fatalf("resolutions %+v", got)
	}
	// After it ran, its facts again: the command and cwd that reached it.
	if terms := rec.terminals(); len(terms) != 1 || terms[0].CallID != reqs[0].CallID || terms[0].Outcome != wire.OutcomeSuccess ||
		!jsonEq(terms[0].Arguments, mustJSON(t, map[string]string{"command": reqs[0].Command, "cwd": in.Cwd})) {
		t.Fatalf("terminals %+v", terms)
	}
}

// A denied command does not run; the model is told it was rejected and the
// stream shows the decline.
func TestDeniedCommandDoesNotRun(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	marker := filepath.Join(r.srv.Workdir, "denied.txt")
	r.stub.When("DENYME", echoCall(marker))
	var asked atomic.Int32
	rec := &recorder{approve: decide(wire.Deny, &asked)}
	in := r.input("DENYME")
	in.ApprovalMode = wire.ApprovalModeUntrusted
	res := run(t, r, in, rec)
	if res.Terminal.Kind != wire.TerminalOK || exists(marker) {
		t.Fatalf("terminal %+v, marker exists %v", res.Terminal, exists(marker))
	}
	if got := rec.resolutions(); len(got) != 1 || got[0].Resolution != wire.ResolvedDenied {
		t.Fatalf("resolutions %+v", got)
	}
	terms := rec.terminals()
	if len(terms) != 1 || terms[0].ExecutionStarted || terms[0].Failure == nil || terms[0].Failure.Reason != wire.FailureDeclined ||
		!strings.Contains(terms[0].Failure.Message, "denied by the gateway") {
		t.Fatalf("terminals %+v", terms)
	}
	if outs := lastOutputs(r, "DENYME"); len(outs) != 1 || !strings.Contains(outs[0].Output, "rejected by user") {
		t.Fatalf("the model was told %+v", outs)
	}
}

// approve_for_turn covers an identical later command of the same turn: it
// runs without a second question, and its resolution says so.
func TestApproveForTurnCoversTheSameCommand(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	marker := filepath.Join(r.srv.Workdir, "twice.txt")
	r.stub.When("TWICE", echoCall(marker), echoCall(marker), stubmodel.Text("done"))
	var asked atomic.Int32
	rec := &recorder{approve: decide(wire.ApproveForTurn, &asked)}
	in := r.input("TWICE")
	in.ApprovalMode = wire.ApprovalModeUntrusted
	res := run(t, r, in, rec)
	if res.Terminal.Kind != wire.TerminalOK {
		t.Fatalf("terminal %+v", res.Terminal)
	}
	if got := readFile(t, marker); got != "x\nx\n" || asked.Load() != 1 {
		t.Fatalf("marker %q after %d questions, want two lines after one", got, asked.Load())
	}
	got := rec.resolutions()
	if len(got) != 2 || got[0].Resolution != wire.ResolvedApprovedForTurn || got[0].AutoApproved ||
		got[1].Resolution != wire.ResolvedApprovedForTurn || !got[1].AutoApproved || got[1].CallID == got[0].CallID {
		t.Fatalf("resolutions %+v", got)
	}
}

// escalatedCall makes Codex run `echo x >> marker` outside the sandbox
// (exec_command with sandbox_permissions require_escalated), without a
// justification.
func escalatedCall(marker string) stubmodel.Reply {
	return stubmodel.CallJSON("exec_command", map[string]string{"cmd": slowEcho(marker),
		"sandbox_permissions": "require_escalated"})
}

// slowEcho appends to marker after 0.3 s. Codex 0.169.0 re-runs, without
// the sandbox and without asking, an approved sandboxed command that ends
// within about 150 ms with output like a sandbox denial (an open gap,
// docs/codex-app-server.md "Approvals"); a command that takes longer is
// never re-run, so what the test below checks does not depend on how fast
// this machine starts the sandbox.
func slowEcho(marker string) string { return "sleep 0.3; echo x >> " + marker }

// In approval mode untrusted under a sandbox that restricts, approving a
// command for the turn does not cover the same command run outside the
// sandbox: Codex asks for both with the same request, so the escalated run
// is asked for again (and denied here), and approve_for_turn is not
// offered for commands at all.
func TestApproveForTurnDoesNotCoverAnEscalatedCommand(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	// Outside the workspace and the temporary directories the sandbox lets
	// a command write.
	marker := filepath.Join("/var/tmp", filepath.Base(t.TempDir())+"-"+strconv.Itoa(os.Getpid())+"-escalate.txt")
	t.Cleanup(func() { _ = os.Remove(marker) })
	r.stub.When("ESCALATE", stubmodel.CallJSON("exec_command", map[string]string{"cmd": slowEcho(marker)}),
		escalatedCall(marker), stubmodel.Text("done"))
	var asked atomic.Int32
	rec := &recorder{approve: func(_ context.Context, req wire.ApprovalRequest) (wire.ApprovalDecision, error) {
		if asked.Add(1) == 1 {
			return wire.ApproveForTurn, nil
		}
		return wire.Deny, nil
	}}
	in := r.input("ESCALATE")
	in.Sandbox, in.ApprovalMode = string(appserver.SandboxWorkspaceWrite), wire.ApprovalModeUntrusted
	res := run(t, r, in, rec)
	if res.Terminal.Kind != wire.TerminalOK {
		t.Fatalf("terminal %+v", res.Terminal)
	}
	reqs := rec.approvalRequests()
	if asked.Load() != 2 || len(reqs) != 2 {
		t.Fatalf("asked %d times (%d requests), want the escalated run asked for again", asked.Load(), len(reqs))
	}
	if reqs[0].Command != reqs[1].Command || reqs[0].Cwd != reqs[1].Cwd || reqs[0].Reason != reqs[1].Reason {
		t.Fatalf("the requests differ, so this does not show what it should: %+v", reqs)
	}
	if slices.Contains(reqs[0].Decisions, wire.ApproveForTurn) {
		t.Fatalf("approve_for_turn offered for a command whose sandboxing is not shown: %v", reqs[0].Decisions)
	}
	got := rec.resolutions()
	if len(got) != 2 || got[1].AutoApproved || got[1].Resolution != wire.ResolvedDenied {
		t.Fatalf("resolutions %+v", got)
	}
	if m := readFile(t, marker); m != "" {
		t.Fatalf("marker %q: the command ran outside the sandbox", m)
	}
}

// A file change is asked for with the paths it would write (Codex's request
// names only the item: the paths come from the item's start).
func TestPatchApprovalNamesChangedPaths(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	r.stub.When("PATCHIT", patchCall("notes.md"))
	var asked atomic.Int32
	rec := &recorder{approve: decide(wire.ApproveOnce, &asked)}
	in := r.input("PATCHIT")
	in.ApprovalMode = wire.ApprovalModeUntrusted
	res := run(t, r, in, rec)
	want := filepath.Join(in.Cwd, "notes.md")
	if res.Terminal.Kind != wire.TerminalOK || readFile(t, want) != "hello\n" {
		t.Fatalf("terminal %+v, file %q", res.Terminal, readFile(t, want))
	}
	reqs := rec.approvalRequests()
	if len(reqs) != 1 || reqs[0].Kind != wire.ApprovalFileChange || reqs[0].Tool != "apply_patch" ||
		!slices.Equal(reqs[0].ChangedPaths, []string{want}) {
		t.Fatalf("approval requests %+v", reqs)
	}
}

// An approval nobody answers is denied at the tool timeout, visibly.
func TestUnansweredApprovalIsDeniedAtTheToolTimeout(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	marker := filepath.Join(r.srv.Workdir, "late.txt")
	r.stub.When("NOANSWER", echoCall(marker))
	rec := &recorder{approve: func(ctx context.Context, _ wire.ApprovalRequest) (wire.ApprovalDecision, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}}
	in := r.input("NOANSWER")
	in.ApprovalMode = wire.ApprovalModeUntrusted
	in.ToolTimeout = 300 * time.Millisecond
	res := run(t, r, in, rec)
	if res.Terminal.Kind != wire.TerminalOK || exists(marker) {
		t.Fatalf("terminal %+v, marker exists %v", res.Terminal, exists(marker))
	}
	if got := rec.resolutions(); len(got) != 1 || got[0].Resolution != wire.ResolvedTimedOut {
		t.Fatalf("resolutions %+v", got)
	}
	if terms := rec.terminals(); len(terms) != 1 || terms[0].Failure == nil || terms[0].Failure.Reason != wire.FailureDeclined ||
		!strings.Contains(terms[0].Failure.Message, "tool timeout") {
		t.Fatalf("terminals %+v", terms)
	}
	if outs := lastOutputs(r, "NOANSWER"); len(outs) != 1 || !strings.Contains(outs[0].Output, "rejected by user") {
		t.Fatalf("the model was told %+v", outs)
	}
}

// In plan mode the model's questions reach the client; a choice and a
// free-form answer reach the model in Codex's shape.
func TestPlanModeUserInputAnswers(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	r.stub.When("ASKUSER", stubmodel.CallJSON("request_user_input", map[string]any{"questions": []any{
		map[string]any{"id": "color", "header": "Color", "question": "Which color?", "options": []any{
			map[string]any{"label": "Red", "description": "warm"}, map[string]any{"label": "Blue", "description": "cool"}}},
		map[string]any{"id": "name", "header": "Name", "question": "Your name?", "options": []any{
			map[string]any{"label": "Anonymous", "description": "no name"}}},
	}}), stubmodel.Text("thanks"))
	var seen []wire.UserInputRequest
	rec := &recorder{reply: func(_ context.Context, req wire.UserInputRequest) (map[string]wire.UserInputValue, error) {
		seen = append(seen, req)
		return map[string]wire.UserInputValue{"color": {Choices: []string{"Red"}}, "name": {Text: "Ada"}}, nil
	}}
	in := r.input("ASKUSER")
	in.CollaborationMode = wire.CollaborationPlan
	res := run(t, r, in, rec)
	if res.Terminal.Kind != wire.TerminalOK {
		t.Fatalf("terminal %+v", res.Terminal)
	}
	if len(seen) != 1 || len(seen[0].Questions) != 2 || seen[0].Questions[0].Question != "Which color?" ||
		len(seen[0].Questions[0].Options) != 2 || !seen[0].Questions[1].AllowOther {
		t.Fatalf("questions %+v", seen)
	}
	outs := lastOutputs(r, "ASKUSER")
	if len(outs) != 1 || !jsonEq([]byte(outs[0].Output), []byte(`{"answers":{"color":{"answers":["Red"]},"name":{"answers":["Ada"]}}}`)) {
		t.Fatalf("the model was told %+v", outs)
	}
	got := rec.resolutions()
	if len(got) != 1 || got[0].Resolution != wire.ResolvedAnswered || got[0].Answers["name"].Text != "Ada" {
		t.Fatalf("resolutions %+v", got)
	}
	if terms := rec.terminals(); len(terms) != 0 {
		t.Fatalf("an answered question reported as a tool failure: %+v", terms)
	}
}

// An approval pending when the socket closes: Codex asks again on the
// connection that reattached; the client is asked once and its one answer
// runs the command once.
func TestReattachWithPendingApproval(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{Transport: codextest.WebSocket})
	marker := filepath.Join(r.srv.Workdir, "reattach.txt")
	r.stub.When("APPROVEDROP", echoCall(marker))
	ctx := testCtx(t, 60*time.Second)
	release := make(chan struct{})
	asked := make(chan string, 10)
	rec := &recorder{approve: func(ctx context.Context, req wire.ApprovalRequest) (wire.ApprovalDecision, error) {
		asked <- req.RequestID
		select {
		case <-release:
			return wire.ApproveOnce, nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}}
	in := r.input("APPROVEDROP")
	in.ApprovalMode = wire.ApprovalModeUntrusted
	turn, err := Start(ctx, r.c, in, rec.hooks())
	if err != nil {
		t.Fatal(err)
	}
	go func() { <-asked; _ = r.c.Close() }()
	if _, err := turn.Wait(ctx); !errors.As(err, new(*DetachedError)) {
		t.Fatalf("Wait after the drop: %v", err)
	}
	if err := turn.Reattach(ctx, r.connect(t)); err != nil {
		t.Fatal(err)
	}
	close(release)
	res, err := turn.Wait(ctx)
	if err != nil || res.Terminal.Kind != wire.TerminalOK {
		t.Fatalf("result %v %+v", err, res)
	}
	if len(asked) != 0 {
		t.Fatalf("the client was asked again for %s", <-asked)
	}
	if got := readFile(t, marker); got != "x\n" {
		t.Fatalf("marker %q, want one line", got)
	}
	if reqs, got := rec.approvalRequests(), rec.resolutions(); len(reqs) != 1 || len(got) != 1 || got[0].Resolution != wire.ResolvedApprovedOnce {
		t.Fatalf("approval requests %+v, resolutions %+v", reqs, got)
	}
}

// approvalMode and collaborationMode are checked like the rest of the input.
func TestStartRefusesUnknownNativeActionModes(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	for _, mutate := range []func(*adapter.TurnInput){
		func(in *adapter.TurnInput) { in.ApprovalMode = "always" },
		func(in *adapter.TurnInput) { in.CollaborationMode = "pair" },
	} {
		in := r.input("hello")
		mutate(&in)
		if _, err := Start(testCtx(t, 10*time.Second), r.c, in, adapter.Hooks{}); !errors.Is(err, adapter.ErrInvalidInput) {
			t.Errorf("err %v, want ErrInvalidInput", err)
		}
	}
}

// Plan mode is the turn's, not the thread's: the next turn without it runs
// in Codex's default mode, where request_user_input is unavailable.
func TestPlanModeEndsWithItsTurn(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	ask := stubmodel.CallJSON("request_user_input", map[string]any{"questions": []any{map[string]any{
		"id": "go", "header": "Go", "question": "Go on?", "options": []any{map[string]any{"label": "Yes", "description": "go"}}}}})
	r.stub.When("PLANFIRST", ask, stubmodel.Text("planned"))
	r.stub.When("DEFAULTNEXT", ask, stubmodel.Text("done"))
	var asked atomic.Int32
	rec := &recorder{reply: func(context.Context, wire.UserInputRequest) (map[string]wire.UserInputValue, error) {
		asked.Add(1)
		return map[string]wire.UserInputValue{"go": {Choices: []string{"Yes"}}}, nil
	}}
	in := r.input("PLANFIRST")
	in.CollaborationMode = wire.CollaborationPlan
	first := run(t, r, in, rec)
	in = r.input("DEFAULTNEXT")
	in.ThreadID = first.ThreadID
	run(t, r, in, rec)
	if asked.Load() != 1 {
		t.Fatalf("the user was asked %d times, want once (in the plan turn)", asked.Load())
	}
	if outs := lastOutputs(r, "DEFAULTNEXT"); len(outs) == 0 || !strings.Contains(outs[len(outs)-1].Output, "unavailable in Default mode") {
		t.Fatalf("the model was told %+v", outs)
	}
}

// Which native actions Codex 0.169.0 asks about, by approval mode and
// sandbox (docs/codex-app-server.md, "Approvals and user input"): untrusted
// asks for every command that is not known to be safe and every patch;
// on-request asks only when the model requests escalation
// (sandbox_permissions require_escalated), never in danger-full-access.
func TestWhichActionsCodexAsksAbout(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	escalated := func(marker string) stubmodel.Reply {
		return stubmodel.CallJSON("exec_command", map[string]string{"cmd": "echo x >> " + marker,
			"sandbox_permissions": "require_escalated", "justification": "write the marker"})
	}
	cases := []struct {
		sandbox string
		mode    wire.ApprovalMode
		action  string
		asks    bool
	}{
		{"danger-full-access", wire.ApprovalModeUntrusted, "command", true},
		{"danger-full-access", wire.ApprovalModeUntrusted, "patch", true},
		{"danger-full-access", wire.ApprovalModeOnRequest, "command", false},
		{"danger-full-access", wire.ApprovalModeOnRequest, "patch", false},
		{"danger-full-access", wire.ApprovalModeOnRequest, "escalated", false},
		{"workspace-write", wire.ApprovalModeUntrusted, "command", true},
		{"workspace-write", wire.ApprovalModeUntrusted, "patch", true},
		{"workspace-write", wire.ApprovalModeOnRequest, "command", false},
		{"workspace-write", wire.ApprovalModeOnRequest, "patch", false},
		{"workspace-write", wire.ApprovalModeOnRequest, "escalated", true},
		{"workspace-write", wire.ApprovalModeNever, "escalated", false},
	}
	for i, tc := range cases {
		marker := fmt.Sprintf("MATRIX%d", i)
		file := filepath.Join(r.srv.Workdir, marker+".txt")
		switch tc.action {
		case "command":
			r.stub.When(marker, echoCall(file))
		case "patch":
			r.stub.When(marker, patchCall(marker+".md"))
		default:
			r.stub.When(marker, escalated(file))
		}
		var asked atomic.Int32
		rec := &recorder{approve: decide(wire.ApproveOnce, &asked)}
		in := r.input(marker)
		in.Sandbox, in.ApprovalMode = tc.sandbox, tc.mode
		if res := run(t, r, in, rec); res.Terminal.Kind != wire.TerminalOK {
			t.Fatalf("%+v: terminal %+v", tc, res.Terminal)
		}
		if got := asked.Load() > 0; got != tc.asks {
			t.Errorf("%s %s %s: asked %v, want %v", tc.sandbox, tc.mode, tc.action, got, tc.asks)
		}
	}
}
