package appserverdouble_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter/codex"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/testutil/appserverdouble"
)

// TestMain fails the package's run when a goroutine outlives its tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	token = "double-token"
	reply = "double says ok."
)

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// connect dials the double with the token and performs the handshake, as
// the dispatcher does.
func connect(t *testing.T, s *appserverdouble.Server) *appserver.Client {
	t.Helper()
	ctx := testCtx(t)
	tr, err := appserver.DialWebSocket(ctx, s.URL, appserver.WebSocketOptions{Token: token})
	if err != nil {
		t.Fatalf("DialWebSocket: %v", err)
	}
	c, err := appserver.Connect(ctx, tr, appserver.Options{})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// The handshake the manager performs (initialize, account/read,
// model/list) passes the version floor, and a thread started on one
// connection takes turns there and, resumed, on another: each turn
// completes with the reply as its one agent message and its token usage.
func TestTurnsThroughTheClient(t *testing.T) {
	s := appserverdouble.Start(t, appserverdouble.Options{Token: token, Reply: reply})
	c := connect(t, s)
	ctx := testCtx(t)
	if v := c.ServerInfo().Version; v != appserverdouble.Version {
		t.Errorf("version from the userAgent %q = %q, want %s", c.ServerInfo().UserAgent, v, appserverdouble.Version)
	}
	login, err := c.ReadLogin(ctx)
	if err != nil || login.LoggedOut() {
		t.Errorf("account/read = %+v, %v; want a server that needs no login", login, err)
	}
	if models, err := c.ListModels(ctx); err != nil || len(models) != 0 {
		t.Errorf("model/list = %v, %v; want an empty catalog", models, err)
	}

	th, err := c.StartThread(ctx, appserver.ThreadStartParams{Model: "stub-model", Cwd: "/work/a"}, appserver.ThreadOptions{})
	if err != nil {
		t.Fatalf("thread/start: %v", err)
	}
	runTurn(t, th, "first")

	other := connect(t, s)
	resumed, err := other.ResumeThread(ctx, appserver.ThreadResumeParams{ThreadID: th.ID, Cwd: "/work/b", ExcludeTurns: true}, appserver.ThreadOptions{})
	if err != nil {
		t.Fatalf("thread/resume on another connection: %v", err)
	}
	if resumed.Info.Cwd != "/work/b" || resumed.Info.Model != "stub-model" {
		t.Errorf("resume echoes cwd %q and model %q, want /work/b and the thread's stub-model", resumed.Info.Cwd, resumed.Info.Model)
	}
	runTurn(t, resumed, "second")
	if got := s.Turns(); got != 2 {
		t.Errorf("Turns() = %d, want 2", got)
	}
}

func runTurn(t *testing.T, th *appserver.Thread, prompt string) {
	t.Helper()
	ctx := testCtx(t)
	turn, err := th.StartTurn(ctx, appserver.TurnStartParams{Input: []appserver.InputItem{appserver.TextInput(prompt)}})
	if err != nil {
		t.Fatalf("turn/start %q: %v", prompt, err)
	}
	res, err := turn.Wait(ctx)
	if err != nil {
		t.Fatalf("turn %q: %v", prompt, err)
	}
	if res.Status != appserver.TurnCompleted || res.Text != reply || res.Deltas != 1 || res.Usage == nil {
		t.Errorf("turn %q: status %s, text %q, %d deltas, usage %v; want completed, %q, 1 delta, usage",
			prompt, res.Status, res.Text, res.Deltas, res.Usage, reply)
	}
	if n := len(res.Items); n != 2 || res.Items[0].Type != "userMessage" || res.Items[1].Type != "agentMessage" {
		t.Errorf("turn %q: completed items %+v, want the user message and the agent message", prompt, res.Items)
	}
}

// The dispatcher's adapter drives it as it drives Codex: a new thread, then
// the thread resumed (unsubscribed first, resumed with the turn's config,
// released after), each turn's result the reply.
func TestTheCodexAdapterDrivesIt(t *testing.T) {
	s := appserverdouble.Start(t, appserverdouble.Options{Token: token, Reply: reply})
	c := connect(t, s)
	in := adapter.TurnInput{Model: "stub-model", Cwd: "/appserverdouble/home/workspaces/ns/uid", Prompt: "hello",
		Deadline: time.Now().Add(time.Minute)}
	first := adapterTurn(t, c, in)
	in.ThreadID = first.ThreadID
	second := adapterTurn(t, c, in)
	if second.ThreadID != first.ThreadID {
		t.Errorf("the second turn ran on thread %s, want the first turn's %s", second.ThreadID, first.ThreadID)
	}
}

func adapterTurn(t *testing.T, c *appserver.Client, in adapter.TurnInput) *wire.TurnResult {
	t.Helper()
	ctx := testCtx(t)
	var events []string
	turn, err := codex.Start(ctx, c, in, adapter.Hooks{Emit: func(ev adapter.Event) { events = append(events, ev.Type) }})
	if err != nil {
		t.Fatalf("codex.Start (thread %q): %v", in.ThreadID, err)
	}
	res, err := turn.Wait(ctx)
	if err != nil {
		t.Fatalf("Wait (thread %q): %v", in.ThreadID, err)
	}
	if res.Terminal.Kind != wire.TerminalOK || !slices.Equal(res.AssistantTexts, []string{reply}) || res.Usage.Total == 0 {
		t.Errorf("result %+v; want ok with the text %q and usage", res, reply)
	}
	if !slices.Contains(events, wire.EventPartial) {
		t.Errorf("events %v: want the reply's partial", events)
	}
	return res
}

// What it refuses, as Codex does: an upgrade without the token (the probes
// need none), a thread it does not have, a method it does not serve.
func TestRefusals(t *testing.T) {
	s := appserverdouble.Start(t, appserverdouble.Options{Token: token})
	ctx := testCtx(t)
	if _, err := appserver.DialWebSocket(ctx, s.URL, appserver.WebSocketOptions{Token: "wrong"}); !errors.Is(err, appserver.ErrUnauthorized) {
		t.Errorf("a wrong token: %v, want ErrUnauthorized", err)
	}
	resp, err := http.Get("http" + strings.TrimPrefix(s.URL, "ws") + "/readyz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("GET /readyz without a token: %v %v, want 200", resp, err)
	}
	if resp != nil {
		_ = resp.Body.Close()
	}

	c := connect(t, s)
	var rpc *appserver.RPCError
	_, err = c.ResumeThread(ctx, appserver.ThreadResumeParams{ThreadID: "gone"}, appserver.ThreadOptions{})
	if !errors.As(err, &rpc) || !strings.HasPrefix(rpc.Message, "no rollout found") {
		t.Errorf("resume of an unknown thread: %v, want Codex's 'no rollout found'", err)
	}
	if err := c.Call(ctx, "thread/fork", map[string]any{}, nil); !errors.As(err, &rpc) || rpc.Code != -32601 {
		t.Errorf("thread/fork: %v, want the JSON-RPC error -32601", err)
	}
}
