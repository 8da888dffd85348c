package dispatch

import (
	"context"
	"sync"
)

// sessionLocks serializes turns per session: one turn at a time, the next
// waiting in arrival order until the lock frees or its context ends. Entries
// are dropped when nobody holds or waits for them, so the map stays as large
// as the number of busy sessions.
type sessionLocks struct {
	mu    sync.Mutex
	locks map[string]*sessionLock
}

type sessionLock struct {
	ch   chan struct{} // holds one token while the session is locked
	refs int           // holders and waiters
}

// lock blocks until the session's lock is held or ctx ends; the returned
// function releases it.
func (l *sessionLocks) lock(ctx context.Context, session string) (func(), error) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*sessionLock{}
	}
	sl := l.locks[session]
	if sl == nil {
		sl = &sessionLock{ch: make(chan struct{}, 1)}
		l.locks[session] = sl
	}
	sl.refs++
	l.mu.Unlock()

	select {
	case sl.ch <- struct{}{}:
		var once sync.Once
		return func() {
			once.Do(func() {
				<-sl.ch
				l.release(session, sl)
			})
		}, nil
	case <-ctx.Done():
		l.release(session, sl)
		return nil, ctx.Err()
	}
}

func (l *sessionLocks) release(session string, sl *sessionLock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	sl.refs--
	if sl.refs == 0 {
		delete(l.locks, session)
	}
}
