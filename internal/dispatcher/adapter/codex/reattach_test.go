package codex

import (
	"context"
	"errors"
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

// A closed WebSocket does not end the turn: Wait reports a *DetachedError,
// Reattach on a new connection continues the same turn (no new turn, one
// model request), and the client sees the whole answer exactly once — when
// the socket closes before the answer, in the middle of its deltas while
// the answer still streams, and when the whole turn ends during the gap.
//
// The stub model holds its stream at gates (stubmodel.Stall, HoldBefore), so
// each case is in the state it names whatever the machine's speed: the
// socket closes once the client has the deltas before the first hold; the
// rest of the answer streams only when the case releases it.
func TestReattachAfterWebSocketDrop(t *testing.T) {
	t.Parallel()
	const answer = "one two three four five six seven eight"
	const beforeHold = "one two " // the deltas the client has when the socket closes mid-answer
	cases := []struct {
		name string
		// script scripts the stub and returns what runs after the drop,
		// before Reattach, and after Reattach, before Wait.
		script func(t *testing.T, r *rig, marker string) (beforeReattach, afterReattach func(turn *Turn))
		// seen is what the client has received when the socket closes.
		seen string
		// ended: Reattach finds the turn ended.
		ended bool
	}{
		{"before the answer", func(t *testing.T, r *rig, marker string) (func(*Turn), func(*Turn)) {
			gate := stubmodel.NewGate()
			t.Cleanup(gate.Release)
			r.stub.When(marker, stubmodel.Stall(gate, stubmodel.Text(answer)))
			return nil, func(*Turn) { gate.Release() }
		}, "", false},
		{"mid-answer, still streaming", func(t *testing.T, r *rig, marker string) (func(*Turn), func(*Turn)) {
			// Deltas 2–4 stream while no client is attached; the stream
			// then holds until after Reattach, so the turn is running.
			gap, rest := stubmodel.NewGate(), stubmodel.NewGate()
			t.Cleanup(gap.Release)
			t.Cleanup(rest.Release)
			r.stub.When(marker, stubmodel.Text(answer).HoldBefore(2, gap).HoldBefore(5, rest))
			duringGap := func(*Turn) {
				gap.Release()
				waitGate(t, rest, "the stream to reach the second hold")
			}
			return duringGap, func(*Turn) { rest.Release() }
		}, beforeHold, false},
		{"mid-answer, turn ended during the gap", func(t *testing.T, r *rig, marker string) (func(*Turn), func(*Turn)) {
			gap := stubmodel.NewGate()
			t.Cleanup(gap.Release)
			r.stub.When(marker, stubmodel.Text(answer).HoldBefore(2, gap))
			return func(turn *Turn) {
				gap.Release()
				req := r.stub.RequestsContaining(marker)[0]
				if out, err := req.Wait(testCtx(t, 30*time.Second)); err != nil || out != stubmodel.OutcomeServed {
					t.Fatalf("model request %v %v", out, err)
				}
				waitTurnEnded(t, r, turn) // Codex finished the turn without a client
			}, nil
		}, beforeHold, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, codextest.Options{Transport: codextest.WebSocket})
			marker := "DROP"
			before, after := tc.script(t, r, marker)
			ctx := testCtx(t, 60*time.Second)
			rec := &recorder{}
			// Close the socket under Wait once the client has seen tc.seen.
			drop := make(chan struct{})
			var dropOnce sync.Once
			rec.onEmit = func(ev adapter.Event) {
				if ev.Type == wire.EventPartial && tc.seen != "" && rec.partialText() == tc.seen {
					dropOnce.Do(func() { close(drop) })
				}
			}
			turn, err := Start(ctx, r.c, r.input(marker+" please"), rec.hooks())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.stub.WaitMarker(ctx, marker); err != nil {
				t.Fatal(err)
			}
			if tc.seen == "" {
				close(drop)
			}
			go func() {
				select {
				case <-drop:
					_ = r.c.Close()
				case <-ctx.Done():
				}
			}()
			_, err = turn.Wait(ctx)
			var det *DetachedError
			if !errors.As(err, &det) || det.TurnID != turn.ID() || det.ThreadID != turn.ThreadID() || !appserver.MayHaveSideEffects(err) {
				t.Fatalf("Wait after the drop: %v", err)
			}
			seen := rec.partialText()
			if seen != tc.seen {
				t.Fatalf("before the drop the client saw %q, want %q", seen, tc.seen)
			}
			if before != nil {
				before(turn)
			}

			c2 := r.connect(t)
			if err := turn.Reattach(ctx, c2); err != nil {
				t.Fatalf("Reattach: %v", err)
			}
			turn.mu.Lock()
			ended := turn.pending != nil
			turn.mu.Unlock()
			if ended != tc.ended {
				t.Fatalf("after Reattach: turn recovered as ended = %v, want %v", ended, tc.ended)
			}
			t.Logf("partials before the drop %q; after Reattach %q", seen, strings.TrimPrefix(rec.partialText(), seen))
			if after != nil {
				after(turn)
			}
			res, err := turn.Wait(ctx)
			if err != nil {
				t.Fatalf("Wait after Reattach: %v", err)
			}
			if res.Terminal.Kind != wire.TerminalOK || !slices.Equal(res.AssistantTexts, []string{answer}) || res.TurnID != det.TurnID {
				t.Fatalf("result %+v", res)
			}
			if got := rec.partialText(); got != answer {
				t.Fatalf("the client saw %q, want %q", got, answer)
			}
			if n := len(r.stub.RequestsContaining(marker)); n != 1 {
				t.Fatalf("%d model requests, want 1", n)
			}
			var prompts, answers int
			for _, tr := range rec.transcript() {
				switch tr.Role {
				case wire.RoleUser:
					prompts++
				case wire.RoleAssistant:
					answers++
				}
			}
			if prompts != 1 || answers != 1 {
				t.Fatalf("transcript %+v", rec.transcript())
			}
			// The thread serves the next turn on the new connection.
			in := r.input("next")
			in.ThreadID = res.ThreadID
			next, err := Run(ctx, c2, in, adapter.Hooks{})
			if err != nil || next.Terminal.Kind != wire.TerminalOK {
				t.Fatalf("next turn: %v %+v", err, next)
			}
		})
	}
}

// waitGate waits until a stream of the stub model reached gate.
func waitGate(t *testing.T, gate *stubmodel.Gate, what string) {
	t.Helper()
	select {
	case <-gate.Reached():
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// waitTurnEnded polls, on a connection of its own, until the server lists
// the detached turn as no longer in progress.
func waitTurnEnded(t *testing.T, r *rig, turn *Turn) {
	t.Helper()
	waitListed(t, r, turn, "the turn to end on the server", func(listed appserver.TurnInfo) bool {
		return listed.Status != appserver.TurnInProgress && listed.Status != ""
	})
}

// waitListed polls, on a connection of its own, until thread/turns/list
// shows the turn in the state done accepts.
func waitListed(t *testing.T, r *rig, turn *Turn, what string, done func(appserver.TurnInfo) bool) {
	t.Helper()
	c := r.connect(t)
	defer func() { _ = c.Close() }()
	ctx := testCtx(t, 30*time.Second)
	for {
		listed, err := fetchTurn(ctx, c, turn.ThreadID(), turn.ID())
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if done(listed) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s: the server lists turn %s as %q with %d items",
				what, turn.ID(), listed.Status, len(listed.Items))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// A turn that is not detached cannot be reattached; a finished one needs no
// reattach.
func TestReattachRequiresDetachedTurn(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{Transport: codextest.WebSocket})
	gate := stubmodel.NewGate()
	t.Cleanup(gate.Release)
	r.stub.When("HOLD", stubmodel.Stall(gate, stubmodel.Text("done")))
	ctx := testCtx(t, 60*time.Second)
	turn, err := Start(ctx, r.c, r.input("HOLD"), adapter.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if err := turn.Reattach(ctx, r.connect(t)); !errors.Is(err, ErrTurnAttached) {
		t.Fatalf("Reattach of an attached turn: %v", err)
	}
	gate.Release()
	res, err := turn.Wait(ctx)
	if err != nil || res.Terminal.Kind != wire.TerminalOK {
		t.Fatalf("%v %+v", err, res)
	}
	if err := turn.Reattach(ctx, r.connect(t)); err != nil {
		t.Fatalf("Reattach of a finished turn: %v", err)
	}
	if again, err := turn.Wait(context.Background()); err != nil || again != res {
		t.Fatalf("Wait after the end: %v", err)
	}
}

// A host tool call pending when the socket closes: Codex delivers the call
// again to the connection that reattached; the adapter asks the client once
// and the one answer reaches the model.
func TestReattachWithPendingHostTool(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{Transport: codextest.WebSocket})
	r.stub.When("TOOLDROP", stubmodel.Call(stubmodel.FunctionCall{Name: "kb_search", Arguments: `{"q":"floor"}`, CallID: "call_d"}))
	ctx := testCtx(t, 60*time.Second)
	release := make(chan struct{})
	asked := make(chan string, 10)
	rec := &recorder{answer: func(ctx context.Context, call wire.ToolCall) (wire.ToolAnswer, error) {
		asked <- call.CallID
		select {
		case <-release:
			return wire.TextAnswer("late answer"), nil
		case <-ctx.Done():
			return wire.ToolAnswer{}, ctx.Err()
		}
	}}
	in := r.input("TOOLDROP")
	in.Tools = hostTools()
	turn, err := Start(ctx, r.c, in, rec.hooks())
	if err != nil {
		t.Fatal(err)
	}
	// Client.Close waits for running request handlers, so close in the
	// background while the client still holds the answer.
	go func() { <-asked; _ = r.c.Close() }()
	if _, err := turn.Wait(ctx); !errors.As(err, new(*DetachedError)) {
		t.Fatalf("Wait after the drop: %v", err)
	}
	if err := turn.Reattach(ctx, r.connect(t)); err != nil {
		t.Fatal(err)
	}
	close(release)
	res, err := turn.Wait(ctx)
	if err != nil || res.Terminal.Kind != wire.TerminalOK ||
		!slices.Equal(res.AssistantTexts, []string{stubmodel.ToolOutputPrefix + "late answer"}) {
		t.Fatalf("result %v %+v", err, res)
	}
	if len(asked) != 0 {
		t.Fatalf("the client was asked again for %s", <-asked)
	}
	if calls, terms := rec.toolCalls(), rec.terminals(); len(calls) != 1 || len(terms) != 1 || terms[0].Outcome != wire.OutcomeSuccess {
		t.Fatalf("tool_call %+v, tool_terminal %+v", calls, terms)
	}
	if outs := r.stub.FunctionCallOutputs(); len(outs) != 1 || outs[0].Output != "late answer" {
		t.Fatalf("the model was told %+v", outs)
	}
	if n := len(r.stub.RequestsContaining("TOOLDROP")); n != 2 { // the call, then its output
		t.Fatalf("%d model requests, want 2", n)
	}
}
