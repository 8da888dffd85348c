package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter/codex"
)

// liveTurns are the turns running in this engine: what Interrupt reaches,
// the host tool calls waiting for their client's answer, and what Drain
// waits for. Its lock guards only these.
type liveTurns struct {
	mu    sync.Mutex
	runs  map[string]*liveRun              // by session key
	tools map[toolKey]chan wire.ToolAnswer // host tool calls waiting for the client
	// requests are the approval and user-input requests of running turns
	// (requests.go).
	requests map[requestKey]*pendingRequest
	idle     chan struct{} // closed and replaced when the last run ends
	count    int
}

type toolKey struct{ session, runID, callID string }

// liveRun is one running turn.
type liveRun struct {
	runID string
	// turn is nil while the native turn is still being started.
	turn *codex.Turn
	// interrupted records that an Interrupt was asked for. One that
	// arrived before the turn started is delivered as soon as the turn
	// exists, so none is lost.
	interrupted bool
}

// add registers the session's running turn.
func (l *liveTurns) add(session, runID string) *liveRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runs == nil {
		l.runs = map[string]*liveRun{}
	}
	if l.idle == nil {
		l.idle = make(chan struct{})
	}
	r := &liveRun{runID: runID}
	l.runs[session] = r
	l.count++
	return r
}

// remove ends the registration of add.
func (l *liveTurns) remove(session string, r *liveRun) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.unregister(session, r)
	for k := range l.requests {
		if k.session == session && k.runID == r.runID {
			delete(l.requests, k)
		}
	}
	l.count--
	if l.count == 0 {
		close(l.idle)
		l.idle = nil
	}
}

// ended takes r out of Interrupt's reach once its native turn is over and
// its end is being recorded: an interrupt asked after the result was
// visible must say the run is not running. r still counts as running for
// Drain until remove.
func (l *liveTurns) ended(session string, r *liveRun) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.unregister(session, r)
}

// unregister takes r out of the session's running turn, unless a newer turn
// is there already. l.mu is held.
func (l *liveTurns) unregister(session string, r *liveRun) {
	if l.runs[session] == r {
		delete(l.runs, session)
	}
}

// started records the native turn of r and reports whether an interrupt
// arrived before it existed.
func (l *liveTurns) started(r *liveRun, t *codex.Turn) (interrupted bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r.turn = t
	return r.interrupted
}

// running reports whether run runID of the session runs in this engine.
func (l *liveTurns) running(session, runID string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.runs[session]
	return r != nil && r.runID == runID
}

// interruptAsked reports whether an interrupt of r was asked for (the
// gateway's, a shutdown's).
func (l *liveTurns) interruptAsked(r *liveRun) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return r.interrupted
}

// interrupt interrupts the session's running turn when match accepts it.
func (l *liveTurns) interrupt(session string, match func(*liveRun) bool) bool {
	l.mu.Lock()
	r := l.runs[session]
	if r == nil || !match(r) {
		l.mu.Unlock()
		return false
	}
	t := r.turn
	r.interrupted = true
	l.mu.Unlock()
	if t != nil {
		t.Interrupt()
	}
	return true
}

// interruptAll interrupts every running turn.
func (l *liveTurns) interruptAll() {
	l.mu.Lock()
	sessions := make([]string, 0, len(l.runs))
	for s := range l.runs {
		sessions = append(sessions, s)
	}
	l.mu.Unlock()
	for _, s := range sessions {
		l.interrupt(s, func(*liveRun) bool { return true })
	}
}

// waitCtx waits until no turn runs or ctx ends; it reports whether none runs.
func (l *liveTurns) waitCtx(ctx context.Context) bool {
	l.mu.Lock()
	idle := l.idle
	l.mu.Unlock()
	if idle == nil {
		return true
	}
	select {
	case <-idle:
		return true
	case <-ctx.Done():
		return false
	}
}

// wait is waitCtx bounded by d.
func (l *liveTurns) wait(d time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return l.waitCtx(ctx)
}

// expectTool registers a host tool call before its client hears of it, so an
// answer can never arrive before its waiter.
func (l *liveTurns) expectTool(key toolKey) chan wire.ToolAnswer {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tools == nil {
		l.tools = map[toolKey]chan wire.ToolAnswer{}
	}
	ch := l.tools[key]
	if ch == nil {
		ch = make(chan wire.ToolAnswer, 1)
		l.tools[key] = ch
	}
	return ch
}

// awaitTool waits for the client's answer to a host tool call until ctx
// ends (the tool timeout, an interrupt, the shutdown).
func (l *liveTurns) awaitTool(ctx context.Context, key toolKey, tool string) (wire.ToolAnswer, error) {
	ch := l.expectTool(key)
	defer func() {
		l.mu.Lock()
		delete(l.tools, key)
		l.mu.Unlock()
	}()
	select {
	case a := <-ch:
		return a, nil
	case <-ctx.Done():
		return wire.ToolAnswer{}, fmt.Errorf("dispatch: host tool %s (%s) got no answer: %w", tool, key.callID, context.Cause(ctx))
	}
}

// answerTool delivers the client's answer to a waiting host tool call.
func (l *liveTurns) answerTool(key toolKey, answer wire.ToolAnswer) error {
	l.mu.Lock()
	ch := l.tools[key]
	l.mu.Unlock()
	if ch == nil {
		return fmt.Errorf("%w: %s in run %q of %s", ErrNoPendingToolCall, key.callID, key.runID, key.session)
	}
	select {
	case ch <- answer:
		return nil
	default:
		return fmt.Errorf("%w: %s in run %q of %s was already answered", ErrNoPendingToolCall, key.callID, key.runID, key.session)
	}
}
