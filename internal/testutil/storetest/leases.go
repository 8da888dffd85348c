package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

var leaseBehaviours = []behaviour{
	{name: "LeaseIsExclusiveUntilReleased", test: testLeaseExclusive},
	{name: "WaitersAreGrantedInArrivalOrder", test: testLeaseFIFO},
	{name: "AWaiterThatGivesUpLeavesTheQueue", test: testLeaseWaiterGivesUp},
	{name: "AnExpiredLeaseIsTakenOverAndItsHolderFenced", test: testLeaseExpiry},
	{name: "RenewKeepsALeaseNobodyTookOver", test: testLeaseRenew},
	{name: "LeasesAndTokensSurviveRestart", test: testLeaseDurable},
	{name: "CloseEndsAWaitingAcquire", test: testLeaseClose},
}

// testLeaseExclusive: while one dispatcher holds a session's lease, another
// waits for it — without polling — and gets it, with a greater token, when
// it is released.
func testLeaseExclusive(t *testing.T, e *env) {
	s := session("team-a", 1)
	a := acquire(t, e.st, s, "dispatcher-a")
	waiter := startAcquire(t, e.peer(t), s, "dispatcher-b", 1)
	if waiter.returned() {
		t.Fatalf("Acquire returned (%+v, %v) while dispatcher-a holds the lease", waiter.lease, waiter.err)
	}
	release(t, e.st, a)
	b := waiter.granted(t)
	if b.Owner != "dispatcher-b" || b.Token <= a.Token {
		t.Fatalf("lease after release = %+v, want dispatcher-b's with a token above %d", b, a.Token)
	}
	if !b.Expires.Equal(e.clock.Now().Add(ttl)) {
		t.Fatalf("lease expires %s, want now + ttl = %s", b.Expires, e.clock.Now().Add(ttl))
	}
}

// testLeaseFIFO: turns of one session wait for its lease in arrival order,
// whichever owner they come from — the same owner waits like any other.
func testLeaseFIFO(t *testing.T, e *env) {
	s := session("team-a", 1)
	held := acquire(t, e.st, s, "dispatcher-a")
	owners := []string{"dispatcher-a", "dispatcher-b", "dispatcher-a"}
	var waiters []*pendingAcquire
	for i, owner := range owners {
		waiters = append(waiters, startAcquire(t, e.st, s, owner, i+1))
	}
	for i := range waiters {
		release(t, e.st, held)
		got := firstReturned(t, waiters[i:])
		if got != 0 {
			t.Fatalf("grant %d went to waiter %d, want waiter %d (arrival order)", i, i+got, i)
		}
		held = waiters[i].granted(t)
		if held.Owner != owners[i] {
			t.Fatalf("grant %d went to %s, want %s", i, held.Owner, owners[i])
		}
	}
}

// firstReturned waits until one of waiters returns and gives its index.
func firstReturned(t *testing.T, waiters []*pendingAcquire) int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for i, w := range waiters {
			if w.returned() {
				return i
			}
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("none of %d waiting Acquires returned within %s", len(waiters), timeout)
	return -1
}

// testLeaseWaiterGivesUp: a turn that stops waiting (its client left) leaves
// the queue; the next one is not stuck behind it.
func testLeaseWaiterGivesUp(t *testing.T, e *env) {
	s := session("team-a", 1)
	held := acquire(t, e.st, s, "dispatcher-a")
	first := startAcquire(t, e.st, s, "dispatcher-b", 1)
	second := startAcquire(t, e.st, s, "dispatcher-c", 2)
	first.cancel()
	if err := first.wait(t); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Acquire returned %v, want context.Canceled", err)
	}
	release(t, e.st, held)
	if got := second.granted(t); got.Owner != "dispatcher-c" {
		t.Fatalf("lease went to %+v, want dispatcher-c", got)
	}
}

// testLeaseExpiry: a holder that stops renewing loses the session when its
// lease expires: the waiter gets it at the expiry (woken by the clock, not
// by polling), and the old holder can neither renew nor release it.
func testLeaseExpiry(t *testing.T, e *env) {
	s := session("team-a", 1)
	a := acquire(t, e.st, s, "dispatcher-a")
	waiter := startAcquire(t, e.peer(t), s, "dispatcher-b", 1)
	e.clock.Step(ttl - time.Second)
	if waiter.returned() {
		t.Fatalf("Acquire returned (%+v, %v) before the lease expired", waiter.lease, waiter.err)
	}
	e.clock.Step(time.Second)
	b := waiter.granted(t)
	if b.Token <= a.Token || !b.Expires.Equal(a.Expires.Add(ttl)) {
		t.Fatalf("lease after takeover = %+v, want a token above %d, granted at the expiry %s", b, a.Token, a.Expires)
	}
	_, err := e.st.Renew(context.Background(), a, ttl)
	wantErr(t, "Renew of a lease taken over", err, store.ErrFenced)
	wantErr(t, "Release of a lease taken over", e.st.Release(context.Background(), a), store.ErrFenced)
	// The failed Release changed nothing: dispatcher-b still holds it.
	next := startAcquire(t, e.st, s, "dispatcher-c", 1)
	release(t, e.st, b)
	if got := next.granted(t); got.Token <= b.Token {
		t.Fatalf("token after dispatcher-b's release = %d, want above %d", got.Token, b.Token)
	}
}

// testLeaseRenew: Renew moves the expiry to ttl from now, also for a lease
// that already expired if nobody took the session meanwhile; a waiter waits
// for the renewed expiry.
func testLeaseRenew(t *testing.T, e *env) {
	s := session("team-a", 1)
	a := acquire(t, e.st, s, "dispatcher-a")
	e.clock.Step(2 * ttl) // expired, nobody waiting
	renewed, err := e.st.Renew(context.Background(), a, ttl)
	if err != nil {
		t.Fatalf("Renew of an expired lease nobody took: %v", err)
	}
	if renewed.Token != a.Token || !renewed.Expires.Equal(e.clock.Now().Add(ttl)) {
		t.Fatalf("renewed = %+v, want token %d expiring at %s", renewed, a.Token, e.clock.Now().Add(ttl))
	}
	waiter := startAcquire(t, e.peer(t), s, "dispatcher-b", 1)
	e.clock.Step(ttl - time.Second)
	if waiter.returned() {
		t.Fatalf("Acquire returned (%+v, %v) before the renewed lease expired", waiter.lease, waiter.err)
	}
	e.clock.Step(time.Second)
	if got := waiter.granted(t); got.Token <= a.Token || !got.Expires.Equal(renewed.Expires.Add(ttl)) {
		t.Fatalf("lease after the renewed one expired = %+v, want a token above %d, granted at %s", got, a.Token, renewed.Expires)
	}
}

// testLeaseDurable: a held lease and the session's tokens survive a restart:
// after it, the lease is still held until it expires, and the next grant's
// token is above every earlier one.
func testLeaseDurable(t *testing.T, e *env) {
	s := session("team-a", 1)
	first := acquire(t, e.st, s, "dispatcher-a")
	release(t, e.st, first)
	second := acquire(t, e.st, s, "dispatcher-a")
	if second.Token <= first.Token {
		t.Fatalf("second token %d is not above the first %d", second.Token, first.Token)
	}
	st := e.reopen(t)
	waiter := startAcquire(t, st, s, "dispatcher-b", 1)
	if waiter.returned() {
		t.Fatalf("Acquire after restart returned (%+v, %v) while the lease is held", waiter.lease, waiter.err)
	}
	e.clock.Step(ttl)
	if got := waiter.granted(t); got.Token <= second.Token {
		t.Fatalf("token after restart = %d, want above %d", got.Token, second.Token)
	}
}

// testLeaseClose: closing the Store ends a waiting Acquire with ErrClosed.
func testLeaseClose(t *testing.T, e *env) {
	s := session("team-a", 1)
	acquire(t, e.st, s, "dispatcher-a")
	waiter := startAcquire(t, e.st, s, "dispatcher-b", 1)
	if err := e.st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	wantErr(t, "Acquire waiting at Close", waiter.wait(t), store.ErrClosed)
	_, err := e.st.Acquire(context.Background(), s, "dispatcher-b", ttl)
	wantErr(t, "Acquire after Close", err, store.ErrClosed)
}
