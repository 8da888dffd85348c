package appserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/openclaw/harness-operator/internal/appserver"
)

// The real Codex cannot be made to misbehave, so these tests play the
// app-server with the scripted peer (memTransport), over the package's real
// transports where the transport is what is tested.

// logLines is a logger that keeps its records for the test to read.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func newLogLines() (*logLines, logr.Logger) {
	l := &logLines{}
	return l, funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, args)
	}, funcr.Options{})
}

// with returns the records that contain substr.
func (l *logLines) with(substr string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if strings.Contains(line, substr) {
			out = append(out, line)
		}
	}
	return out
}

// delta is an agent-message delta notification of a turn.
func delta(threadID, turnID, text string) string {
	return fmt.Sprintf(`{"method":"item/agentMessage/delta","params":{"threadId":%q,"turnId":%q,"itemId":"m1","delta":%q}}`, threadID, turnID, text)
}

func completed(threadID, turnID string) string {
	return fmt.Sprintf(`{"method":"turn/completed","params":{"threadId":%q,"turn":{"id":%q,"status":"completed","items":[]}}}`, threadID, turnID)
}

func toolCall(id int, threadID, turnID, tool string) string {
	return fmt.Sprintf(`{"id":%d,"method":"item/tool/call","params":{"threadId":%q,"turnId":%q,"callId":"c%d","namespace":null,"tool":%q,"arguments":{}}}`,
		id, threadID, turnID, id, tool)
}

// describe prints an event's method and params.
func describe(ev appserver.Event) string {
	if ev == nil {
		return "no event"
	}
	return ev.Meta().Method + " " + string(ev.Meta().Params)
}

// next is Turn.Next bounded for a test step.
func next(t *testing.T, turn *appserver.Turn) (appserver.Event, error) {
	t.Helper()
	return turn.Next(testCtx(t, 5*time.Second))
}

// answered is the peer's view of the client's answer to a server request.
type answered struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// recvRaw reads the next message the client sent, with its error member.
func (m *memTransport) recvRaw(t *testing.T) answered {
	t.Helper()
	select {
	case b := <-m.toPeer:
		var a answered
		if err := json.Unmarshal(b, &a); err != nil {
			t.Fatalf("client sent non-JSON %q", b)
		}
		return a
	case <-time.After(5 * time.Second):
		t.Fatal("client sent nothing")
		return answered{}
	}
}

// bridge connects the far end of a real transport to a scripted peer, so
// the peer's script runs unchanged over stdio or WebSocket.
func bridge(t *testing.T, end appserver.Transport) *memTransport {
	t.Helper()
	m := newMem()
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			b, err := end.ReadMessage()
			if err != nil {
				return
			}
			select {
			case m.toPeer <- b:
			case <-m.closed:
				return
			}
		}
	})
	wg.Go(func() {
		for {
			select {
			case b := <-m.toClient:
				if end.WriteMessage(context.Background(), b) != nil {
					return
				}
			case <-m.closed:
				return
			}
		}
	})
	t.Cleanup(func() {
		_ = m.Close()
		_ = end.Close()
		wg.Wait()
	})
	return m
}

// wsEnd is the server's end of a WebSocket connection as a Transport.
type wsEnd struct{ c *websocket.Conn }

func (w wsEnd) ReadMessage() ([]byte, error) {
	_, b, err := w.c.Read(context.Background())
	return b, err
}

func (w wsEnd) WriteMessage(ctx context.Context, b []byte) error {
	return w.c.Write(ctx, websocket.MessageText, b)
}

func (w wsEnd) Close() error { return w.c.CloseNow() }

// overLimitPeer is a client transport, the scripted peer at its far end,
// and flood, which sends one message larger than any limit (endless where
// the transport allows) and returns once the client has closed the
// connection.
type overLimitPeer struct {
	client appserver.Transport
	peer   *memTransport
	flood  func() error
}

func stdioPeer(t *testing.T) overLimitPeer {
	outR, outW := io.Pipe() // the server's stdout
	inR, inW := io.Pipe()   // the server's stdin
	client := appserver.NewStdioTransport(outR, inW)
	peer := bridge(t, appserver.NewStdioTransport(inR, outW))
	return overLimitPeer{client: client, peer: peer, flood: func() error {
		chunk := []byte(strings.Repeat("x", 32<<10)) // a line that never ends
		for {
			if _, err := outW.Write(chunk); err != nil {
				return err
			}
		}
	}}
}

func webSocketPeer(t *testing.T) overLimitPeer {
	conns := make(chan *websocket.Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			t.Error(err)
			return
		}
		conns <- c
	}))
	t.Cleanup(srv.Close)
	client, err := appserver.DialWebSocket(testCtx(t, 10*time.Second), "ws"+strings.TrimPrefix(srv.URL, "http"), appserver.WebSocketOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := <-conns
	c.SetReadLimit(-1)
	peer := bridge(t, wsEnd{c})
	return overLimitPeer{client: client, peer: peer, flood: func() error {
		// One message that never ends, in fragments.
		w, err := c.Writer(context.Background(), websocket.MessageText)
		if err != nil {
			return err
		}
		chunk := []byte(strings.Repeat("x", 32<<10))
		for {
			if _, err := w.Write(chunk); err != nil {
				return err
			}
		}
	}}
}

func memPeer(*testing.T) overLimitPeer {
	m := newMem()
	return overLimitPeer{client: m, peer: m, flood: func() error {
		m.send(`{"method":"item/agentMessage/delta","params":{"delta":"` + strings.Repeat("x", 4096) + `"}}`)
		<-m.closed
		return io.ErrClosedPipe
	}}
}

// A message over the read limit ends the connection with an error naming
// the limit, over every transport (a caller's own Transport included), and
// is never read whole: an endless stdio line or WebSocket message ends the
// connection as soon as the limit is passed. The running turn sees the
// connection lost, as after any drop.
func TestMessageOverReadLimitEndsTheConnection(t *testing.T) {
	t.Parallel()
	for name, setup := range map[string]func(*testing.T) overLimitPeer{
		"stdio": stdioPeer, "websocket": webSocketPeer, "own transport": memPeer,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := setup(t)
			c := connectPeer(t, p.client, p.peer, appserver.Options{MaxMessageBytes: 1024})
			turn := threadFor(t, c, p.peer).AttachTurn("turn_1")
			flooded := make(chan error, 1)
			go func() { flooded <- p.flood() }()
			select {
			case <-c.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the connection is still open while the server sends a message over the read limit")
			}
			var tl *appserver.MessageTooLargeError
			if !errors.As(c.Err(), &tl) || tl.Limit != 1024 || tl.Size <= 1024 ||
				!strings.Contains(c.Err().Error(), "read limit of 1024 bytes (Options.MaxMessageBytes)") {
				t.Fatalf("Err() = %v; want a MessageTooLargeError naming the limit of 1024 bytes and the size", c.Err())
			}
			_, err := next(t, turn)
			var lost *appserver.ConnectionLostError
			if !errors.As(err, &lost) || !lost.AfterTurnStarted || !errors.As(err, &tl) {
				t.Fatalf("the running turn got %v; want a ConnectionLostError caused by the message over the limit", err)
			}
			select {
			case <-flooded: // the client closed its end: the sender's write failed
			case <-time.After(10 * time.Second):
				t.Fatal("the client did not close the connection after the message over the limit")
			}
		})
	}
}

// Notifications for a thread the client has not opened, or has released,
// are dropped, not buffered: resuming that thread later does not bring them
// back. They are counted, and logged once a minute at most.
func TestNotificationsOfUnopenedThreadsAreDroppedAndCounted(t *testing.T) {
	t.Parallel()
	logs, logger := newLogLines()
	c, m := connectMem(t, appserver.Options{Logger: logger})
	th := threadFor(t, c, m)
	// marker proves the read loop got past what was sent before it: it
	// reads in order.
	marker := func(turn *appserver.Turn) {
		t.Helper()
		m.send(delta(turn.ThreadID, turn.ID, "marker"))
		if ev, err := next(t, turn); err != nil || ev.Meta().Method != "item/agentMessage/delta" {
			t.Fatalf("marker: %s %v", describe(ev), err)
		}
	}
	for i := range 100 {
		m.send(delta("thr_other", "turn_x", fmt.Sprint(i)))
	}
	marker(th.AttachTurn("turn_0"))

	resumed := make(chan *appserver.Thread, 1)
	go func() {
		other, err := c.ResumeThread(context.Background(), appserver.ThreadResumeParams{ThreadID: "thr_other"}, appserver.ThreadOptions{})
		if err != nil {
			t.Error(err)
		}
		resumed <- other
	}()
	req := m.recv(t)
	m.send(`{"id":` + string(req.ID) + `,"result":{"thread":{"id":"thr_other"},"model":"m"}}`)
	other := <-resumed
	th.Release()
	m.send(delta("thr_1", "turn_1", "after release"))
	marker(other.AttachTurn("turn_y"))

	for _, tc := range []struct {
		th   *appserver.Thread
		turn string
	}{{other, "turn_x"}, {th, "turn_1"}} {
		turn := tc.th.AttachTurn(tc.turn)
		m.send(completed(tc.th.ID, tc.turn))
		if ev, err := next(t, turn); err != nil || ev.Meta().Method != "turn/completed" {
			t.Fatalf("first event of %s/%s once opened: %s %v; want turn/completed (the earlier deltas dropped)", tc.th.ID, tc.turn, describe(ev), err)
		}
	}
	if got := c.Stats().UnknownThreadNotifications; got != 101 {
		t.Fatalf("Stats().UnknownThreadNotifications = %d, want 101", got)
	}
	if got := logs.with("dropped a notification"); len(got) != 1 {
		t.Fatalf("%d log records of dropped notifications, want 1 (rate-limited): %q", len(got), got)
	}
}

// A turn whose consumer leaves more than the limit unread fails alone: its
// consumer gets a TurnStreamError naming the limit, the client interrupts
// the turn, and other turns and the connection go on. Only unread events
// count: a consumer that keeps up never trips it.
func TestTurnFloodingItsConsumerFailsAloneAndIsInterrupted(t *testing.T) {
	t.Parallel()
	const perEvent = int64(len(`{"threadId":"thr_1","turnId":"turn_1","itemId":"m1","delta":"0123456789"}`))
	for name, tc := range map[string]struct {
		opts appserver.Options
		want string
	}{
		"events": {appserver.Options{MaxUnreadEvents: 4}, "more than 4 notifications its consumer had not read (Options.MaxUnreadEvents)"},
		"bytes": {appserver.Options{MaxUnreadBytes: 4*perEvent + perEvent/2},
			fmt.Sprintf("more than %d bytes of notifications its consumer had not read (Options.MaxUnreadBytes)", 4*perEvent+perEvent/2)},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, m := connectMem(t, tc.opts)
			th := threadFor(t, c, m)
			slow, other := th.AttachTurn("turn_1"), th.AttachTurn("turn_2")
			for range 3 { // 4 at a time fit, however many in all
				for range 4 {
					m.send(delta("thr_1", "turn_1", "0123456789"))
				}
				for range 4 {
					if _, err := next(t, slow); err != nil {
						t.Fatalf("a consumer that keeps up: %v", err)
					}
				}
			}
			for range 5 {
				m.send(delta("thr_1", "turn_1", "0123456789"))
			}
			if r := m.recv(t); r.Method != "turn/interrupt" || !strings.Contains(string(r.Params), `"turnId":"turn_1"`) {
				t.Fatalf("after the flood the client sent %s %s; want turn/interrupt of turn_1", r.Method, r.Params)
			}
			m.send(delta("thr_1", "turn_2", "still here"))
			if ev, err := next(t, other); err != nil || ev.Meta().Method != "item/agentMessage/delta" || !strings.Contains(string(ev.Meta().Params), "still here") {
				t.Fatalf("another turn on the connection: %s %v", describe(ev), err)
			}
			_, err := next(t, slow)
			var se *appserver.TurnStreamError
			if !errors.As(err, &se) || se.TurnID != "turn_1" || se.ThreadID != "thr_1" || !strings.Contains(err.Error(), tc.want) ||
				!appserver.MayHaveSideEffects(err) {
				t.Fatalf("the flooded turn's Next: %v; want a TurnStreamError for thr_1/turn_1 saying %q", err, tc.want)
			}
			if c.Err() != nil {
				t.Fatalf("the connection ended: %v", c.Err())
			}
		})
	}
}

// Beyond MaxServerRequests handled at once, a server request is answered at
// once with an error naming the limit, recorded as declined on its turn and
// counted; requests are served again once handlers have returned.
func TestServerRequestsOverTheLimitAreRefused(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan string, 4)
	c, m := connectMem(t, appserver.Options{MaxServerRequests: 2, Handlers: appserver.Handlers{
		ToolCall: func(ctx context.Context, call appserver.ToolCall) appserver.ToolResult {
			started <- call.CallID
			select {
			case <-release:
			case <-ctx.Done(): // the client closed (a failed test)
			}
			return appserver.ToolText("ok", true)
		},
	}})
	turn := threadFor(t, c, m).AttachTurn("turn_1")
	m.send(toolCall(101, "thr_1", "turn_1", "slow"))
	m.send(toolCall(102, "thr_1", "turn_1", "slow"))
	<-started
	<-started
	m.send(toolCall(103, "thr_1", "turn_1", "slow"))
	a := m.recvRaw(t)
	if string(a.ID) != "103" || a.Error == nil || a.Error.Code != -32000 ||
		!strings.Contains(a.Error.Message, "handling 2 requests of this app-server already (its limit, Options.MaxServerRequests)") {
		t.Fatalf("answer %s error %+v; want request 103 refused with an error naming the limit", a.ID, a.Error)
	}
	if s := c.Stats(); s.RefusedServerRequests != 1 || s.ServerRequests != 2 {
		t.Fatalf("Stats() = %+v, want 1 refused and 2 being handled", s)
	}
	ev, err := next(t, turn)
	if h, ok := ev.(appserver.ServerRequestHandled); err != nil || !ok || !h.Declined || h.Kind != appserver.KindToolCall {
		t.Fatalf("the turn's first event %s %v; want the refused tool call recorded as declined", describe(ev), err)
	}

	close(release)
	for range 2 {
		if a := m.recvRaw(t); a.Error != nil || !strings.Contains(string(a.Result), `"success":true`) {
			t.Fatalf("a handled request's answer: %s %+v", a.Result, a.Error)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for c.Stats().ServerRequests != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("Stats().ServerRequests = %d after the handlers returned", c.Stats().ServerRequests)
		}
		time.Sleep(5 * time.Millisecond)
	}
	m.send(toolCall(104, "thr_1", "turn_1", "slow"))
	if a := m.recvRaw(t); string(a.ID) != "104" || a.Error != nil {
		t.Fatalf("a request after the handlers returned: id %s error %+v; want it handled", a.ID, a.Error)
	}
}

// A panicking server-request handler does not crash the process: the
// request is answered with an error, the panic is logged with its stack,
// and only the turn concerned fails (it is interrupted); the connection and
// the thread's other turns go on.
func TestPanickingHandlerFailsOnlyItsTurn(t *testing.T) {
	t.Parallel()
	logs, logger := newLogLines()
	c, m := connectMem(t, appserver.Options{Logger: logger, Handlers: appserver.Handlers{
		ToolCall: func(ctx context.Context, call appserver.ToolCall) appserver.ToolResult {
			if call.Tool == "boom" {
				panic("tool handler exploded")
			}
			return appserver.ToolText("ok", true)
		},
	}})
	th := threadFor(t, c, m)
	failing, other := th.AttachTurn("turn_1"), th.AttachTurn("turn_2")
	m.send(toolCall(201, "thr_1", "turn_1", "boom"))
	var refused, interrupted bool
	for range 2 { // the answer and the interrupt, in either order
		a := m.recvRaw(t)
		switch {
		case string(a.ID) == "201" && a.Error != nil && a.Error.Code == -32603:
			refused = true
		case a.Method == "turn/interrupt" && strings.Contains(string(a.Params), `"turnId":"turn_1"`):
			interrupted = true
			m.send(`{"id":` + string(a.ID) + `,"result":{}}`)
		default:
			t.Fatalf("unexpected message %+v", a)
		}
	}
	if !refused || !interrupted {
		t.Fatalf("answered with an error: %v, turn interrupted: %v", refused, interrupted)
	}
	_, err := next(t, failing)
	var se *appserver.TurnStreamError
	var pe *appserver.PanicError
	if !errors.As(err, &se) || se.TurnID != "turn_1" || !errors.As(err, &pe) || pe.Value != "tool handler exploded" {
		t.Fatalf("the turn's Next: %v; want a TurnStreamError caused by the handler's panic", err)
	}
	if rec := logs.with("tool handler exploded"); len(rec) == 0 || !strings.Contains(rec[0], "TestPanickingHandlerFailsOnlyItsTurn") {
		t.Fatalf("log records of the panic %q; want one with the panicking stack", rec)
	}

	m.send(toolCall(202, "thr_1", "turn_2", "fine"))
	if a := m.recvRaw(t); string(a.ID) != "202" || a.Error != nil {
		t.Fatalf("another turn's request: id %s error %+v", a.ID, a.Error)
	}
	if ev, err := next(t, other); err != nil || ev.Meta().Method != "item/tool/call" || !strings.Contains(string(ev.Meta().Params), `"callId":"c202"`) {
		t.Fatalf("another turn's event %s %v", describe(ev), err)
	}
	if c.Err() != nil {
		t.Fatalf("the connection ended: %v", c.Err())
	}
}

// panickyTransport is a caller's Transport that panics on a given message.
type panickyTransport struct{ *memTransport }

func (p panickyTransport) ReadMessage() ([]byte, error) {
	b, err := p.memTransport.ReadMessage()
	if string(b) == "explode" {
		panic("transport exploded")
	}
	return b, err
}

// A panic in the read loop (here in a caller's Transport) ends that
// connection only: its turns see the connection lost with the panic as
// cause, the panic is logged with its stack, and other connections go on.
func TestPanicInReadLoopEndsOnlyItsConnection(t *testing.T) {
	t.Parallel()
	logs, logger := newLogLines()
	m := newMem()
	c := connectPeer(t, panickyTransport{m}, m, appserver.Options{Logger: logger})
	turn := threadFor(t, c, m).AttachTurn("turn_1")
	healthy, hm := connectMem(t, appserver.Options{})

	m.send("explode")
	_, err := next(t, turn)
	var lost *appserver.ConnectionLostError
	var pe *appserver.PanicError
	if !errors.As(err, &lost) || !errors.As(err, &pe) || pe.Value != "transport exploded" {
		t.Fatalf("the turn's Next: %v; want the connection lost with the panic as cause", err)
	}
	if rec := logs.with("transport exploded"); len(rec) == 0 || !strings.Contains(rec[0], "panickyTransport") {
		t.Fatalf("log records of the panic %q; want one with the panicking stack", rec)
	}
	done := make(chan error, 1)
	go func() { done <- healthy.Call(context.Background(), "thread/loaded/list", nil, nil) }()
	req := hm.recv(t)
	hm.send(`{"id":` + string(req.ID) + `,"result":{"data":[]}}`)
	if err := <-done; err != nil {
		t.Fatalf("another connection: %v", err)
	}
}
