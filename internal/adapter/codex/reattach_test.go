package codex

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/adapter"
	"github.com/openclaw/harness-operator/internal/appserver"
	"github.com/openclaw/harness-operator/internal/codextest"
	"github.com/openclaw/harness-operator/test/stubmodel"
)

// A closed WebSocket does not end the turn: Wait reports a *DetachedError,
// Reattach on a new connection continues the same turn (no new turn, one
// model request), and the client sees the whole answer exactly once — when
// the socket closes before the answer, in the middle of its deltas while
// the answer still streams, and when the whole turn ends during the gap.
func TestReattachAfterWebSocketDrop(t *testing.T) {
	t.Parallel()
	const answer = "one two three four five six seven eight"
	cases := []struct {
		name string
		// script the stub; returns a func run after the drop, before Reattach
		script func(t *testing.T, r *rig, marker string) (beforeReattach, afterReattach func())
		// dropAfterPartials: close the socket once this many partials arrived
		dropAfterPartials int
	}{
		{"before the answer", func(t *testing.T, r *rig, marker string) (func(), func()) {
			gate := stubmodel.NewGate()
			t.Cleanup(gate.Release)
			r.stub.When(marker, stubmodel.Stall(gate, stubmodel.Text(answer)))
			return nil, gate.Release
		}, 0},
		{"mid-answer, still streaming", func(t *testing.T, r *rig, marker string) (func(), func()) {
			r.stub.When(marker, stubmodel.SlowText(answer, 120*time.Millisecond))
			return nil, nil
		}, 2},
		{"mid-answer, turn ended during the gap", func(t *testing.T, r *rig, marker string) (func(), func()) {
			r.stub.When(marker, stubmodel.SlowText(answer, 40*time.Millisecond))
			return func() {
				req := r.stub.RequestsContaining(marker)[0]
				if out, err := req.Wait(testCtx(t, 30*time.Second)); err != nil || out != stubmodel.OutcomeServed {
					t.Fatalf("model request %v %v", out, err)
				}
				time.Sleep(300 * time.Millisecond) // let Codex finish the turn without a client
			}, nil
		}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, codextest.Options{Transport: codextest.WebSocket})
			marker := "DROP"
			before, after := tc.script(t, r, marker)
			ctx := testCtx(t, 60*time.Second)
			rec := &recorder{}
			partials := make(chan struct{}, 64)
			rec.onEmit = func(ev adapter.Event) {
				if ev.Type == adapter.EventPartial {
					partials <- struct{}{}
				}
			}
			turn, err := Start(ctx, r.c, r.input(marker+" please"), rec.hooks())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.stub.WaitMarker(ctx, marker); err != nil {
				t.Fatal(err)
			}
			// Relay until the drop point, then close the socket under Wait.
			go func() {
				for i := 0; i < tc.dropAfterPartials; i++ {
					<-partials
				}
				_ = r.c.Close()
			}()
			_, err = turn.Wait(ctx)
			var det *DetachedError
			if !errors.As(err, &det) || det.TurnID != turn.ID() || det.ThreadID != turn.ThreadID() || !appserver.MayHaveSideEffects(err) {
				t.Fatalf("Wait after the drop: %v", err)
			}
			seen := rec.partialText()
			if !strings.HasPrefix(answer, seen) || len(seen) == len(answer) {
				t.Fatalf("before the drop the client saw %q", seen)
			}
			if before != nil {
				before()
			}

			c2 := r.connect(t)
			if err := turn.Reattach(ctx, c2); err != nil {
				t.Fatalf("Reattach: %v", err)
			}
			turn.mu.Lock()
			ended := turn.pending != nil
			turn.mu.Unlock()
			if wantEnded := strings.Contains(tc.name, "ended"); ended != wantEnded {
				t.Fatalf("after Reattach: turn recovered as ended = %v, want %v", ended, wantEnded)
			}
			t.Logf("partials before the drop %q; after Reattach %q", seen, strings.TrimPrefix(rec.partialText(), seen))
			if after != nil {
				after()
			}
			res, err := turn.Wait(ctx)
			if err != nil {
				t.Fatalf("Wait after Reattach: %v", err)
			}
			if res.Terminal.Kind != adapter.TerminalOK || !slices.Equal(res.AssistantTexts, []string{answer}) || res.TurnID != det.TurnID {
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
				case adapter.RoleUser:
					prompts++
				case adapter.RoleAssistant:
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
			if err != nil || next.Terminal.Kind != adapter.TerminalOK {
				t.Fatalf("next turn: %v %+v", err, next)
			}
		})
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
	if err != nil || res.Terminal.Kind != adapter.TerminalOK {
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
	rec := &recorder{answer: func(ctx context.Context, call adapter.ToolCall) (adapter.ToolAnswer, error) {
		asked <- call.CallID
		select {
		case <-release:
			return adapter.TextAnswer("late answer"), nil
		case <-ctx.Done():
			return adapter.ToolAnswer{}, ctx.Err()
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
	if err != nil || res.Terminal.Kind != adapter.TerminalOK ||
		!slices.Equal(res.AssistantTexts, []string{stubmodel.ToolOutputPrefix + "late answer"}) {
		t.Fatalf("result %v %+v", err, res)
	}
	if len(asked) != 0 {
		t.Fatalf("the client was asked again for %s", <-asked)
	}
	if calls, terms := rec.toolCalls(), rec.terminals(); len(calls) != 1 || len(terms) != 1 || terms[0].Outcome != adapter.OutcomeSuccess {
		t.Fatalf("tool_call %+v, tool_terminal %+v", calls, terms)
	}
	if outs := r.stub.FunctionCallOutputs(); len(outs) != 1 || outs[0].Output != "late answer" {
		t.Fatalf("the model was told %+v", outs)
	}
	if n := len(r.stub.RequestsContaining("TOOLDROP")); n != 2 { // the call, then its output
		t.Fatalf("%d model requests, want 2", n)
	}
}
