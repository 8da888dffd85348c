package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/store"
	"github.com/openclaw/harness-operator/internal/testutil/goroutines"
)

// pendingAcquire is an Acquire running in its own goroutine.
type pendingAcquire struct {
	cancel context.CancelFunc
	done   chan struct{}
	lease  store.Lease
	err    error
}

// startAcquire starts an Acquire in the background and waits until it waits:
// want is how many background Acquires are then blocked in total. The
// goroutine ends by the end of the test.
func startAcquire(t *testing.T, st store.Store, session, owner string, want int) *pendingAcquire {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &pendingAcquire{cancel: cancel, done: make(chan struct{})}
	go waitingAcquire(ctx, st, session, owner, p)
	t.Cleanup(func() {
		cancel()
		<-p.done
	})
	goroutines.WaitBlocked(t, "storetest.waitingAcquire", want)
	return p
}

// waitingAcquire is the body of a background Acquire; its name is what
// goroutines.WaitBlocked looks for.
func waitingAcquire(ctx context.Context, st store.Store, session, owner string, p *pendingAcquire) {
	defer close(p.done)
	p.lease, p.err = st.Acquire(ctx, session, owner, ttl)
}

// granted waits for the Acquire to return and wants a lease.
func (p *pendingAcquire) granted(t *testing.T) store.Lease {
	t.Helper()
	if err := p.wait(t); err != nil {
		t.Fatalf("waiting Acquire: %v", err)
	}
	return p.lease
}

// wait waits for the Acquire to return and gives its error.
func (p *pendingAcquire) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		t.Fatalf("a waiting Acquire did not return within %s", timeout)
		return nil
	}
}

// returned reports whether the Acquire has returned.
func (p *pendingAcquire) returned() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// follower reads a run's events in the background.
type follower struct {
	cancel context.CancelFunc
	events chan store.Event
	done   chan error // the iterator's error, or nil when the run ended
}

// follow starts reading r's events after afterSeq; the goroutine ends by the
// end of the test.
func follow(t *testing.T, r store.Run, afterSeq int64) *follower {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f := &follower{cancel: cancel, events: make(chan store.Event, 1024), done: make(chan error, 1)}
	go followEvents(ctx, r, afterSeq, f)
	t.Cleanup(func() {
		cancel()
		<-f.done
	})
	return f
}

// followEvents is the body of a follower; its name is what
// goroutines.WaitBlocked looks for.
func followEvents(ctx context.Context, r store.Run, afterSeq int64, f *follower) {
	for ev, err := range r.Events(ctx, afterSeq) {
		if err != nil {
			f.done <- err
			return
		}
		select {
		case f.events <- ev:
		case <-ctx.Done():
			f.done <- ctx.Err()
			return
		}
	}
	f.done <- nil
}

// next waits for the follower's next event.
func (f *follower) next(t *testing.T) store.Event {
	t.Helper()
	select {
	case ev := <-f.events:
		return ev
	case err := <-f.done:
		f.done <- err // for the cleanup
		t.Fatalf("the events ended (%v) before the next one", err)
	case <-time.After(timeout):
		t.Fatalf("no event within %s", timeout)
	}
	return store.Event{}
}

// end waits for the iterator to end and gives its error.
func (f *follower) end(t *testing.T) error {
	t.Helper()
	select {
	case err := <-f.done:
		f.done <- err // for the cleanup
		return err
	case <-time.After(timeout):
		t.Fatalf("the events did not end within %s", timeout)
		return nil
	}
}
