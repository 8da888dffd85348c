package appserver_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

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

// Dropping events of unopened threads keeps those of a thread being
// resumed: a running turn's events may arrive before the resume answer,
// with or without handlers.
func TestEventsBeforeTheResumeAnswerAreKept(t *testing.T) {
	t.Parallel()
	c, m := connectMem(t, appserver.Options{})
	resumed := make(chan *appserver.Thread, 1)
	go func() {
		th, err := c.ResumeThread(context.Background(), appserver.ThreadResumeParams{ThreadID: "thr_run"}, appserver.ThreadOptions{})
		if err != nil {
			t.Error(err)
		}
		resumed <- th
	}()
	req := m.recv(t)
	m.send(delta("thr_run", "turn_run", "early"))
	m.send(`{"id":` + string(req.ID) + `,"result":{"thread":{"id":"thr_run"},"model":"m"}}`)
	th := <-resumed
	if ev, err := next(t, th.AttachTurn("turn_run")); err != nil || !strings.Contains(string(ev.Meta().Params), "early") {
		t.Fatalf("first event of the resumed turn: %s %v; want the delta sent before the resume answer", describe(ev), err)
	}
	if got := c.Stats().UnknownThreadNotifications; got != 0 {
		t.Fatalf("Stats().UnknownThreadNotifications = %d, want 0", got)
	}
}

// Pins the real Codex's handling of a refused server request: two parallel
// dynamic tool calls reach the client at once; with room for one, the other
// is refused, and Codex tells the model that call failed (its item fails)
// while the turn completes.
func TestRefusedToolCallReachesTheModelAsAFailedCall(t *testing.T) {
	t.Parallel()
	r := startRig(t, codextest.Options{})
	refused := make(chan struct{})
	var once sync.Once
	h := &appserver.Handlers{ToolCall: func(ctx context.Context, call appserver.ToolCall) appserver.ToolResult {
		select { // hold the one slot until the other call was refused
		case <-refused:
		case <-time.After(20 * time.Second): // a failed test: nothing was refused
		}
		return appserver.ToolText("done "+call.CallID, true)
	}}
	c := connectStdio(t, r.srv, appserver.Options{MaxServerRequests: 1})
	r.stub.When("TWO", stubmodel.Call(
		stubmodel.FunctionCall{Name: "lookup_weather", Arguments: `{"city":"Paris"}`, CallID: "call_a"},
		stubmodel.FunctionCall{Name: "lookup_weather", Arguments: `{"city":"Rome"}`, CallID: "call_b"}))
	th := startThread(t, c, r.srv, appserver.ThreadStartParams{DynamicTools: dynamicTools(), Ephemeral: true}, h)
	ctx := testCtx(t, 60*time.Second)
	turn, err := th.StartTurn(ctx, appserver.TurnStartParams{Input: []appserver.InputItem{appserver.TextInput("TWO calls")}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := turn.Run(ctx, func(ev appserver.Event) {
		if h, ok := ev.(appserver.ServerRequestHandled); ok && h.Declined {
			once.Do(func() { close(refused) })
		}
	})
	if err != nil || res.Status != appserver.TurnCompleted {
		t.Fatalf("turn: %v %v", res.Status, err)
	}
	outs := map[string]string{}
	for _, o := range r.stub.FunctionCallOutputs() {
		outs[o.CallID] = o.Output
	}
	failed, done := 0, 0
	for id, out := range outs {
		switch out {
		case "dynamic tool request failed":
			failed++
		case "done " + id:
			done++
		}
	}
	if failed != 1 || done != 1 || c.Stats().RefusedServerRequests != 1 {
		t.Fatalf("outputs the model saw %v, %d refused; want one call done and the refused one failed", outs, c.Stats().RefusedServerRequests)
	}
}
