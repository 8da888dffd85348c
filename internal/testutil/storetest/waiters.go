package storetest

import (
	"context"
	"iter"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
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

// follower reads an iterator — a run's events or inbox — in the background.
type follower[T any] struct {
	cancel context.CancelFunc
	items  chan T
	done   chan error // the iterator's error, or nil when it ended
}

// follow starts reading r's events after afterSeq; the goroutine ends by the
// end of the test.
func follow(t *testing.T, r store.Run, afterSeq int64) *follower[store.Event] {
	t.Helper()
	return startFollower(t, func(ctx context.Context) iter.Seq2[store.Event, error] { return r.Events(ctx, afterSeq) }, followEvents)
}

// followInbox starts reading the inbox of ref after afterSeq through st.
func followInbox(t *testing.T, st store.Store, ref store.RunRef, afterSeq int64) *follower[store.InboxMessage] {
	t.Helper()
	return startFollower(t, func(ctx context.Context) iter.Seq2[store.InboxMessage, error] { return st.Inbox(ctx, ref, afterSeq) }, readInbox)
}

func startFollower[T any](t *testing.T, seq func(context.Context) iter.Seq2[T, error],
	body func(context.Context, iter.Seq2[T, error], *follower[T])) *follower[T] {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f := &follower[T]{cancel: cancel, items: make(chan T, 1024), done: make(chan error, 1)}
	go body(ctx, seq(ctx), f)
	t.Cleanup(func() {
		cancel()
		<-f.done
	})
	return f
}

// followEvents and readInbox are the bodies of followers; their names are
// what goroutines.WaitBlocked looks for.
func followEvents(ctx context.Context, seq iter.Seq2[store.Event, error], f *follower[store.Event]) {
	f.read(ctx, seq)
}

func readInbox(ctx context.Context, seq iter.Seq2[store.InboxMessage, error], f *follower[store.InboxMessage]) {
	f.read(ctx, seq)
}

func (f *follower[T]) read(ctx context.Context, seq iter.Seq2[T, error]) {
	for item, err := range seq {
		if err != nil {
			f.done <- err
			return
		}
		select {
		case f.items <- item:
		case <-ctx.Done():
			f.done <- ctx.Err()
			return
		}
	}
	f.done <- nil
}

// next waits for the follower's next item.
func (f *follower[T]) next(t *testing.T) T {
	t.Helper()
	select {
	case item := <-f.items:
		return item
	case err := <-f.done:
		f.done <- err // for the cleanup
		// The reader sends its last items before it ends, and a select
		// picks at random among ready cases: an item sent is still next.
		select {
		case item := <-f.items:
			return item
		default:
		}
		t.Fatalf("the iteration ended (%v) before the next item", err)
	case <-time.After(timeout):
		t.Fatalf("no item within %s", timeout)
	}
	var zero T
	return zero
}

// end waits for the iterator to end and gives its error.
func (f *follower[T]) end(t *testing.T) error {
	t.Helper()
	select {
	case err := <-f.done:
		f.done <- err // for the cleanup
		return err
	case <-time.After(timeout):
		t.Fatalf("the iteration did not end within %s", timeout)
		return nil
	}
}
