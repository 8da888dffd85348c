package engine

import (
	"context"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// DefaultActiveTurnDelay is how long a turn runs before the engine writes
// status.activeTurn (Options.ActiveTurnDelay). Most turns are shorter: they
// make one status write, at their end, instead of two.
const DefaultActiveTurnDelay = time.Second

// ActiveTurnImmediately, as Options.ActiveTurnDelay, writes status.activeTurn
// as soon as the native turn started.
const ActiveTurnImmediately time.Duration = -1

// Bounds of the backoff between attempts of a status write that failed.
const (
	statusRetryFirst = 100 * time.Millisecond
	statusRetryMax   = 5 * time.Second
)

// activeTurnDelay is Options.ActiveTurnDelay with its default applied.
func (e *Engine) activeTurnDelay() time.Duration {
	switch d := e.opts.ActiveTurnDelay; {
	case d == 0:
		return DefaultActiveTurnDelay
	case d < 0:
		return 0
	default:
		return d
	}
}

// activeMark is the pending write of a turn's status.activeTurn: it runs on
// a timer's goroutine once the turn has run for the delay.
type activeMark struct {
	timer *time.Timer
	stop  chan struct{} // closed when the turn ended: no further attempt
	done  chan struct{} // closed when the timer's goroutine returned
}

// scheduleActive arranges for status.activeTurn (with lastSelection and
// where the native turn runs, so a dispatcher that restarts can interrupt
// it) to be written if the turn still runs Options.ActiveTurnDelay after it
// started. The status is built now, on the turn's goroutine: the timer's
// goroutine touches nothing of the turn but its lease state.
func (t *runningTurn) scheduleActive() {
	st := t.e.current(t.sess)
	st.LastSelection = lastSelection(t.p.decision, t.req.RunID)
	st.ActiveTurn = &v1alpha1.ActiveTurn{RunID: t.req.RunID, StartedAt: t.started, Deadline: metav1.NewTime(t.deadline()),
		Native: &v1alpha1.NativeTurn{ThreadID: t.native.ThreadID(), TurnID: t.native.ID(), Pod: t.p.server.Name,
			HarnessNamespace: t.p.harness.Namespace, HarnessName: t.p.harness.Name}}
	m := &activeMark{stop: make(chan struct{}), done: make(chan struct{})}
	wait := max(t.e.activeTurnDelay()-time.Since(t.started.Time), 0)
	m.timer = time.AfterFunc(wait, func() {
		defer close(m.done)
		t.writeStatus(st, "apply activeTurn", m.stop)
	})
	t.active = m
}

// cancelActive is called when the turn ended, before its end status is
// written: an activeTurn write that has not started never happens, and one
// under way is waited for, so the end status (which clears activeTurn) is
// always applied after it.
func (t *runningTurn) cancelActive() {
	m := t.active
	if m == nil {
		return
	}
	close(m.stop)
	if m.timer.Stop() {
		return // it never fired
	}
	<-m.done
}

// turnLease is what the turn's status writes need to know of its session
// lease, which the renewing goroutine updates.
type turnLease struct {
	lost    atomic.Bool  // a renewal was refused: another holder may write
	expires atomic.Int64 // unix nanoseconds of the last grant's expiry
}

func (l *turnLease) renewed(expires time.Time) { l.expires.Store(expires.UnixNano()) }

// held reports whether the turn may still write as the session's holder:
// no renewal was refused, and the lease is still being renewed (the
// engine runs) or has not expired yet.
func (t *runningTurn) leaseHeld() bool {
	if t.leaseState.lost.Load() {
		return false
	}
	return t.e.ctx.Err() == nil || time.Now().UnixNano() < t.leaseState.expires.Load()
}

// writeStatus applies st and retries a failed apply, with backoff, as long
// as the turn holds the session's lease, until stop is closed (nil: never).
// A refusal that cannot pass on a retry (the session is gone, the status is
// invalid, the dispatcher may not write it) is not retried. Each attempt
// runs on a context of its own: a turn's status must not be lost to a
// shutdown that ended the turn. It reports whether st was applied.
func (t *runningTurn) writeStatus(st *dispatcherStatus, what string, stop <-chan struct{}) bool {
	backoff := statusRetryFirst
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.e.ctx), statusWriteTimeout)
		err := t.e.apply(ctx, t.sess, st)
		cancel()
		if err == nil {
			return true
		}
		switch {
		case permanentStatusError(err):
			t.e.log.Error(err, what+" failed; not retried (a retry cannot succeed)", "session", t.session, "runId", t.req.RunID, "attempt", attempt)
			return false
		case !t.leaseHeld():
			t.e.log.Error(err, what+" failed; not retried (the session lease is no longer held)", "session", t.session, "runId", t.req.RunID, "attempt", attempt)
			return false
		}
		t.e.log.Error(err, what+" failed; retrying", "session", t.session, "runId", t.req.RunID, "attempt", attempt, "retryIn", backoff.String())
		retry := time.NewTimer(backoff)
		select {
		case <-stop:
			retry.Stop()
			return false
		case <-retry.C:
		}
		backoff = min(2*backoff, statusRetryMax)
	}
}

// permanentStatusError reports whether a status apply's error says the same
// apply can never succeed.
func permanentStatusError(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) ||
		apierrors.IsForbidden(err) || apierrors.IsMethodNotSupported(err) || apierrors.IsRequestEntityTooLargeError(err)
}
