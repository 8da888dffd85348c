package appserver_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

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
