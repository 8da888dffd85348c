package appserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/testutil/goroutines"
)

// memTransport is an in-memory Transport whose other end is a scripted
// peer. It exercises the client's own mechanics (timeouts, connection loss,
// id collisions) that the real server cannot be made to show on demand; the
// protocol itself is tested against the real codex app-server.
type memTransport struct {
	toClient chan []byte
	toPeer   chan []byte
	closed   chan struct{}
	once     sync.Once
}

func newMem() *memTransport {
	return &memTransport{toClient: make(chan []byte, 64), toPeer: make(chan []byte, 64), closed: make(chan struct{})}
}

func (m *memTransport) ReadMessage() ([]byte, error) {
	select {
	case b := <-m.toClient:
		return b, nil
	case <-m.closed:
		return nil, io.EOF
	}
}

func (m *memTransport) WriteMessage(ctx context.Context, b []byte) error {
	select {
	case <-m.closed:
		return io.ErrClosedPipe
	default:
	}
	select {
	case m.toPeer <- b:
		return nil
	case <-m.closed:
		return io.ErrClosedPipe
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *memTransport) Close() error {
	m.once.Do(func() { close(m.closed) })
	return nil
}

type peerMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
}

// recv reads the next message the client sent.
func (m *memTransport) recv(t *testing.T) peerMsg {
	t.Helper()
	select {
	case b := <-m.toPeer:
		var p peerMsg
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatalf("client sent non-JSON %q", b)
		}
		return p
	case <-time.After(5 * time.Second):
		t.Fatal("client sent nothing")
		return peerMsg{}
	}
}

func (m *memTransport) send(v string) { m.toClient <- []byte(v) }

// handshake answers initialize like codex 0.169.0 would.
func (m *memTransport) handshake(t *testing.T) {
	t.Helper()
	init := m.recv(t)
	if init.Method != "initialize" {
		t.Fatalf("first message %q", init.Method)
	}
	var p struct {
		ClientInfo struct {
			Name string `json:"name"`
		} `json:"clientInfo"`
		Capabilities struct {
			ExperimentalAPI bool `json:"experimentalApi"`
		} `json:"capabilities"`
	}
	_ = json.Unmarshal(init.Params, &p)
	if !p.Capabilities.ExperimentalAPI || p.ClientInfo.Name == "" {
		t.Errorf("initialize params %s", init.Params)
	}
	m.send(`{"id":` + string(init.ID) + `,"result":{"userAgent":"` + p.ClientInfo.Name + `/0.169.0 (Debian 12.0.0; x86_64) xterm (x; 1)","codexHome":"/h","platformFamily":"unix","platformOs":"linux"}}`)
	if n := m.recv(t); n.Method != "initialized" || n.ID != nil {
		t.Fatalf("after initialize the client sent %+v", n)
	}
}

func connectMem(t *testing.T, opts appserver.Options) (*appserver.Client, *memTransport) {
	t.Helper()
	m := newMem()
	return connectPeer(t, m, m, opts), m
}

// connectPeer connects a client over tr to the scripted peer m (tr is m
// itself, or a real transport whose far end is bridged to m).
func connectPeer(t *testing.T, tr appserver.Transport, m *memTransport, opts appserver.Options) *appserver.Client {
	t.Helper()
	type res struct {
		c   *appserver.Client
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := appserver.Connect(context.Background(), tr, opts)
		ch <- res{c, err}
	}()
	m.handshake(t)
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() { _ = r.c.Close() })
	return r.c
}

func TestConnectRefusesNameWithSlash(t *testing.T) {
	t.Parallel()
	_, err := appserver.Connect(context.Background(), newMem(), appserver.Options{ClientName: "open/claw"})
	if err == nil {
		t.Fatal("a clientInfo.name with '/' was accepted")
	}
}

// expiringCtx is a context whose deadline passes when the test calls
// expire, not after a wall-clock delay: a request can then time out only
// after the peer has received it, however slow the machine is.
type expiringCtx struct {
	context.Context // Background: no values, never done by itself
	deadline        time.Time
	done            chan struct{}
	once            sync.Once
}

func newExpiringCtx() *expiringCtx {
	return &expiringCtx{Context: context.Background(), deadline: time.Now().Add(time.Hour), done: make(chan struct{})}
}

func (e *expiringCtx) Deadline() (time.Time, bool) { return e.deadline, true }
func (e *expiringCtx) Done() <-chan struct{}       { return e.done }
func (e *expiringCtx) expire()                     { e.once.Do(func() { close(e.done) }) }

func (e *expiringCtx) Err() error {
	select {
	case <-e.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

func TestRequestTimeoutKeepsClientUsable(t *testing.T) {
	t.Parallel()
	c, m := connectMem(t, appserver.Options{})
	ctx := newExpiringCtx()
	errc := make(chan error, 1)
	go func() { errc <- c.Call(ctx, "thread/read", map[string]any{"threadId": "t"}, nil) }()
	late := m.recv(t) // the request reached the peer, which does not answer in time
	ctx.expire()
	err := <-errc
	var te *appserver.TimeoutError
	if !errors.As(err, &te) || te.Method != "thread/read" || !errors.Is(err, context.DeadlineExceeded) || appserver.MayHaveSideEffects(err) {
		t.Fatalf("err = %v, want a TimeoutError for thread/read without side effects", err)
	}
	m.send(`{"id":` + string(late.ID) + `,"result":{}}`) // a late answer is dropped

	done := make(chan error, 1)
	go func() { done <- c.Call(context.Background(), "thread/loaded/list", nil, nil) }()
	req := m.recv(t)
	m.send(`{"id":` + string(req.ID) + `,"result":{"data":[]}}`)
	if err := <-done; err != nil {
		t.Fatalf("client unusable after a timeout: %v", err)
	}

	// A turn/start that times out may have started the turn.
	th := threadFor(t, c, m)
	ctx2 := newExpiringCtx()
	go func() {
		_, err := th.StartTurn(ctx2, appserver.TurnStartParams{Input: []appserver.InputItem{appserver.TextInput("x")}})
		errc <- err
	}()
	if r := m.recv(t); r.Method != "turn/start" {
		t.Fatalf("sent %q", r.Method)
	}
	ctx2.expire()
	if err := <-errc; !errors.As(err, &te) || te.Method != "turn/start" || !appserver.MayHaveSideEffects(err) {
		t.Fatalf("timed-out turn/start: %v; want a TimeoutError with MayHaveSideEffects", err)
	}
}

// threadFor starts a thread against the scripted peer.
func threadFor(t *testing.T, c *appserver.Client, m *memTransport) *appserver.Thread {
	t.Helper()
	ch := make(chan *appserver.Thread, 1)
	go func() {
		th, err := c.StartThread(context.Background(), appserver.ThreadStartParams{Model: "m"}, appserver.ThreadOptions{})
		if err != nil {
			t.Error(err)
		}
		ch <- th
	}()
	req := m.recv(t)
	if req.Method != "thread/start" {
		t.Fatalf("sent %q", req.Method)
	}
	m.send(`{"id":` + string(req.ID) + `,"result":{"thread":{"id":"thr_1"},"model":"m"}}`)
	return <-ch
}

func TestConnectionLossSaysWhetherATurnMayHaveStarted(t *testing.T) {
	t.Parallel()
	t.Run("during turn/start", func(t *testing.T) {
		c, m := connectMem(t, appserver.Options{})
		th := threadFor(t, c, m)
		errc := make(chan error, 1)
		go func() {
			_, err := th.StartTurn(context.Background(), appserver.TurnStartParams{Input: []appserver.InputItem{appserver.TextInput("x")}})
			errc <- err
		}()
		if r := m.recv(t); r.Method != "turn/start" {
			t.Fatalf("sent %q", r.Method)
		}
		_ = m.Close() // the server goes away before answering
		err := <-errc
		var cl *appserver.ConnectionLostError
		if !errors.As(err, &cl) || !cl.AfterTurnStarted || cl.Method != "turn/start" || cl.ThreadID != "thr_1" {
			t.Fatalf("err = %#v, want ConnectionLostError{turn/start, AfterTurnStarted}", err)
		}
		// Nothing can be sent any more, and nothing was started by trying.
		_, err = c.StartThread(context.Background(), appserver.ThreadStartParams{}, appserver.ThreadOptions{})
		if !errors.As(err, &cl) || cl.AfterTurnStarted {
			t.Fatalf("after loss: %v, want ConnectionLostError without side effects", err)
		}
		<-c.Done()
	})
	t.Run("during a running turn", func(t *testing.T) {
		c, m := connectMem(t, appserver.Options{})
		th := threadFor(t, c, m)
		turnc := make(chan *appserver.Turn, 1)
		go func() {
			turn, err := th.StartTurn(context.Background(), appserver.TurnStartParams{Input: []appserver.InputItem{appserver.TextInput("x")}})
			if err != nil {
				t.Error(err)
			}
			turnc <- turn
		}()
		r := m.recv(t)
		// Notifications may precede the answer; they are kept for the turn.
		m.send(`{"method":"turn/started","params":{"threadId":"thr_1","turn":{"id":"turn_1","status":"inProgress"}}}`)
		m.send(`{"id":` + string(r.ID) + `,"result":{"turn":{"id":"turn_1","status":"inProgress"}}}`)
		m.send(`{"method":"item/agentMessage/delta","params":{"threadId":"thr_1","turnId":"turn_1","itemId":"m1","delta":"par"}}`)
		turn := <-turnc
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ev, err := turn.Next(ctx)
		if _, ok := ev.(appserver.TurnStarted); !ok || err != nil {
			t.Fatalf("first event %T %v", ev, err)
		}
		ev, err = turn.Next(ctx)
		if d, ok := ev.(appserver.AgentMessageDelta); !ok || d.Delta != "par" || err != nil {
			t.Fatalf("second event %#v %v", ev, err)
		}
		_ = m.Close()
		_, err = turn.Next(ctx)
		var cl *appserver.ConnectionLostError
		if !errors.As(err, &cl) || !cl.AfterTurnStarted || cl.TurnID != "turn_1" || !appserver.MayHaveSideEffects(err) {
			t.Fatalf("err = %v, want ConnectionLostError{AfterTurnStarted} for turn_1", err)
		}
	})
}

func TestServerRequestIDsDoNotCollideWithClientIDs(t *testing.T) {
	t.Parallel()
	h := &appserver.Handlers{ToolCall: func(ctx context.Context, call appserver.ToolCall) appserver.ToolResult {
		return appserver.ToolText("ok:"+call.Tool, true)
	}}
	c, m := connectMem(t, appserver.Options{Handlers: *h})
	var loaded struct {
		Data []string `json:"data"`
	}
	errc := make(chan error, 1)
	go func() { errc <- c.Call(context.Background(), "thread/loaded/list", nil, &loaded) }()
	req := m.recv(t)
	// The server's own request reuses the numeric id of the client's
	// pending request; only "method" tells them apart.
	m.send(`{"id":` + string(req.ID) + `,"method":"item/tool/call","params":{"threadId":"thr_9","turnId":"turn_9","callId":"c1","namespace":null,"tool":"lookup","arguments":{}}}`)
	ans := m.recv(t)
	if string(ans.ID) != string(req.ID) || ans.Method != "" || string(ans.Result) != `{"contentItems":[{"type":"inputText","text":"ok:lookup"}],"success":true}` {
		t.Fatalf("answer to the server request: id=%s method=%q result=%s", ans.ID, ans.Method, ans.Result)
	}
	// The client's request completes with its own answer only.
	m.send(`{"id":` + string(req.ID) + `,"result":{"data":["thr_own"]}}`)
	if err := <-errc; err != nil || len(loaded.Data) != 1 || loaded.Data[0] != "thr_own" {
		t.Fatalf("the client's request: %v, result %+v; want the answer to it", err, loaded)
	}
	// An unknown server request gets a JSON-RPC error, not silence.
	m.send(`{"id":7,"method":"account/chatgptAuthTokens/refresh","params":{}}`)
	var raw map[string]json.RawMessage
	select {
	case b := <-m.toPeer:
		_ = json.Unmarshal(b, &raw)
	case <-time.After(5 * time.Second):
		t.Fatal("no answer to an unsupported server request")
	}
	if string(raw["id"]) != "7" || raw["error"] == nil {
		t.Fatalf("answer %v", raw)
	}
}

func TestCloseEndsGoroutines(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	started := make(chan struct{})
	c, m := connectMem(t, appserver.Options{Handlers: appserver.Handlers{
		ToolCall: func(ctx context.Context, call appserver.ToolCall) appserver.ToolResult {
			close(started)
			select {
			case <-ctx.Done(): // Close cancels running handlers
			case <-block:
			}
			return appserver.ToolText("late", false)
		},
	}})
	m.send(`{"id":0,"method":"item/tool/call","params":{"threadId":"a","turnId":"b","callId":"c","tool":"t","arguments":{}}}`)
	<-started
	done := make(chan struct{})
	go func() { _ = c.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return while a handler was running")
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("Done not closed after Close")
	}
	if !errors.Is(c.Err(), appserver.ErrClosed) {
		t.Fatalf("Err() = %v", c.Err())
	}
}

// The upgrade request carries the bearer token and no Origin header, and a
// redirect is not followed (the token must not travel elsewhere).
func TestDialWebSocketHeaders(t *testing.T) {
	t.Parallel()
	var got http.Header
	var redirected atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("/elsewhere", func(w http.ResponseWriter, r *http.Request) { redirected.Store(true) })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
			return
		}
		got = r.Header.Clone()
		http.Error(w, "missing websocket bearer token", http.StatusUnauthorized)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	wsURL := "ws" + strings.TrimPrefix(srv.URL, "http")

	_, err := appserver.DialWebSocket(context.Background(), wsURL+"/", appserver.WebSocketOptions{Token: "s3cret-token"})
	var he *appserver.HandshakeError
	if !errors.As(err, &he) || he.StatusCode != 401 || !errors.Is(err, appserver.ErrUnauthorized) {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "s3cret-token") {
		t.Fatalf("error leaks the token: %v", err)
	}
	if got.Get("Authorization") != "Bearer s3cret-token" {
		t.Fatalf("Authorization = %q", got.Get("Authorization"))
	}
	if _, ok := got["Origin"]; ok {
		t.Fatalf("an Origin header was sent: %q", got.Get("Origin"))
	}
	if got.Get("Upgrade") != "websocket" {
		t.Fatalf("not an upgrade request: %v", got)
	}

	_, err = appserver.DialWebSocket(context.Background(), wsURL+"/moved", appserver.WebSocketOptions{Token: "s3cret-token"})
	if !errors.As(err, &he) || he.StatusCode != http.StatusFound || redirected.Load() {
		t.Fatalf("redirect: err %v, followed %v", err, redirected.Load())
	}
	if _, err := appserver.DialWebSocket(context.Background(), "ws://user:pw@127.0.0.1:1/", appserver.WebSocketOptions{}); err == nil || strings.Contains(err.Error(), "pw") {
		t.Fatalf("credentials in the URL: %v", err)
	}
}

// Connect, a thread, a handled server request and Close leave no goroutine
// of the client behind. It counts the goroutines the appserver package runs
// (not the process's: others may end meanwhile and hide a leak), so it does
// not depend on what else the process does; it is not parallel only to keep
// the other tests' clients out of the count.
func TestNoGoroutineLeak(t *testing.T) {
	before := len(clientGoroutines())
	for i := 0; i < 20; i++ {
		c, m := connectMem(t, appserver.Options{})
		threadFor(t, c, m)
		m.send(`{"id":0,"method":"item/commandExecution/requestApproval","params":{"threadId":"thr_1","turnId":"t","itemId":"i","command":"rm -rf /"}}`)
		ans := m.recv(t)
		if string(ans.Result) != `{"decision":"decline"}` {
			t.Fatalf("default approval answer %s", ans.Result)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// Close waits for the client's goroutines; a goroutine only scheduled to
	// exit may still show in the dump, hence the short poll.
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := clientGoroutines()
		if len(left) <= before {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines of the client before, %d after Close:\n%s", before, len(left), strings.Join(left, "\n\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// clientGoroutines returns the stacks of the goroutines that run code of the
// appserver package or were started by it (the tests' own code is in
// appserver_test).
func clientGoroutines() []string { return goroutines.Running("/internal/appserver.") }
