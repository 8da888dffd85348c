package codex

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// An MCP server's header value (from a Secret) lives only in the
// app-server's memory: after a turn whose model called the server's tool
// and a resumed turn with the same server, no file under the server's
// directory (its Codex home with config, rollouts and state, the user's
// home, the threads' working directories) holds the value, and
// thread/read does not return it. The control: the server did receive the
// value, so it was in use.
func TestMCPHeaderValueWrittenNowhereUnderTheCodexHome(t *testing.T) {
	t.Parallel()
	mcp := startMCP(t)
	r := newRig(t, codextest.Options{})
	r.stub.When("home-scan call", stubmodel.Call(stubmodel.FunctionCall{Namespace: "mcp__docs", Name: "lookup", Arguments: `{"word":"x"}`}),
		stubmodel.Text("looked up"))
	in := r.input("home-scan call")
	in.MCPServers = []adapter.MCPServer{docsServer(mcp.URL)}
	first := run(t, r, in, &recorder{})
	if first.Terminal.Kind != wire.TerminalOK {
		t.Fatalf("terminal %+v", first.Terminal)
	}
	next := r.input("home-scan resume")
	next.ThreadID = first.ThreadID
	next.MCPServers = []adapter.MCPServer{docsServer(mcp.URL)}
	if res := run(t, r, next, &recorder{}); res.Terminal.Kind != wire.TerminalOK {
		t.Fatalf("resumed turn: terminal %+v", res.Terminal)
	}

	calls := mcp.Calls()
	if len(calls) == 0 || calls[0].Header.Get("X-Api-Key") != mcpHeaderValue {
		t.Fatalf("control: the MCP server saw calls %+v, want the header value", calls)
	}
	if !strings.HasPrefix(r.srv.Home, r.srv.Dir) {
		t.Fatalf("the Codex home %s is not under the scanned directory %s", r.srv.Home, r.srv.Dir)
	}
	if found := filesContaining(t, r.srv.Dir, mcpHeaderValue); len(found) > 0 {
		t.Errorf("the header value was written to %v", found)
	}
	var read json.RawMessage
	if err := r.c.Call(testCtx(t, 30e9), "thread/read", map[string]any{"threadId": first.ThreadID, "includeTurns": true}, &read); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(read), mcpHeaderValue) {
		t.Errorf("thread/read returns the header value")
	}
}
