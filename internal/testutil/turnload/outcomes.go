package turnload

import (
	"fmt"
	"maps"
	"time"
)

// What the load's record says, for the campaigns: which turns run, where,
// and how they ended.

// Running are the turns posted and not ended.
func (l *Load) Running() map[string]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]bool, len(l.posted))
	for id := range l.posted {
		out[id] = true
	}
	return out
}

// RunningOn are the turns claimed on the replica and not ended.
func (l *Load) RunningOn(name string) map[string]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.runningOnLocked(name)
}

func (l *Load) runningOnLocked(name string) map[string]bool {
	out := map[string]bool{}
	for id, r := range l.claimedOn {
		if r == name {
			out[id] = true
		}
	}
	return out
}

// RunningOnSettled is RunningOn once no POST to the replica is still
// waiting for its answer: call it after Remove, so that a turn posted to the
// replica just before it left is counted once it starts there.
func (l *Load) RunningOnSettled(name string, timeout time.Duration) (map[string]bool, error) {
	err := l.waitFor(timeout, func() error {
		for id, r := range l.postingTo {
			if r == name {
				return fmt.Errorf("turn %s is still being posted to replica %s", id, name)
			}
		}
		return nil
	})
	return l.RunningOn(name), err
}

// WaitRunning waits until at least n turns claimed on the replica run.
func (l *Load) WaitRunning(name string, n int, timeout time.Duration) error {
	return l.waitFor(timeout, func() error {
		if got := len(l.runningOnLocked(name)); got < n {
			return fmt.Errorf("%d turns run on replica %s, waited for %d", got, name, n)
		}
		return nil
	})
}

// WaitEnded waits until every turn in ids has an outcome.
func (l *Load) WaitEnded(ids map[string]bool, timeout time.Duration) error {
	return l.waitFor(timeout, func() error {
		left := 0
		for id := range ids {
			if _, ok := l.outcomes[id]; !ok {
				left++
			}
		}
		if left > 0 {
			return fmt.Errorf("%d of %d turns have not ended", left, len(ids))
		}
		return nil
	})
}

// waitFor waits until pending (called under l.mu) returns nil, and returns
// its last error once timeout has passed.
func (l *Load) waitFor(timeout time.Duration, pending func() error) error {
	deadline := time.Now().Add(timeout)
	wake := time.AfterFunc(timeout, func() {
		l.mu.Lock()
		l.changed.Broadcast()
		l.mu.Unlock()
	})
	defer wake.Stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		err := pending()
		if err == nil {
			return nil
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("after %s: %w", timeout, err)
		}
		l.changed.Wait()
	}
}

// Ended reports whether turn runID has an outcome.
func (l *Load) Ended(runID string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.outcomes[runID]
	return ok
}

// Outcomes are the ended turns by runId.
func (l *Load) Outcomes() map[string]Outcome {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.outcomes)
}

// Timed is how many turns were posted with a timeoutMs (SetTurnTimeout).
func (l *Load) Timed() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.timeouts)
}

// Refusals counts the answers a gateway waited out (Retry-After) and posted
// its turn again after, by "<status> <code>".
func (l *Load) Refusals() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.refusals)
}
