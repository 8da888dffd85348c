package codex

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

// Following a started turn to its end: interrupts, the wait for
// turn/completed, and the result built from what the turn produced.

// Abandon gives up on a turn that will not be waited for again — e.g. a
// detached turn whose server is gone: host tool calls still waiting for the
// client end (their context is cancelled). The turn may still be running on
// the server; Abandon sends nothing.
func (t *Turn) Abandon() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closing = true
	t.cancelTurn()
}

// Interrupt asks the running turn to stop: Wait sends turn/interrupt and the
// turn ends with terminal kind aborted. It does not block and may be called
// any number of times, from any goroutine (including Hooks.Emit).
func (t *Turn) Interrupt() {
	t.interruptOnce.Do(func() { close(t.interruptCh) })
}

// Wait relays the turn's events to Hooks.Emit until the turn ends and
// returns its result. Cancelling ctx or calling Interrupt sends
// turn/interrupt (terminal aborted); reaching TurnInput.Deadline does too
// (terminal timeout). After an interrupt Wait waits a bounded time for
// Codex to confirm; without a confirmation the result says so and the turn
// may still be running on the server.
//
// When the connection ends, Wait returns a *DetachedError: call Reattach
// with a new connection, then Wait again. Once the turn ended, further
// calls return the same result.
func (t *Turn) Wait(ctx context.Context) (*wire.TurnResult, error) {
	t.waitMu.Lock()
	defer t.waitMu.Unlock()
	t.mu.Lock()
	if t.result != nil {
		res := t.result
		t.mu.Unlock()
		return res, nil
	}
	at := t.at
	if at == nil {
		err := &DetachedError{ThreadID: t.threadID, TurnID: t.turnID, Err: t.c.Err()}
		t.mu.Unlock()
		return nil, err
	}
	if t.pending != nil {
		ev := *t.pending
		t.mu.Unlock()
		return t.finish(ev), nil
	}
	stopping := t.stopCause != nil
	t.mu.Unlock()

	runCtx, cancelRun := context.WithCancelCause(context.Background())
	defer cancelRun(nil)
	watchDone := make(chan struct{})
	defer close(watchDone)
	go func() {
		var deadline <-chan time.Time
		if !t.in.Deadline.IsZero() {
			timer := time.NewTimer(time.Until(t.in.Deadline))
			defer timer.Stop()
			deadline = timer.C
		}
		select {
		case <-ctx.Done():
			cancelRun(errAborted)
		case <-t.interruptCh:
			cancelRun(errAborted)
		case <-deadline:
			cancelRun(errTimeout)
		case <-watchDone:
		}
	}()

	var drainCtx context.Context
	resends := 0
	if stopping { // interrupted before a reattach: ask again
		var cancelDrain context.CancelFunc
		drainCtx, cancelDrain = context.WithTimeout(context.Background(), interruptGrace)
		defer cancelDrain()
		t.sendInterrupt(at)
	}
	for {
		nctx := context.Context(runCtx)
		if drainCtx != nil {
			nctx = drainCtx
		}
		ev, err := at.Next(nctx)
		if err == nil {
			if done, ok := ev.(appserver.TurnCompletedEvent); ok {
				return t.finish(done), nil
			}
			t.mu.Lock()
			t.relay(ev)
			t.mu.Unlock()
			if _, started := ev.(appserver.ItemStarted); started && drainCtx != nil && resends < maxInterruptResends {
				// Codex goes on after the interrupt: one that reached it
				// while it waited for a host tool call can be lost. Ask
				// again as each new item starts.
				resends++
				t.sendInterrupt(at)
			}
			continue
		}
		var lost *appserver.ConnectionLostError
		switch {
		case errors.As(err, &lost):
			t.mu.Lock()
			t.at = nil
			t.mu.Unlock()
			return nil, &DetachedError{ThreadID: t.threadID, TurnID: t.turnID, Err: err}
		case drainCtx == nil && runCtx.Err() != nil:
			t.mu.Lock()
			t.stopCause = context.Cause(runCtx)
			t.mu.Unlock()
			var cancelDrain context.CancelFunc
			drainCtx, cancelDrain = context.WithTimeout(context.Background(), interruptGrace)
			defer cancelDrain()
			t.sendInterrupt(at)
		case drainCtx != nil && drainCtx.Err() != nil:
			return t.finishUnconfirmed(), nil
		default:
			return nil, fmt.Errorf("codex: turn %s: %w", t.turnID, err)
		}
	}
}

// sendInterrupt sends turn/interrupt; a failure (the turn already ended, or
// the connection is gone) shows up in the event stream.
func (t *Turn) sendInterrupt(at *appserver.Turn) {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	_ = at.Interrupt(ctx)
	t.mu.Lock()
	t.cancelTurn() // pending host tool calls end now
	t.mu.Unlock()
}

// finish finalizes a turn that completed (or was recovered as completed).
func (t *Turn) finish(done appserver.TurnCompletedEvent) *wire.TurnResult {
	t.mu.Lock()
	// Assistant messages that completed while no connection was attached
	// are in the completion's item summary.
	for _, it := range done.Turn.Items {
		if it.Type == "agentMessage" {
			t.itemCompleted(it)
		}
	}
	term := terminalOf(done.Turn, t.stopCause)
	t.mu.Unlock()
	return t.complete(term, string(done.Turn.Status))
}

// finishUnconfirmed ends a turn whose interrupt Codex did not confirm.
func (t *Turn) finishUnconfirmed() *wire.TurnResult {
	t.mu.Lock()
	term := stopTerminal(t.stopCause)
	term.Message += fmt.Sprintf("; Codex did not confirm the interrupt within %v, the turn may still be running", interruptGrace)
	t.mu.Unlock()
	return t.complete(term, "unconfirmed")
}

// complete ends pending host tool calls (their terminals precede the end
// of the turn), releases the thread on this connection, emits the
// lifecycle end and builds the result.
func (t *Turn) complete(term wire.Terminal, status string) *wire.TurnResult {
	t.mu.Lock()
	t.closing = true
	t.mu.Unlock()
	t.cancelTurn()
	waited := make(chan struct{})
	go func() { t.handlers.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(handlerGrace):
	}
	t.mu.Lock()
	c, th := t.c, t.th
	t.mu.Unlock()
	t.release(c, th)

	t.mu.Lock()
	defer t.mu.Unlock()
	t.emit(adapter.Event{Type: wire.EventAgent, Agent: &wire.AgentEvent{Stream: wire.StreamLifecycle,
		Phase: wire.PhaseEnd, Status: status, Text: term.Message}})
	res := &wire.TurnResult{
		ThreadID:       t.threadID,
		TurnID:         t.turnID,
		AssistantTexts: append([]string{}, t.texts...),
		Terminal:       term,
		PlanText:       strings.Join(nonEmpty(append(append([]string{}, t.plans...), t.planSteps)), "\n\n"),
		ReasoningText:  strings.Join(nonEmpty(t.reasoning), "\n\n"),
		LastToolError:  t.lastErr,
		ToolMediaURLs:  t.media,
		// Native artifacts the runtime created and persisted itself
		// (deliverImage); each is also in ToolMediaURLs.
		HostOwnedToolMediaURLs: t.hostMedia,
	}
	if t.usageSeen {
		res.Usage = wire.Usage{
			Input:       t.usageLast.InputTokens - t.usageBase.InputTokens,
			CachedInput: t.usageLast.CachedInputTokens - t.usageBase.CachedInputTokens,
			Output:      t.usageLast.OutputTokens - t.usageBase.OutputTokens,
			Reasoning:   t.usageLast.ReasoningOutputTokens - t.usageBase.ReasoningOutputTokens,
			Total:       t.usageLast.TotalTokens - t.usageBase.TotalTokens,
		}
	}
	res.Classification = adapter.Classify(term.Kind, res.AssistantTexts, res.PlanText, res.ReasoningText)
	t.result = res
	t.at = nil
	return res
}
