package codex

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
)

// mcpServerArgs configure an MCP server process-wide, as a pod's config.toml
// could: without `mcp_servers = {}` in the thread config it adds the
// MCP-resource helpers even for a model Codex does not know.
var mcpServerArgs = []string{"-c", `mcp_servers.pod_mcp={command="/bin/true"}`}

// A restricted turn on a model Codex does not know offers the model only the
// turn's host tools — also with an MCP server in the server's config — and
// the isolation is re-sent on every resume: whichever way a thread started,
// a restricted resume is isolated, an unrestricted one gets the native
// surface back, and deny-all isolates again.
func TestRestrictedTurnOffersOnlyHostTools(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{ExtraArgs: mcpServerArgs})
	only := []string{"lookup_weather", "kb_search"}
	native := func(marker string) bool {
		got := r.stub.RequestsContaining(marker)[0].ToolNames()
		return slices.Contains(got, "exec_command") && slices.Contains(got, "list_mcp_resources")
	}
	isolated := func(marker string) bool {
		return slices.Equal(r.stub.RequestsContaining(marker)[0].ToolNames(), only)
	}

	in := r.input("RESTRICTED1")
	in.Tools = hostTools()
	in.Restricted = true
	restricted := run(t, r, in, &recorder{})
	if !isolated("RESTRICTED1") {
		t.Fatalf("restricted turn offered %v, want only %v", r.stub.RequestsContaining("RESTRICTED1")[0].ToolNames(), only)
	}
	// Every resume rebuilds the thread config: the unrestricted turn gets
	// the native surface back (a resume without config would keep the
	// isolation of thread/start).
	in = r.input("OPEN-AFTER-RESTRICTED")
	in.Tools = hostTools()
	in.ThreadID = restricted.ThreadID
	run(t, r, in, &recorder{})
	if !native("OPEN-AFTER-RESTRICTED") {
		t.Fatalf("unrestricted resume of a thread started restricted offered %v",
			r.stub.RequestsContaining("OPEN-AFTER-RESTRICTED")[0].ToolNames())
	}

	in = r.input("OPEN1")
	in.Tools = hostTools()
	open := run(t, r, in, &recorder{})
	steps := []struct {
		marker   string
		mutate   func(*adapter.TurnInput)
		isolated bool
	}{
		{"RESTRICTED2", func(in *adapter.TurnInput) { in.Restricted = true }, true},
		{"OPEN3", func(in *adapter.TurnInput) {}, false},
		{"DENYALL4", func(in *adapter.TurnInput) { in.DisableTools = true }, true},
	}
	if !native("OPEN1") {
		t.Fatalf("unrestricted turn offered %v", r.stub.RequestsContaining("OPEN1")[0].ToolNames())
	}
	for _, st := range steps {
		in := r.input(st.marker)
		in.Tools = hostTools()
		in.ThreadID = open.ThreadID
		st.mutate(&in)
		run(t, r, in, &recorder{})
		// Deny-all offers no host tool, but the thread keeps the dynamic
		// tools of thread/start (calls to them are refused).
		if st.isolated && !isolated(st.marker) || !st.isolated && !native(st.marker) {
			t.Fatalf("%s offered %v", st.marker, r.stub.RequestsContaining(st.marker)[0].ToolNames())
		}
	}
}

// A restricted turn on a catalog model fails closed with
// ToolPolicyUnenforceable before any thread starts: no thread, no working
// directory, no model request. Safe-denied tools whose native equivalent
// stays on a catalog model fail the same way.
func TestRestrictedCatalogModelFailsClosed(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	cases := []func(*adapter.TurnInput){
		func(in *adapter.TurnInput) { in.Restricted = true },
		func(in *adapter.TurnInput) { in.DisableTools = true },
		func(in *adapter.TurnInput) { in.SafeDeniedTools = []string{"apply_patch"} },
		func(in *adapter.TurnInput) { in.Model = "gpt-6.1-sol"; in.SafeDeniedTools = []string{"exec"} },
	}
	for i, mutate := range cases {
		in := r.input("CATALOG")
		in.Model = "gpt-5.5"
		in.Tools = hostTools()
		mutate(&in)
		_, err := Start(testCtx(t, 30*time.Second), r.c, in, adapter.Hooks{})
		var se *wire.Error
		// No scope: the refusal is about the model (a model Codex does not
		// know runs the same turn), so a fallback chain must not skip every
		// candidate on Codex (the harness scope: docs/design/contract-rules.md,
		// rule 5).
		if !errors.As(err, &se) || se.Code != wire.CodeToolPolicyUnenforceable || se.Scope != "" || se.Retryable {
			t.Fatalf("case %d: err %v, want an unscoped ToolPolicyUnenforceable selection error", i, err)
		}
		t.Logf("case %d: %v", i, err)
	}
	if n := len(r.stub.Requests()); n != 0 {
		t.Fatalf("%d model requests", n)
	}
	var loaded struct{ Data []string }
	if err := r.c.Call(testCtx(t, 10*time.Second), "thread/loaded/list", map[string]any{}, &loaded); err != nil || len(loaded.Data) != 0 {
		t.Fatalf("threads %v (%v)", loaded.Data, err)
	}
	if exists(r.input("").Cwd) {
		t.Fatal("the working directory was created")
	}
}

// CanIsolate is sound against what Codex really sends: for every model id it
// accepts, the recorded request offers only the dynamic tools under
// IsolationConfig; every model whose request keeps a native tool is
// refused. (The rule is conservative: some refused ids would isolate.)
func TestCanIsolateMatchesRecordedRequests(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{ExtraArgs: mcpServerArgs})
	ctx := testCtx(t, 60*time.Second)
	cat, err := LoadModelCatalog(ctx, r.c)
	if err != nil {
		t.Fatal(err)
	}
	if !cat.Knows("gpt-5.5") || cat.Knows(codextest.StubModel) || len(cat.Efforts("gpt-5.5")) == 0 {
		t.Fatalf("catalog %+v", cat)
	}
	models := []string{codextest.StubModel, "my-local-llama", "o3", "gpt-5", "GPT-5.5", "xgpt-5.5", "a/b/gpt-5.5",
		"gpt-5.5", "gpt-5.5-mini", "gpt-5.5:latest", "foo/gpt-5.5", "gpt-6.1-sol", "gpt-6.1-sol-x", "codex-auto-review"}
	for i, model := range models {
		th, err := r.c.StartThread(ctx, appserver.ThreadStartParams{Model: model, Cwd: r.srv.Workdir,
			ApprovalPolicy: appserver.ApprovalNever, Config: IsolationConfig(), Ephemeral: true,
			DynamicTools: []appserver.DynamicTool{appserver.FunctionTool("lookup", "Look up.", nil)}}, appserver.ThreadOptions{})
		if err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		marker := fmt.Sprintf("ISO-%d", i)
		turn, err := th.StartTurn(ctx, appserver.TurnStartParams{Input: []appserver.InputItem{appserver.TextInput(marker)}})
		if err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		if _, err := turn.Wait(ctx); err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		req := r.stub.RequestsContaining(marker)[0]
		isolated := req.HasTools && slices.Equal(req.ToolNames(), []string{"lookup"}) && len(req.AdditionalTools()) == 0
		can, reason := CanIsolate(model, cat)
		t.Logf("%-20s isolated=%-5v CanIsolate=%-5v tools=%v additional=%v code-mode=%v", model, isolated, can,
			req.ToolNames(), req.AdditionalTools(), req.CodeModeTools())
		if can && !isolated {
			t.Errorf("CanIsolate(%q) = true, but the model was offered %v / %v", model, req.ToolNames(), req.CodeModeTools())
		}
		if !can && reason == "" {
			t.Errorf("CanIsolate(%q) = false without a reason", model)
		}
	}
	for _, model := range []string{codextest.StubModel, "my-local-llama"} {
		if can, _ := CanIsolate(model, cat); !can {
			t.Errorf("CanIsolate(%q) = false for a model Codex does not know", model)
		}
	}
	for _, model := range []string{"gpt-5.5", "gpt-6.1-sol"} {
		if can, _ := CanIsolate(model, cat); can {
			t.Errorf("CanIsolate(%q) = true for a catalog model", model)
		}
	}
	if can, _ := CanIsolate(codextest.StubModel, nil); can {
		t.Error("CanIsolate without a catalog must fail closed")
	}
}

// Codex ignores thread/resume overrides while another connection is
// subscribed to the thread. The adapter unsubscribes at the end of every
// turn (so its own pooled connections never hold a thread), and a restricted
// turn whose resume shows ignored overrides fails closed.
func TestResumeOverridesNeedNoSubscriber(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{Transport: codextest.WebSocket})
	in := r.input("PLAIN1")
	in.ThinkLevel = "low"
	in.Tools = hostTools()
	first := run(t, r, in, &recorder{})

	// Another connection holds the thread.
	other := r.connect(t)
	ctx := testCtx(t, 30*time.Second)
	if _, err := other.ResumeThread(ctx, appserver.ThreadResumeParams{ThreadID: first.ThreadID, ExcludeTurns: true}, appserver.ThreadOptions{}); err != nil {
		t.Fatal(err)
	}
	in = r.input("RESTRICTED2")
	in.ThinkLevel = "high"
	in.Tools = hostTools()
	in.Restricted = true
	in.ThreadID = first.ThreadID
	_, err := Start(ctx, r.c, in, adapter.Hooks{})
	var se *wire.Error
	if !errors.As(err, &se) || se.Code != wire.CodeToolPolicyUnenforceable {
		t.Fatalf("restricted resume of a thread held elsewhere: %v", err)
	}
	if n := len(r.stub.RequestsContaining("RESTRICTED2")); n != 0 {
		t.Fatalf("%d model requests", n)
	}

	// Released, the same turn is isolated.
	if err := other.Call(ctx, "thread/unsubscribe", map[string]any{"threadId": first.ThreadID}, nil); err != nil {
		t.Fatal(err)
	}
	res := run(t, r, in, &recorder{})
	if res.ThreadID != first.ThreadID {
		t.Fatalf("thread %s, want %s", res.ThreadID, first.ThreadID)
	}
	req := r.stub.RequestsContaining("RESTRICTED2")[0]
	if got := req.ToolNames(); !slices.Equal(got, []string{"lookup_weather", "kb_search"}) {
		t.Fatalf("restricted resume offered %v", got)
	}
	var b struct {
		Reasoning struct{ Effort string } `json:"reasoning"`
	}
	_ = json.Unmarshal(req.Body, &b)
	if b.Reasoning.Effort != "high" {
		t.Fatalf("effort %q: the resume overrides were not applied", b.Reasoning.Effort)
	}
}
