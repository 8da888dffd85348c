package codex

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/mcpserver"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

const mcpHeaderValue = "header-value-from-a-secret"

func startMCP(t *testing.T) *mcpserver.Server {
	t.Helper()
	return mcpserver.Start(t,
		mcpserver.Tool{Name: "lookup", Description: "Look a word up", Reply: "lookup-result-42",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"word":{"type":"string"}}}`)},
		mcpserver.Tool{Name: "erase", Description: "Erase everything", Reply: "erased",
			InputSchema: json.RawMessage(`{"type":"object"}`)})
}

func docsServer(url string) adapter.MCPServer {
	return adapter.MCPServer{Name: "docs", URL: url, Headers: adapter.SecretHeaders{"X-Api-Key": mcpHeaderValue},
		DisabledTools: []string{"erase"}, StartupTimeout: 20 * time.Second, ToolTimeout: 30 * time.Second}
}

// A turn's MCP server reaches the model: the recorded request offers its
// tool (not the disabled one), the model's call reaches the server exactly
// once with the header value, the stream reports the native call as
// docs__lookup, and the header value appears in no event. The next turn on
// the thread, without mcpServers, no longer offers the tool. The inventory
// of the loaded thread lists the server's offered tool; an unknown thread is
// ErrThreadNotFound.
func TestMCPServerToolCalledWithSecretHeader(t *testing.T) {
	t.Parallel()
	mcp := startMCP(t)
	r := newRig(t, codextest.Options{})
	r.stub.When("look it up", stubmodel.Call(stubmodel.FunctionCall{Namespace: "mcp__docs", Name: "lookup", Arguments: `{"word":"x"}`}),
		stubmodel.Text("looked up"))
	in := r.input("look it up")
	in.MCPServers = []adapter.MCPServer{docsServer(mcp.URL)}
	rec := &recorder{}
	res := run(t, r, in, rec)
	if res.Terminal.Kind != wire.TerminalOK {
		t.Fatalf("terminal %+v", res.Terminal)
	}
	calls := mcp.Calls()
	if len(calls) != 1 || calls[0].Tool != "lookup" || calls[0].Header.Get("X-Api-Key") != mcpHeaderValue {
		t.Fatalf("the MCP server saw calls %+v, want one lookup with the header", calls)
	}
	reqs := r.stub.RequestsContaining("look it up")
	if len(reqs) < 2 {
		t.Fatalf("%d model requests, want the call and its follow-up", len(reqs))
	}
	if tools := reqs[0].ToolNames(); !slices.Contains(tools, "mcp__docs.lookup") || slices.Contains(tools, "mcp__docs.erase") {
		t.Errorf("the model was offered %v, want mcp__docs.lookup and not the disabled mcp__docs.erase", tools)
	}
	if outs := reqs[1].FunctionCallOutputs(); len(outs) != 1 || !strings.Contains(outs[0].Output, "lookup-result-42") {
		t.Errorf("the model got back %+v, want the server's reply", outs)
	}
	var phases []string
	for _, a := range rec.agent(wire.StreamTool) {
		if a.Tool == "docs__lookup" {
			phases = append(phases, a.Phase)
		}
	}
	if !slices.Equal(phases, []string{wire.PhaseStart, wire.PhaseEnd}) {
		t.Errorf("tool events for docs__lookup: %v, want start and end", phases)
	}
	for _, ev := range rec.all() {
		if strings.Contains(string(mustJSON(t, ev)), mcpHeaderValue) {
			t.Fatalf("an event carries the header value: %s", mustJSON(t, ev))
		}
	}

	ctx := testCtx(t, 30*time.Second)
	inv, err := MCPInventory(ctx, r.c, res.ThreadID)
	if err != nil {
		t.Fatalf("inventory: %v", err)
	}
	if len(inv.Servers) != 1 || inv.Servers[0].Name != "docs" || len(inv.Servers[0].Tools) != 1 ||
		inv.Servers[0].Tools[0].Name != "lookup" || inv.Servers[0].Tools[0].Description != "Look a word up" {
		t.Errorf("inventory %+v, want docs with lookup only", inv)
	}
	if _, err := MCPInventory(ctx, r.c, "00000000-0000-4000-8000-000000000000"); !errors.Is(err, ErrThreadNotFound) {
		t.Errorf("inventory of an unknown thread: %v, want ErrThreadNotFound", err)
	}

	next := r.input("without servers")
	next.ThreadID = res.ThreadID
	run(t, r, next, &recorder{})
	later := r.stub.RequestsContaining("without servers")
	if len(later) == 0 || slices.Contains(later[0].ToolNames(), "mcp__docs.lookup") {
		t.Errorf("a turn without mcpServers was offered %v", later[0].ToolNames())
	}
}

// A restricted turn with an MCP server fails closed before any thread or
// model request: Codex would add its MCP resource helpers, which the
// restricted policy does not list. Control: the same turn unrestricted runs.
func TestRestrictedTurnWithMCPServerFailsClosed(t *testing.T) {
	t.Parallel()
	mcp := startMCP(t)
	r := newRig(t, codextest.Options{})
	in := r.input("restricted with mcp")
	in.MCPServers = []adapter.MCPServer{docsServer(mcp.URL)}
	in.Restricted = true
	_, err := Start(testCtx(t, 30*time.Second), r.c, in, adapter.Hooks{})
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeToolPolicyUnenforceable || !strings.Contains(we.Message, "MCP") {
		t.Fatalf("err = %v, want ToolPolicyUnenforceable naming MCP", err)
	}
	if n := len(r.stub.Requests()); n != 0 || len(mcp.Methods()) != 0 {
		t.Fatalf("a refused turn reached the model (%d requests) or the MCP server (%v)", n, mcp.Methods())
	}
	in.Restricted = false
	if res := run(t, r, in, &recorder{}); res.Terminal.Kind != wire.TerminalOK {
		t.Fatalf("control: the unrestricted turn ended %+v", res.Terminal)
	}
}

// A safe-denied id naming an MCP tool as the stream does (<server>__<tool>)
// removes that tool from the model's offer; the server's other tool stays.
func TestSafeDeniedMCPToolNotOffered(t *testing.T) {
	t.Parallel()
	mcp := startMCP(t)
	r := newRig(t, codextest.Options{})
	in := r.input("safe deny mcp")
	srv := docsServer(mcp.URL)
	srv.DisabledTools = nil
	in.MCPServers = []adapter.MCPServer{srv}
	in.SafeDeniedTools = []string{"docs__erase"}
	run(t, r, in, &recorder{})
	reqs := r.stub.RequestsContaining("safe deny mcp")
	if len(reqs) == 0 {
		t.Fatal("no model request")
	}
	if tools := reqs[0].ToolNames(); !slices.Contains(tools, "mcp__docs.lookup") || slices.Contains(tools, "mcp__docs.erase") {
		t.Errorf("the model was offered %v, want lookup without the safe-denied erase", tools)
	}
}

// In a sandboxed thread (workspace-write, as on pods of a harness that asks
// for Codex's sandbox, or an external server's own mode) Codex asks for
// approval before an MCP tool call unless the tool is annotated read-only;
// with approval policy never the call is refused without reaching the
// server and the model reads why. A read-only tool runs (the control).
func TestSandboxedMCPCallNeedsApproval(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		readOnly bool
		wantRun  bool
	}{
		{"a tool without annotations is refused", false, false},
		{"a read-only tool runs", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool := mcpserver.Tool{Name: "lookup", Reply: "lookup-result-42", InputSchema: json.RawMessage(`{"type":"object"}`)}
			if tc.readOnly {
				tool.Annotations = json.RawMessage(`{"readOnlyHint":true}`)
			}
			mcp := mcpserver.Start(t, tool)
			r := newRig(t, codextest.Options{})
			r.stub.When("sandboxed", stubmodel.Call(stubmodel.FunctionCall{Namespace: "mcp__docs", Name: "lookup", Arguments: `{}`}),
				stubmodel.Text("done"))
			in := r.input("sandboxed call")
			in.Sandbox = "workspace-write"
			in.MCPServers = []adapter.MCPServer{{Name: "docs", URL: mcp.URL}}
			run(t, r, in, &recorder{})
			outs := r.stub.FunctionCallOutputs()
			if len(outs) != 1 {
				t.Fatalf("function outputs %q, want one", outs)
			}
			ran := len(mcp.Calls()) == 1 && strings.Contains(outs[0].Output, "lookup-result-42")
			if ran != tc.wantRun {
				t.Fatalf("ran = %v (server calls %d, model read %q), want %v", ran, len(mcp.Calls()), outs[0].Output, tc.wantRun)
			}
			if !tc.wantRun && (len(mcp.Calls()) != 0 || !strings.Contains(outs[0].Output, "requires approval, but approval policy is never")) {
				t.Fatalf("a refused call reached the server (%d) or the model read %q", len(mcp.Calls()), outs[0].Output)
			}
		})
	}
}
