package appserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// testCtx is a context bounded for one test step.
func testCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// rig is a stub model plus a real codex app-server wired to it.
type rig struct {
	stub *stubmodel.Server
	srv  *codextest.Server
}

func startRig(t *testing.T, opts codextest.Options) *rig {
	t.Helper()
	stub := stubmodel.Start(t)
	opts.ProviderURL = stub.BaseURL()
	return &rig{stub: stub, srv: codextest.Start(t, opts)}
}

// connectStdio performs the handshake over the server's stdio.
func connectStdio(t *testing.T, srv *codextest.Server, opts appserver.Options) *appserver.Client {
	t.Helper()
	out, in := srv.Stdio()
	c, err := appserver.Connect(testCtx(t, 30*time.Second), appserver.NewStdioTransport(out, in), opts)
	if err != nil {
		t.Fatalf("Connect over stdio: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// connectWS dials the server's WebSocket listener and performs the handshake.
func connectWS(t *testing.T, srv *codextest.Server, token string, opts appserver.Options) *appserver.Client {
	t.Helper()
	ctx := testCtx(t, 30*time.Second)
	tr, err := appserver.DialWebSocket(ctx, srv.URL, appserver.WebSocketOptions{Token: token})
	if err != nil {
		t.Fatalf("DialWebSocket: %v", err)
	}
	c, err := appserver.Connect(ctx, tr, opts)
	if err != nil {
		t.Fatalf("Connect over WebSocket: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func startThread(t *testing.T, c *appserver.Client, srv *codextest.Server, p appserver.ThreadStartParams, h *appserver.Handlers) *appserver.Thread {
	t.Helper()
	if p.Model == "" {
		p.Model = codextest.StubModel
	}
	if p.Cwd == "" {
		p.Cwd = srv.Workdir
	}
	if p.ApprovalPolicy == "" {
		p.ApprovalPolicy = appserver.ApprovalNever
	}
	if p.Sandbox == "" {
		p.Sandbox = appserver.SandboxReadOnly
	}
	th, err := c.StartThread(testCtx(t, 30*time.Second), p, appserver.ThreadOptions{Handlers: h})
	if err != nil {
		t.Fatalf("thread/start: %v", err)
	}
	return th
}

// runTurn starts a text turn and waits for it to complete.
func runTurn(t *testing.T, th *appserver.Thread, text string) *appserver.TurnResult {
	t.Helper()
	ctx := testCtx(t, 60*time.Second)
	turn, err := th.StartTurn(ctx, appserver.TurnStartParams{Input: []appserver.InputItem{appserver.TextInput(text)}})
	if err != nil {
		t.Fatalf("turn/start %q: %v", text, err)
	}
	res, err := turn.Wait(ctx)
	if err != nil {
		t.Fatalf("turn %q: %v", text, err)
	}
	return res
}
