package codex

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// reseedTools are the first turn's host tools: old_tool is removed later,
// kept_tool stays.
func reseedTools() []wire.HostTool {
	return []wire.HostTool{
		{Name: "old_tool", Description: "A tool the next turn removes."},
		{Name: "kept_tool", Description: "A tool every turn offers.", Parameters: weatherSchema},
	}
}

// firstReseedTurn runs a turn that calls old_tool and answers, so the
// thread's history has a user message, a host tool call and a reply.
func firstReseedTurn(t *testing.T, r *rig) *wire.TurnResult {
	t.Helper()
	r.stub.When("FIRST-QUESTION",
		stubmodel.Call(stubmodel.FunctionCall{Name: "old_tool", Arguments: `{}`, CallID: "call_old"}),
		stubmodel.Text("FIRST-REPLY from the model"))
	rec := &recorder{answer: func(context.Context, wire.ToolCall) (wire.ToolAnswer, error) {
		return wire.ToolAnswer{Content: []wire.ToolContent{{Type: "text", Text: "OLD-TOOL-OUTPUT"}}}, nil
	}}
	in := r.input("FIRST-QUESTION from the user")
	in.Tools = reseedTools()
	return run(t, r, in, rec)
}

// Probe: thread/fork accepts a dynamicTools field but ignores it: the fork
// keeps the source thread's history and its dynamic tools. It cannot change
// a conversation's tool surface.
func TestForkKeepsTheSourceThreadsTools(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	first := firstReseedTurn(t, r)
	ctx := testCtx(t, 30*time.Second)
	var fork struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	tools := []any{map[string]any{"name": "new_tool", "description": "added", "inputSchema": map[string]any{"type": "object"}}}
	if err := r.c.Call(ctx, "thread/fork", map[string]any{"threadId": first.ThreadID, "dynamicTools": tools,
		"excludeTurns": true}, &fork); err != nil {
		t.Fatalf("thread/fork: %v", err)
	}
	in := r.input("AFTER-FORK")
	in.ThreadID = fork.Thread.ID
	run(t, r, in, &recorder{})
	req := r.stub.RequestsContaining("AFTER-FORK")[0]
	if !slices.Contains(req.UserTexts(), "FIRST-QUESTION from the user") {
		t.Fatalf("the fork lost the history: user texts %q", req.UserTexts())
	}
	if got := req.ToolNames(); !slices.Contains(got, "old_tool") || slices.Contains(got, "new_tool") {
		t.Fatalf("fork offered %v: Codex 0.169.0 now takes dynamicTools on thread/fork; re-seeding could use it", got)
	}
}

// A second turn with one host tool added and one removed, re-seeded from the
// first turn's thread, runs on a new thread: the model's request carries the
// first turn's user message, tool call and reply, offers the added tool and
// not the removed one, and the stream says the turn re-seeded. A call to the
// removed tool is answered by Codex as unsupported (the new thread never
// registered it); the client is never asked. A later turn resuming the new
// thread still carries the whole conversation.
func TestReseedContinuesTheConversationWithNewTools(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	first := firstReseedTurn(t, r)

	r.stub.When("SECOND-QUESTION",
		stubmodel.Call(stubmodel.FunctionCall{Name: "old_tool", Arguments: `{}`, CallID: "call_removed"}),
		stubmodel.Text("SECOND-REPLY"))
	rec := &recorder{answer: func(_ context.Context, call wire.ToolCall) (wire.ToolAnswer, error) {
		t.Errorf("the client was asked for %+v", call)
		return wire.ToolAnswer{}, nil
	}}
	in := r.input("SECOND-QUESTION")
	in.Tools = []wire.HostTool{reseedTools()[1], {Name: "new_tool", Description: "A tool added later."}}
	in.ReseedFrom = first.ThreadID
	res := run(t, r, in, rec)
	if res.Terminal.Kind != wire.TerminalOK || res.ThreadID == "" || res.ThreadID == first.ThreadID {
		t.Fatalf("terminal %+v on thread %q (first %q)", res.Terminal, res.ThreadID, first.ThreadID)
	}

	req := r.stub.RequestsContaining("SECOND-QUESTION")[0]
	if got := req.UserTexts(); !slices.Contains(got, "FIRST-QUESTION from the user") {
		t.Errorf("the re-seeded request lacks the first user message: %q", got)
	}
	if got := req.AssistantTexts(); !slices.Contains(got, "FIRST-REPLY from the model") {
		t.Errorf("the re-seeded request lacks the first reply: %q", got)
	}
	if outs := req.FunctionCallOutputs(); !slices.ContainsFunc(outs, func(o stubmodel.FunctionCallOutput) bool {
		return o.CallID == "call_old" && o.Output == "OLD-TOOL-OUTPUT"
	}) {
		t.Errorf("the re-seeded request lacks the first turn's tool output: %+v", outs)
	}
	if got := req.ToolNames(); !slices.Contains(got, "new_tool") || !slices.Contains(got, "kept_tool") || slices.Contains(got, "old_tool") {
		t.Errorf("the re-seeded thread offered %v, want new_tool and kept_tool without old_tool", got)
	}
	if outs := r.stub.FunctionCallOutputs(); !slices.ContainsFunc(outs, func(o stubmodel.FunctionCallOutput) bool {
		return o.CallID == "call_removed" && o.Output == "unsupported call: old_tool"
	}) {
		t.Errorf("the removed tool's call was not refused: %+v", outs)
	}

	events := rec.agent(wire.StreamLifecycle)
	i := slices.IndexFunc(events, func(a wire.AgentEvent) bool { return a.Phase == wire.PhaseReseeded })
	if i < 0 {
		t.Fatalf("no lifecycle/reseeded event: %+v", events)
	}
	ev := events[i]
	if !strings.Contains(ev.Text, first.ThreadID) || !strings.Contains(ev.Text, res.ThreadID) || !strings.Contains(ev.Text, "new_tool") {
		t.Errorf("reseeded text %q does not name both threads and the new tools", ev.Text)
	}
	var want struct {
		From   string   `json:"fromThreadId"`
		Thread string   `json:"threadId"`
		Tools  []string `json:"hostTools"`
	}
	if err := json.Unmarshal(ev.Data, &want); err != nil || want.From != first.ThreadID || want.Thread != res.ThreadID ||
		!slices.Equal(want.Tools, []string{"kept_tool", "new_tool"}) {
		t.Errorf("reseeded data %s", ev.Data)
	}

	// The injected history is part of the new thread: a resume keeps it.
	in = r.input("THIRD-QUESTION")
	in.Tools = []wire.HostTool{reseedTools()[1], {Name: "new_tool", Description: "A tool added later."}}
	in.ThreadID = res.ThreadID
	run(t, r, in, &recorder{})
	third := r.stub.RequestsContaining("THIRD-QUESTION")[0]
	if got := third.UserTexts(); !slices.Contains(got, "FIRST-QUESTION from the user") || !slices.Contains(got, "SECOND-QUESTION") {
		t.Errorf("a resume of the re-seeded thread lost history: %q", got)
	}
}

// The re-seeded thread is started with the turn's tool policy: a restricted
// turn's new thread offers only its host tools, and a safe-denied tool is
// neither offered as a host tool nor left on the native surface.
func TestReseedKeepsTheToolPolicy(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	first := firstReseedTurn(t, r)
	steps := []struct {
		marker string
		mutate func(*adapter.TurnInput)
		want   []string
	}{
		{"RESTRICTED-RESEED", func(in *adapter.TurnInput) { in.Restricted = true }, []string{"kept_tool", "new_tool"}},
		{"SAFEDENY-RESEED", func(in *adapter.TurnInput) { in.SafeDeniedTools = []string{"new_tool", "exec"} }, nil},
	}
	for _, st := range steps {
		in := r.input(st.marker)
		in.Tools = []wire.HostTool{reseedTools()[1], {Name: "new_tool", Description: "A tool added later."}}
		in.ReseedFrom = first.ThreadID
		st.mutate(&in)
		run(t, r, in, &recorder{})
		req := r.stub.RequestsContaining(st.marker)[0]
		if !slices.Contains(req.UserTexts(), "FIRST-QUESTION from the user") {
			t.Errorf("%s: history missing: %q", st.marker, req.UserTexts())
		}
		got := req.ToolNames()
		switch {
		case st.want != nil && !slices.Equal(got, st.want):
			t.Errorf("%s offered %v, want only %v", st.marker, got, st.want)
		case st.want == nil && (slices.Contains(got, "new_tool") || slices.Contains(got, "exec_command") ||
			slices.Contains(got, "old_tool") || !slices.Contains(got, "kept_tool")):
			t.Errorf("%s offered %v: want kept_tool, no new_tool (safe-denied), no exec_command, no old_tool", st.marker, got)
		}
	}
}

// Re-seeding from a thread the server has no rollout for is
// ErrThreadNotFound, as a resume of it is: the engine reports
// NativeThreadLost. (thread/items/list alone cannot tell: Codex answers it
// for an unknown thread with "not supported yet", so Reseed resumes the
// source first.)
func TestReseedFromAnUnknownThread(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	const unknown = "019a0000-0000-7000-8000-000000000000"
	ctx := testCtx(t, 30*time.Second)
	var rpc *appserver.RPCError
	err := r.c.Call(ctx, "thread/items/list", map[string]any{"threadId": unknown}, nil)
	if !errors.As(err, &rpc) || !strings.Contains(rpc.Message, "not supported yet") {
		t.Errorf("thread/items/list of an unknown thread: %v", err)
	}
	in := r.input("NEVER-SENT")
	in.ReseedFrom = unknown
	_, err = Start(ctx, r.c, in, adapter.Hooks{})
	if !errors.Is(err, ErrThreadNotFound) {
		t.Fatalf("err %v, want ErrThreadNotFound", err)
	}
	if n := len(r.stub.Requests()); n != 0 {
		t.Fatalf("%d model requests", n)
	}
}

// The fingerprint changes exactly when the offered host tool surface does.
func TestHostToolsFingerprint(t *testing.T) {
	t.Parallel()
	base := adapter.TurnInput{Tools: hostTools()}
	reordered := adapter.TurnInput{Tools: []wire.HostTool{hostTools()[1], hostTools()[0]}}
	reformatted := adapter.TurnInput{Tools: hostTools()}
	reformatted.Tools[0].Parameters = json.RawMessage(`{ "required":["city"], "type":"object", "properties":{"city":{"type":"string"}} }`)
	described := adapter.TurnInput{Tools: hostTools()}
	described.Tools[1].Description = "Search the knowledge base, now better."
	schema := adapter.TurnInput{Tools: hostTools()}
	schema.Tools[0].Parameters = json.RawMessage(`{"type":"object","properties":{"town":{"type":"string"}}}`)
	denied := adapter.TurnInput{Tools: hostTools(), SafeDeniedTools: []string{"kb_search"}}
	cases := []struct {
		name string
		a, b adapter.TurnInput
		same bool
	}{
		{"order does not matter", base, reordered, true},
		{"schema formatting does not matter", base, reformatted, true},
		{"restriction does not change the offered tools", base, adapter.TurnInput{Tools: hostTools(), Restricted: true}, true},
		{"a description changes it", base, described, false},
		{"a schema changes it", base, schema, false},
		{"a removed tool changes it", base, adapter.TurnInput{Tools: hostTools()[:1]}, false},
		{"a safe-denied tool is not offered", denied, adapter.TurnInput{Tools: hostTools()[:1]}, true},
		{"disabled tools offer none", adapter.TurnInput{Tools: hostTools(), DisableTools: true}, adapter.TurnInput{}, true},
		{"no tools is not unknown", adapter.TurnInput{}, base, false},
	}
	for _, c := range cases {
		fa, fb := HostToolsFingerprint(c.a), HostToolsFingerprint(c.b)
		if fa == "" || fb == "" || (fa == fb) != c.same {
			t.Errorf("%s: %q vs %q, same=%v", c.name, fa, fb, c.same)
		}
	}
}

// A thread is re-seeded from its stored rollout after the server restarted
// (the source thread is not loaded then).
func TestReseedAfterServerRestart(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	first := firstReseedTurn(t, r)
	if err := r.srv.Stop(30 * time.Second); err != nil {
		t.Fatalf("stop: %v", err)
	}
	r.srv = codextest.Start(t, codextest.Options{Dir: r.srv.Dir, ProviderURL: r.stub.BaseURL()})
	r.c = r.connect(t)
	in := r.input("AFTER-RESTART")
	in.Tools = []wire.HostTool{{Name: "new_tool", Description: "A tool added later."}}
	in.ReseedFrom = first.ThreadID
	run(t, r, in, &recorder{})
	if got := r.stub.RequestsContaining("AFTER-RESTART")[0].UserTexts(); !slices.Contains(got, "FIRST-QUESTION from the user") {
		t.Fatalf("history missing after a restart: %q", got)
	}
}

// A thread that still runs a turn is not re-seeded: its history would stop
// in the middle of that turn. The orphaned turn is interrupted and the
// re-seed fails with ErrThreadBusy before any new thread or model request.
func TestReseedRefusesABusyThread(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{Transport: codextest.WebSocket})
	gate := stubmodel.NewGate()
	r.stub.When("BUSY-TURN", stubmodel.Stall(gate, stubmodel.Text("late answer")))
	ctx := testCtx(t, 60*time.Second)
	busy, err := Start(ctx, r.c, r.input("BUSY-TURN"), (&recorder{}).hooks())
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	<-gate.Reached()

	in := r.input("RESEED-WHILE-BUSY")
	in.ReseedFrom = busy.ThreadID()
	_, err = Start(ctx, r.connect(t), in, adapter.Hooks{})
	gate.Release()
	if !errors.Is(err, ErrThreadBusy) {
		t.Fatalf("err %v, want ErrThreadBusy", err)
	}
	if res, err := busy.Wait(ctx); err != nil || res.Terminal.Kind == wire.TerminalOK {
		t.Fatalf("the busy turn was not interrupted: %+v, %v", res, err)
	}
	if got := r.stub.RequestsContaining("RESEED-WHILE-BUSY"); len(got) != 0 {
		t.Fatalf("the refused re-seed reached the model")
	}
}

// indexOrder reports whether each of want occurs in got, in want's order.
func indexOrder(got []string, want ...string) bool {
	last := -1
	for _, w := range want {
		i := slices.Index(got, w)
		if i <= last {
			return false
		}
		last = i
	}
	return true
}

// A session that ran turns on the gateway's embedded runtime comes back: a
// re-seeded thread carries the old thread's conversation, then the gateway's
// messages, then the prompt; the stream mirrors the gateway's messages
// (marked gateway) before the prompt and says what was injected. A resumed
// thread gets the gateway's messages appended; a session with no thread here
// gets a thread seeded with them only.
func TestReseedCarriesTheGatewaysMessages(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	first := firstReseedTurn(t, r)
	gateway := []wire.GatewayMessage{
		{Role: wire.RoleUser, Text: "EMBEDDED-QUESTION asked on the gateway"},
		{Role: wire.RoleAssistant, Text: "EMBEDDED-REPLY from the gateway's runtime"},
	}

	rec := &recorder{answer: func(context.Context, wire.ToolCall) (wire.ToolAnswer, error) { return wire.ToolAnswer{}, nil }}
	in := r.input("BACK-ON-CODEX")
	in.Tools = reseedTools()
	in.ReseedFrom, in.GatewayMessages = first.ThreadID, gateway
	res := run(t, r, in, rec)
	if res.Terminal.Kind != wire.TerminalOK || res.ThreadID == first.ThreadID {
		t.Fatalf("terminal %+v on thread %q (first %q)", res.Terminal, res.ThreadID, first.ThreadID)
	}
	req := r.stub.RequestsContaining("BACK-ON-CODEX")[0]
	if got := req.UserTexts(); !indexOrder(got, "FIRST-QUESTION from the user", gateway[0].Text, "BACK-ON-CODEX") {
		t.Errorf("user texts %q: want the first question, the gateway's question, then the prompt", got)
	}
	if got := req.AssistantTexts(); !indexOrder(got, "FIRST-REPLY from the model", gateway[1].Text) {
		t.Errorf("assistant texts %q: want the first reply, then the gateway's reply", got)
	}
	tr := rec.transcript()
	if len(tr) < 3 || !tr[0].Gateway || tr[0].Text != gateway[0].Text || tr[0].Role != wire.RoleUser ||
		!tr[1].Gateway || tr[1].Text != gateway[1].Text || tr[1].Role != wire.RoleAssistant ||
		tr[2].Gateway || tr[2].Text != "BACK-ON-CODEX" || tr[0].ThreadID != res.ThreadID {
		t.Errorf("transcript records %+v: want the gateway's two messages (marked, on the new thread), then the prompt", tr)
	}
	events := rec.agent(wire.StreamLifecycle)
	i := slices.IndexFunc(events, func(a wire.AgentEvent) bool { return a.Phase == wire.PhaseReseeded })
	if i < 0 {
		t.Fatalf("no lifecycle/reseeded event: %+v", events)
	}
	var data struct {
		From            string `json:"fromThreadId"`
		ThreadItems     int    `json:"threadItems"`
		GatewayMessages int    `json:"gatewayMessages"`
	}
	// The first turn's thread holds its question, the tool call and output,
	// and the reply: four items.
	if err := json.Unmarshal(events[i].Data, &data); err != nil || data.From != first.ThreadID || data.ThreadItems != 4 || data.GatewayMessages != 2 {
		t.Errorf("reseeded data %s: want from %s, 4 thread items, 2 gateway messages", events[i].Data, first.ThreadID)
	}
	if !strings.Contains(events[i].Text, "gateway") {
		t.Errorf("reseeded text %q does not say the gateway ran turns", events[i].Text)
	}

	// The same session's thread, resumed with more of the gateway's
	// messages: they are appended to it, no new thread.
	more := []wire.GatewayMessage{{Role: wire.RoleUser, Text: "EMBEDDED-AGAIN on the gateway"}, {Role: wire.RoleAssistant, Text: "EMBEDDED-AGAIN-REPLY"}}
	in = r.input("RESUMED-ON-CODEX")
	in.Tools = reseedTools()
	in.ThreadID, in.GatewayMessages = res.ThreadID, more
	rec = &recorder{answer: rec.answer}
	resumed := run(t, r, in, rec)
	if resumed.ThreadID != res.ThreadID {
		t.Errorf("the resumed turn ran on thread %s, want %s", resumed.ThreadID, res.ThreadID)
	}
	req = r.stub.RequestsContaining("RESUMED-ON-CODEX")[0]
	if got := req.UserTexts(); !indexOrder(got, "BACK-ON-CODEX", more[0].Text, "RESUMED-ON-CODEX") {
		t.Errorf("user texts %q: want the thread's last prompt, the gateway's new question, then the prompt", got)
	}
	if got := req.AssistantTexts(); !slices.Contains(got, more[1].Text) {
		t.Errorf("assistant texts %q lack the gateway's new reply", got)
	}
	if tr := rec.transcript(); len(tr) < 3 || !tr[0].Gateway || !tr[1].Gateway || tr[2].Gateway {
		t.Errorf("transcript records %+v: want the gateway's two messages, then the prompt", tr)
	}
	if evs := rec.agent(wire.StreamLifecycle); !slices.ContainsFunc(evs, func(a wire.AgentEvent) bool {
		return a.Phase == wire.PhaseReseeded && strings.Contains(a.Text, "appended") && strings.Contains(string(a.Data), `"gatewayMessages":2`)
	}) {
		t.Errorf("no reseeded event saying 2 gateway messages were appended: %+v", evs)
	}

	in = r.input("FRESH-ON-CODEX")
	in.Cwd = filepath.Join(r.srv.Home, "sessions", "work", "session-2")
	in.GatewayMessages = gateway
	rec = &recorder{}
	run(t, r, in, rec)
	req = r.stub.RequestsContaining("FRESH-ON-CODEX")[0]
	if got := req.UserTexts(); !indexOrder(got, gateway[0].Text, "FRESH-ON-CODEX") || slices.Contains(got, "FIRST-QUESTION from the user") {
		t.Errorf("user texts %q: want only the gateway's question before the prompt", got)
	}
	if got := req.AssistantTexts(); !slices.Contains(got, gateway[1].Text) {
		t.Errorf("assistant texts %q lack the gateway's reply", got)
	}
	if evs := rec.agent(wire.StreamLifecycle); !slices.ContainsFunc(evs, func(a wire.AgentEvent) bool {
		return a.Phase == wire.PhaseReseeded && strings.Contains(string(a.Data), `"gatewayMessages":2`) && strings.Contains(string(a.Data), `"threadItems":0`)
	}) {
		t.Errorf("no reseeded event counting 2 gateway messages and no thread items: %+v", evs)
	}
}

// Probe: thread/items/list (and the experimental thread/timeline/list) list
// the items of a thread's turns only, not the items thread/inject_items
// added: a re-seed of a seeded thread (or of
// one the gateway's messages were appended to) carries the thread's own
// turns and loses what was injected. (Fails once a release lists them; the
// loss then ends by itself.)
func TestInjectedItemsAreNotListed(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	first := firstReseedTurn(t, r)
	in := r.input("SEEDED-TURN")
	in.ReseedFrom = first.ThreadID
	in.GatewayMessages = []wire.GatewayMessage{{Role: wire.RoleUser, Text: "EMBEDDED-QUESTION asked on the gateway"}}
	seeded := run(t, r, in, &recorder{})
	items, err := sourceHistory(testCtx(t, 30*time.Second), r.c, seeded.ThreadID, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(items)
	if !strings.Contains(string(b), "SEEDED-TURN") || strings.Contains(string(b), "FIRST-QUESTION") || strings.Contains(string(b), "EMBEDDED-QUESTION") {
		t.Fatalf("items of the seeded thread: %s; want its own turn only (Codex now lists injected items: "+
			"a re-seed of a seeded thread keeps them, update the docs)", b)
	}
	// Nor does the experimental timeline, which lists the rollout in order.
	var timeline json.RawMessage
	if err := r.c.Call(testCtx(t, 30*time.Second), "thread/timeline/list", map[string]any{"threadId": seeded.ThreadID}, &timeline); err != nil {
		t.Fatalf("thread/timeline/list: %v", err)
	}
	if !strings.Contains(string(timeline), "SEEDED-TURN") || strings.Contains(string(timeline), "FIRST-QUESTION") || strings.Contains(string(timeline), "EMBEDDED-QUESTION") {
		t.Fatalf("timeline of the seeded thread: %s; want its own turn only (Codex now lists injected items there: re-seed from it)", timeline)
	}
}
