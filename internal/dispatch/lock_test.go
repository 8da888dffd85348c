package dispatch

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/testutil/goroutines"
)

// TestSessionLockSerializesOneSession: a holder of the lock keeps it until
// every other turn of the session is blocked waiting for it (or, if the lock
// were broken, has got in too), so an overlap cannot be missed however the
// goroutines are scheduled.
func TestSessionLockSerializesOneSession(t *testing.T) {
	const turns = 8
	var locks sessionLocks
	var inside, maxInside, finished atomic.Int32
	var wg sync.WaitGroup
	for range turns {
		wg.Go(func() {
			unlock, err := locks.lock(context.Background(), "agents/demo")
			if err != nil {
				t.Error(err)
				return
			}
			n := inside.Add(1)
			for {
				m := maxInside.Load()
				if n <= m || maxInside.CompareAndSwap(m, n) {
					break
				}
			}
			// Hold the lock until every turn still to run waits for it.
			deadline := time.Now().Add(10 * time.Second)
			for inside.Load() == 1 && goroutines.BlockedIn("(*sessionLocks).lock") < turns-1-int(finished.Load()) {
				if time.Now().After(deadline) {
					t.Errorf("%d turns blocked on the lock, want %d", goroutines.BlockedIn("(*sessionLocks).lock"), turns-1-int(finished.Load()))
					break
				}
				time.Sleep(time.Millisecond)
			}
			inside.Add(-1)
			finished.Add(1)
			unlock()
			unlock() // releasing twice is harmless
		})
	}
	wg.Wait()
	if maxInside.Load() != 1 {
		t.Fatalf("%d turns of one session ran at once, want 1", maxInside.Load())
	}
	if len(locks.locks) != 0 {
		t.Fatalf("idle sessions are kept: %v", locks.locks)
	}
}

func TestSessionLockOtherSessionsDoNotWait(t *testing.T) {
	var locks sessionLocks
	unlock, err := locks.lock(context.Background(), "agents/a")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	unlockB, err := locks.lock(ctx, "agents/b")
	if err != nil {
		t.Fatalf("another session waited: %v", err)
	}
	unlockB()
}

func TestSessionLockWaiterGivesUpWithItsContext(t *testing.T) {
	var locks sessionLocks
	unlock, err := locks.lock(context.Background(), "agents/demo")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := locks.lock(ctx, "agents/demo"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	unlock()
	if len(locks.locks) != 0 {
		t.Fatalf("a waiter that gave up left its entry: %v", locks.locks)
	}
}
