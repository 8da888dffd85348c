package codex

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// cutScene is one run of TestReattachDeliversTheAnswerOnce as its cases
// script it.
type cutScene struct {
	t         *testing.T
	r         *rig
	ctx       context.Context
	old, next *frameTap         // the connection that is cut, the one that reattaches
	oldC      *appserver.Client // set once connected
	turn      *Turn             // set once started
	gates     []*stubmodel.Gate // released after Reattach
	tail      *stubmodel.Gate   // holds the second message before its first delta

	// cut ends the first connection once the model request arrived; nil
	// when old.cutOn does it at a frame.
	cut func()
	// duringGap runs after Wait reported the cut, before Reattach.
	duringGap func()
}

const (
	onceAnswer = "one two three four five"
	onceTail   = "TAIL"
)

// wordDeltas are the deltas the stub streams for the answer and the tail.
var wordDeltas = []string{"one ", "two ", "three ", "four ", "five", onceTail}

// gate is a stub gate that the scene releases after Reattach.
func (sc *cutScene) gate() *stubmodel.Gate {
	g := stubmodel.NewGate()
	sc.t.Cleanup(g.Release)
	sc.gates = append(sc.gates, g)
	return g
}

// reply is the model's answer and then a second message that holds before
// its first delta (text delta 5) until after Reattach: the turn is still
// running when the answer has completed, which is when a reattach lists
// the answer.
func (sc *cutScene) reply() stubmodel.Reply {
	return stubmodel.Text(onceAnswer).And(stubmodel.Text(onceTail)).HoldBefore(5, sc.tail)
}

func (sc *cutScene) closeOld() { _ = sc.oldC.Close() }

func (sc *cutScene) waitFrame(tap *frameTap, what string, match func(tapFrame) bool) {
	sc.t.Helper()
	if err := tap.waitFrame(sc.ctx, match); err != nil {
		sc.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// waitAnswerListed waits until the server lists the completed answer.
func (sc *cutScene) waitAnswerListed() {
	sc.t.Helper()
	waitListed(sc.t, sc.r, sc.turn, "the server to list the answer", func(listed appserver.TurnInfo) bool {
		return slices.ContainsFunc(listed.Items, func(it appserver.Item) bool { return it.Text == onceAnswer })
	})
}

// Whatever the moment of a WebSocket cut, the client receives each delta of
// the answer exactly once and the assistant messages in the order the model
// wrote them. Reattach subscribes the new connection (thread/resume) before
// it lists the turn (thread/turns/list), so a message may start and finish
// between the two: the list then has its whole text and the new connection
// delivers its start, deltas and completion as well.
//
// Each case holds the stub model and the list request at exact frames (a
// frameTap on each connection), so it is in the state it names whatever the
// machine's speed.
func TestReattachDeliversTheAnswerOnce(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// script scripts the stub and the scene and returns the reply.
		script func(sc *cutScene) stubmodel.Reply
		// seen is what the client has received when the connection is cut.
		seen string
		// deltas are the partials the client receives: the model's deltas
		// where a connection delivered them from the message's start, else
		// the text the client lacks, sent once.
		deltas []string
	}{
		{"before the answer, which streams whole between the resume and the list", func(sc *cutScene) stubmodel.Reply {
			start := sc.gate()
			sc.cut = sc.closeOld
			sc.next.beforeRequest("thread/turns/list", func() {
				start.Release()
				sc.waitFrame(sc.next, "the answer's completion on the new connection", completedFrame(onceAnswer))
			})
			return stubmodel.Stall(start, sc.reply())
		}, "", []string{onceAnswer, onceTail}},
		{"before the answer, listed while the answer streams", func(sc *cutScene) stubmodel.Reply {
			start, mid := sc.gate(), sc.gate()
			sc.cut = sc.closeOld
			sc.next.beforeRequest("thread/turns/list", func() {
				start.Release()
				sc.waitFrame(sc.next, "the answer's second delta on the new connection", deltaFrame("two "))
				// The adapter completes every listed message at once: Codex
				// must not list one that is still streaming.
				listed, err := fetchTurn(sc.ctx, sc.r.connect(sc.t), sc.turn.ThreadID(), sc.turn.ID())
				if err != nil {
					sc.t.Fatal(err)
				}
				if slices.ContainsFunc(listed.Items, func(it appserver.Item) bool { return it.Type == "agentMessage" }) {
					sc.t.Fatalf("Codex lists the answer while it streams: %+v", listed.Items)
				}
			})
			return stubmodel.Stall(start, sc.reply().HoldBefore(2, mid))
		}, "", wordDeltas},
		{"mid-answer, the rest streams while no client is attached", func(sc *cutScene) stubmodel.Reply {
			gap := sc.gate()
			sc.cut = func() {
				sc.waitFrame(sc.old, "the answer's second delta", deltaFrame("two "))
				sc.closeOld()
			}
			sc.duringGap = func() {
				gap.Release()
				sc.waitAnswerListed()
			}
			return sc.reply().HoldBefore(2, gap)
		}, "one two ", []string{"one ", "two ", "three four five", onceTail}},
		{"after the answer's last delta, in place of its completion", func(sc *cutScene) stubmodel.Reply {
			sc.old.cutOn(completedFrame(onceAnswer))
			sc.duringGap = sc.waitAnswerListed
			return sc.reply()
		}, onceAnswer, wordDeltas},
		{"after the answer completed, before the turn completes", func(sc *cutScene) stubmodel.Reply {
			sc.cut = func() {
				sc.waitFrame(sc.old, "the answer's completion", completedFrame(onceAnswer))
				sc.closeOld()
			}
			return sc.reply()
		}, onceAnswer, wordDeltas},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, codextest.Options{Transport: codextest.WebSocket})
			sc := &cutScene{t: t, r: r, ctx: testCtx(t, 60*time.Second), old: newFrameTap(), next: newFrameTap()}
			sc.tail = sc.gate()
			const marker = "ONCE"
			r.stub.When(marker, tc.script(sc))
			sc.oldC = r.connectVia(t, sc.old.wrap)
			rec := &recorder{}
			var err error
			sc.turn, err = Start(sc.ctx, sc.oldC, r.input(marker+" please"), rec.hooks())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.stub.WaitMarker(sc.ctx, marker); err != nil {
				t.Fatal(err)
			}
			if sc.cut != nil {
				sc.cut()
			}
			if _, err := sc.turn.Wait(sc.ctx); !errors.As(err, new(*DetachedError)) {
				t.Fatalf("Wait after the cut: %v", err)
			}
			if seen := rec.partialText(); seen != tc.seen {
				t.Fatalf("before the cut the client saw %q, want %q", seen, tc.seen)
			}
			if sc.duringGap != nil {
				sc.duringGap()
			}
			if err := sc.turn.Reattach(sc.ctx, r.connectVia(t, sc.next.wrap)); err != nil {
				t.Fatalf("Reattach: %v", err)
			}
			for _, g := range sc.gates {
				g.Release()
			}
			res, err := sc.turn.Wait(sc.ctx)
			if err != nil || res.Terminal.Kind != wire.TerminalOK {
				t.Fatalf("Wait after Reattach: %v %+v", err, res)
			}
			if got := rec.deltas(); !slices.Equal(got, tc.deltas) {
				t.Fatalf("the client received the partials %q, want %q", got, tc.deltas)
			}
			want := []string{onceAnswer, onceTail}
			if !slices.Equal(res.AssistantTexts, want) {
				t.Fatalf("AssistantTexts %q, want %q", res.AssistantTexts, want)
			}
			var records []string
			for _, tr := range rec.transcript() {
				if tr.Role == wire.RoleAssistant {
					records = append(records, tr.Text)
				}
			}
			if !slices.Equal(records, want) {
				t.Fatalf("assistant transcript records %q, want %q", records, want)
			}
			if n := len(r.stub.RequestsContaining(marker)); n != 1 {
				t.Fatalf("%d model requests, want 1", n)
			}
		})
	}
}
