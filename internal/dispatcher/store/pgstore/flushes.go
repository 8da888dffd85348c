package pgstore

import "sync"

// unflushed tracks the transcript appends this Store committed without
// waiting for their WAL flush, so that SyncTranscript flushes only when no
// synchronous commit has carried them to the disk since. A synchronous
// commit flushes the WAL up to its own commit record, which follows every
// commit that returned before it was sent: the WAL is written in order.
type unflushed struct {
	mu       sync.Mutex
	commits  uint64            // asynchronous commits so far
	flushed  uint64            // every commit numbered up to it is durable
	sessions map[string]uint64 // session → the number of its latest commit not known durable
}

func newUnflushed() *unflushed { return &unflushed{sessions: map[string]uint64{}} }

// committed records an asynchronous commit of session's transcript that
// has returned.
func (u *unflushed) committed(session string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.commits++
	u.sessions[session] = u.commits
}

// mark is taken before a synchronous commit is sent; flushedTo(mark) once
// it has returned.
func (u *unflushed) mark() uint64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.commits
}

func (u *unflushed) flushedTo(mark uint64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.flushed = max(u.flushed, mark)
	for session, n := range u.sessions {
		if n <= u.flushed {
			delete(u.sessions, session)
		}
	}
}

// pending reports whether session has a commit not known durable.
func (u *unflushed) pending(session string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	n, ok := u.sessions[session]
	return ok && n > u.flushed
}
