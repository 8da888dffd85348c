package codex

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// These tests run the real codex app-server ($CODEX_BIN, required: without
// it they fail, never skip) against the loopback stub model.

func testCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// rig is a stub model, a real codex app-server wired to it and a client.
type rig struct {
	stub *stubmodel.Server
	srv  *codextest.Server
	c    *appserver.Client
}

func newRig(t *testing.T, opts codextest.Options) *rig {
	t.Helper()
	codextest.Bin(t) // fail (not skip) without CODEX_BIN
	stub := stubmodel.Start(t)
	opts.ProviderURL = stub.BaseURL()
	r := &rig{stub: stub, srv: codextest.Start(t, opts)}
	r.c = r.connect(t)
	return r
}

// connect opens a new connection (stdio: only once; WebSocket: any number).
func (r *rig) connect(t *testing.T) *appserver.Client {
	t.Helper()
	return r.connectVia(t, nil)
}

// connectVia is connect with the transport wrapped by wrap (nil: as is).
func (r *rig) connectVia(t *testing.T, wrap func(appserver.Transport) appserver.Transport) *appserver.Client {
	t.Helper()
	ctx := testCtx(t, 30*time.Second)
	var tr appserver.Transport
	if r.srv.URL != "" {
		var err error
		tr, err = appserver.DialWebSocket(ctx, r.srv.URL, appserver.WebSocketOptions{})
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
	} else {
		tr = appserver.NewStdioTransport(r.srv.Stdio())
	}
	if wrap != nil {
		tr = wrap(tr)
	}
	c, err := appserver.Connect(ctx, tr, appserver.Options{})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// input is a plain turn for the stub model in a per-session directory under
// the server's native home.
func (r *rig) input(prompt string) adapter.TurnInput {
	return adapter.TurnInput{
		Model:   codextest.StubModel,
		Cwd:     filepath.Join(r.srv.Home, "sessions", "work", "session-1"),
		Sandbox: string(appserver.SandboxDangerFullAccess),
		Prompt:  prompt,
	}
}

// recorder collects the events a turn emits.
type recorder struct {
	mu     sync.Mutex
	events []adapter.Event
	// answer answers host tool calls (nil: AnswerTool is nil).
	answer func(ctx context.Context, call wire.ToolCall) (wire.ToolAnswer, error)
	// approve and reply answer approval and user-input requests (nil: the
	// hook is nil).
	approve func(ctx context.Context, req wire.ApprovalRequest) (wire.ApprovalDecision, error)
	reply   func(ctx context.Context, req wire.UserInputRequest) (map[string]wire.UserInputValue, error)
	onEmit  func(adapter.Event)
}

func (rec *recorder) hooks() adapter.Hooks {
	h := adapter.Hooks{Emit: func(ev adapter.Event) {
		rec.mu.Lock()
		rec.events = append(rec.events, ev)
		f := rec.onEmit
		rec.mu.Unlock()
		if f != nil {
			f(ev)
		}
	}}
	if rec.answer != nil {
		h.AnswerTool = rec.answer
	}
	if rec.approve != nil {
		h.AnswerApproval = rec.approve
	}
	if rec.reply != nil {
		h.AnswerUserInput = rec.reply
	}
	return h
}

func (rec *recorder) all() []adapter.Event {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.events)
}

func (rec *recorder) partialText() string {
	var b strings.Builder
	for _, ev := range rec.all() {
		if ev.Type == wire.EventPartial {
			b.WriteString(ev.Partial.Delta)
		}
	}
	return b.String()
}

func (rec *recorder) deltas() []string {
	var out []string
	for _, ev := range rec.all() {
		if ev.Type == wire.EventPartial {
			out = append(out, ev.Partial.Delta)
		}
	}
	return out
}

func (rec *recorder) terminals() []wire.ToolTerminal {
	var out []wire.ToolTerminal
	for _, ev := range rec.all() {
		if ev.Type == wire.EventToolTerminal {
			out = append(out, *ev.ToolTerminal)
		}
	}
	return out
}

func (rec *recorder) toolCalls() []wire.ToolCall {
	var out []wire.ToolCall
	for _, ev := range rec.all() {
		if ev.Type == wire.EventToolCall {
			out = append(out, *ev.ToolCall)
		}
	}
	return out
}

func (rec *recorder) transcript() []wire.TranscriptRecord {
	var out []wire.TranscriptRecord
	for _, ev := range rec.all() {
		if ev.Type == wire.EventTranscript {
			out = append(out, *ev.Transcript)
		}
	}
	return out
}

func (rec *recorder) agent(stream string) []wire.AgentEvent {
	var out []wire.AgentEvent
	for _, ev := range rec.all() {
		if ev.Type == wire.EventAgent && ev.Agent.Stream == stream {
			out = append(out, *ev.Agent)
		}
	}
	return out
}

// types lists the event types in order, with consecutive repeats collapsed.
func (rec *recorder) types() []string {
	var out []string
	for _, ev := range rec.all() {
		s := ev.Type
		if ev.Type == wire.EventAgent {
			s += ":" + ev.Agent.Stream + "/" + ev.Agent.Phase
		}
		if ev.Type == wire.EventTranscript {
			s += ":" + ev.Transcript.Type + "/" + ev.Transcript.Role
		}
		if len(out) == 0 || out[len(out)-1] != s {
			out = append(out, s)
		}
	}
	return out
}

// run starts a turn and waits for its result, failing the test on an error.
func run(t *testing.T, r *rig, in adapter.TurnInput, rec *recorder) *wire.TurnResult {
	t.Helper()
	ctx := testCtx(t, 60*time.Second)
	turn, err := Start(ctx, r.c, in, rec.hooks())
	if err != nil {
		t.Fatalf("start %q: %v", in.Prompt, err)
	}
	res, err := turn.Wait(ctx)
	if err != nil {
		t.Fatalf("wait %q: %v", in.Prompt, err)
	}
	return res
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func jsonEq(a, b json.RawMessage) bool { return sameJSON(a, b) }

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// onePixelPNG is a 1×1 PNG.
const onePixelPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
