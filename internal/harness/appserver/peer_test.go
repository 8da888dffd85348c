package appserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

// Helpers of the scripted peer (memTransport). The real Codex cannot be
// made to misbehave, so the tests of the limits against a misbehaving
// app-server (limits_test.go, readlimit_test.go, panic_test.go) play the
// app-server with it, over the package's real transports where the
// transport is what is tested (bridge).

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
