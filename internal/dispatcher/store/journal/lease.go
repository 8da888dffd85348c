package journal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// Per-session leases (store.Store's Acquire, Renew, Release). A session's
// lease is kept in <session>/lease.json, replaced whole (write to .tmp,
// fsync, rename, fsync the directory) at every grant, renewal and release:
//
//	{"owner":"dispatcher-0","token":7,"expires":"…","held":true}
//
// The token only grows, so it survives restarts; it starts again only for a
// session that DeleteSession removed, and a deleted session's key is never
// used again (keys carry the UID). One process owns the directory, but the
// lease behaves as a shared store's would: a grant is decided and written
// under the session's fence, exclusive of every fenced write, so no write
// checked against a grant lands after the grant changed.

const leaseFileName = "lease.json"

// leaseRecord is lease.json.
type leaseRecord struct {
	Owner   string    `json:"owner"`
	Token   int64     `json:"token"`
	Expires time.Time `json:"expires"`
	Held    bool      `json:"held"`
}

// leaseTable holds the lease state of every session that has one.
type leaseTable struct {
	mu       sync.Mutex
	sessions map[string]*leaseState
}

// leaseState is one session's lease.
//
// Locks: fence before Journal.mu before sessionState.mu before mu.
type leaseState struct {
	session string
	// fence is held shared by a fenced write (Claim, Append, Finish of a
	// claimed run) for the whole write, and exclusively while the grant
	// changes (grant, renewal, release, Recover).
	fence sync.RWMutex

	mu      sync.Mutex     // guards the fields below; rec changes with fence held too
	rec     leaseRecord    // the current grant, or the last one
	deleted bool           // DeleteSession removed the session: its grants are void
	queue   []*leaseWaiter // waiting Acquires, in arrival order
	changed chan struct{}  // closed when the lease is released or the queue's head leaves
}

// leaseWaiter is one Acquire in a session's queue. It is not zero-sized:
// its address identifies it.
type leaseWaiter struct{ _ byte }

// leaseOf returns the session's lease state, creating an empty one.
func (j *Journal) leaseOf(session string) (*leaseState, error) {
	if j.closed.Load() {
		return nil, store.ErrClosed
	}
	t := &j.leases
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sessions == nil {
		t.sessions = map[string]*leaseState{}
	}
	ls := t.sessions[session]
	if ls == nil {
		ls = &leaseState{session: session}
		t.sessions[session] = ls
	}
	return ls, nil
}

// currentLocked reports whether lease is the session's current grant; ls.mu must
// be held.
func (ls *leaseState) currentLocked(lease store.Lease) bool {
	return !ls.deleted && ls.rec.Held && ls.rec.Token == lease.Token && ls.rec.Owner == lease.Owner
}

// broadcastLocked wakes every waiting Acquire; ls.mu must be held.
func (ls *leaseState) broadcastLocked() {
	if ls.changed != nil {
		close(ls.changed)
		ls.changed = nil
	}
}

func (ls *leaseState) changedLocked() <-chan struct{} {
	if ls.changed == nil {
		ls.changed = make(chan struct{})
	}
	return ls.changed
}

func (ls *leaseState) dequeue(w *leaseWaiter) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for i, q := range ls.queue {
		if q == w {
			ls.queue = append(ls.queue[:i], ls.queue[i+1:]...)
			if i == 0 {
				ls.broadcastLocked() // the next waiter is now first
			}
			return
		}
	}
}

func fenced(lease store.Lease, rec leaseRecord, deleted bool) error {
	switch {
	case deleted:
		return fmt.Errorf("%w: session %s was deleted (lease token %d of %s)", store.ErrFenced, lease.Session, lease.Token, lease.Owner)
	case rec.Token == 0:
		return fmt.Errorf("%w: session %s: no lease was granted (token %d of %s)", store.ErrFenced, lease.Session, lease.Token, lease.Owner)
	case rec.Token != lease.Token || rec.Owner != lease.Owner:
		return fmt.Errorf("%w: session %s: lease token %d of %s was superseded by token %d of %s",
			store.ErrFenced, lease.Session, lease.Token, lease.Owner, rec.Token, rec.Owner)
	}
	return fmt.Errorf("%w: session %s: lease token %d of %s was released", store.ErrFenced, lease.Session, lease.Token, lease.Owner)
}

func validLease(lease store.Lease) error {
	if err := ValidateSession(lease.Session); err != nil {
		return err
	}
	if lease.Owner == "" || lease.Token <= 0 {
		return fmt.Errorf("%w: a Lease of session %s needs the Owner and Token Acquire returned", store.ErrInvalidLease, lease.Session)
	}
	return nil
}

func validLeaseRequest(owner string, ttl time.Duration) error {
	if owner == "" || ttl <= 0 {
		return fmt.Errorf("%w: owner %q and ttl %s: want a non-empty owner and a positive ttl", store.ErrInvalidLease, owner, ttl)
	}
	return nil
}

// Acquire implements store.Store: it waits in arrival order for the
// session's lease to be free — never granted, released or expired — and
// grants it to owner.
func (j *Journal) Acquire(ctx context.Context, session, owner string, ttl time.Duration) (store.Lease, error) {
	if err := ValidateSession(session); err != nil {
		return store.Lease{}, err
	}
	if err := validLeaseRequest(owner, ttl); err != nil {
		return store.Lease{}, err
	}
	for {
		ls, err := j.leaseOf(session)
		if err != nil {
			return store.Lease{}, err
		}
		lease, err := j.awaitGrant(ctx, ls, owner, ttl)
		if errors.Is(err, errLeaseDeleted) {
			continue // DeleteSession removed the state waited on: queue on the new one
		}
		return lease, err
	}
}

// errLeaseDeleted sends Acquire back to the lease table.
var errLeaseDeleted = errors.New("lease state deleted")

// awaitGrant queues for ls and grants it to owner once this call is first
// in the queue and the lease is free.
func (j *Journal) awaitGrant(ctx context.Context, ls *leaseState, owner string, ttl time.Duration) (store.Lease, error) {
	w := new(leaseWaiter)
	ls.mu.Lock()
	ls.queue = append(ls.queue, w)
	ls.mu.Unlock()
	defer ls.dequeue(w)
	for {
		ls.mu.Lock()
		deleted, first := ls.deleted, ls.queue[0] == w
		held, expires := ls.rec.Held, ls.rec.Expires
		changed := ls.changedLocked()
		ls.mu.Unlock()
		if deleted {
			return store.Lease{}, errLeaseDeleted
		}
		if !first {
			if err := j.waitLease(ctx, changed, 0); err != nil {
				return store.Lease{}, err
			}
			continue
		}
		if wait := expires.Sub(j.now()); held && wait > 0 {
			if err := j.waitLease(ctx, changed, wait); err != nil {
				return store.Lease{}, err
			}
			continue
		}
		lease, granted, err := j.grant(ls, w, owner, ttl)
		if err != nil || granted {
			return lease, err
		}
		// Renewed meanwhile: look again.
	}
}

// waitLease waits until changed is closed, expiry (if positive) passed on
// the journal's clock, ctx ended or the journal closed.
func (j *Journal) waitLease(ctx context.Context, changed <-chan struct{}, expiry time.Duration) error {
	var fired <-chan time.Time
	if expiry > 0 {
		timer := j.opts.Clock.NewTimer(expiry)
		defer timer.Stop()
		fired = timer.C()
	}
	select {
	case <-changed:
		return nil
	case <-fired:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-j.closing:
		return store.ErrClosed
	}
}

// grant gives the lease to owner if w is still first and the lease free,
// writing the grant before it is visible.
func (j *Journal) grant(ls *leaseState, w *leaseWaiter, owner string, ttl time.Duration) (store.Lease, bool, error) {
	ls.fence.Lock()
	defer ls.fence.Unlock()
	var lease store.Lease
	err := j.withSession(ls.session, func(s *sessionState) error {
		ls.mu.Lock()
		now := j.now()
		if ls.deleted {
			ls.mu.Unlock()
			return errLeaseDeleted
		}
		if ls.queue[0] != w || (ls.rec.Held && now.Before(ls.rec.Expires)) {
			ls.mu.Unlock()
			return nil
		}
		rec := leaseRecord{Owner: owner, Token: ls.rec.Token + 1, Expires: now.Add(ttl), Held: true}
		ls.mu.Unlock()
		if err := j.writeLease(s, rec); err != nil {
			return err
		}
		ls.mu.Lock()
		ls.rec = rec
		ls.mu.Unlock()
		lease = store.Lease{Session: ls.session, Owner: owner, Token: rec.Token, Expires: rec.Expires}
		return nil
	})
	if err != nil {
		if errors.Is(err, errLeaseDeleted) {
			return store.Lease{}, false, err
		}
		return store.Lease{}, false, fmt.Errorf("journal: acquire the lease of session %s: %w", ls.session, err)
	}
	return lease, lease.Token != 0, nil
}

// Renew implements store.Store.
func (j *Journal) Renew(_ context.Context, lease store.Lease, ttl time.Duration) (store.Lease, error) {
	if err := validLease(lease); err != nil {
		return store.Lease{}, err
	}
	if err := validLeaseRequest(lease.Owner, ttl); err != nil {
		return store.Lease{}, err
	}
	rec, err := j.changeLease(lease, func(rec *leaseRecord, now time.Time) { rec.Expires = now.Add(ttl) })
	if err != nil {
		return store.Lease{}, fmt.Errorf("journal: renew the lease of session %s: %w", lease.Session, err)
	}
	lease.Expires = rec.Expires
	return lease, nil
}

// Release implements store.Store.
func (j *Journal) Release(_ context.Context, lease store.Lease) error {
	if err := validLease(lease); err != nil {
		return err
	}
	_, err := j.changeLease(lease, func(rec *leaseRecord, now time.Time) { rec.Held, rec.Expires = false, now })
	if err != nil {
		return fmt.Errorf("journal: release the lease of session %s: %w", lease.Session, err)
	}
	return nil
}

// changeLease applies change to the session's grant if lease is it, writes
// it, wakes the waiters and returns the new record. A release that cannot be
// written (the file system is full) frees the lease in this process all the
// same and returns the write's error: lease.json keeps the grant, which after
// a restart only makes a successor wait for its expiry, while here the
// session's next turn, or its deletion (DeleteSession refuses a held lease),
// need not.
func (j *Journal) changeLease(lease store.Lease, change func(*leaseRecord, time.Time)) (leaseRecord, error) {
	ls, err := j.leaseOf(lease.Session)
	if err != nil {
		return leaseRecord{}, err
	}
	ls.fence.Lock()
	defer ls.fence.Unlock()
	var rec leaseRecord
	err = j.withSession(ls.session, func(s *sessionState) error {
		ls.mu.Lock()
		if !ls.currentLocked(lease) {
			err := fenced(lease, ls.rec, ls.deleted)
			ls.mu.Unlock()
			return err
		}
		rec = ls.rec
		ls.mu.Unlock()
		change(&rec, j.now())
		werr := j.writeLease(s, rec)
		if werr != nil && rec.Held {
			return werr
		}
		ls.mu.Lock()
		ls.rec = rec
		ls.broadcastLocked()
		ls.mu.Unlock()
		return werr
	})
	return rec, err
}

// writeLease replaces the session's lease.json; s.mu must be held.
func (j *Journal) writeLease(s *sessionState, rec leaseRecord) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return j.replaceSessionFile(s, leaseFileName, append(data, '\n'))
}

// leaseBusyLocked reports whether the session's lease is held and has not
// expired; the session's lock must be held (grants are written under it).
func (j *Journal) leaseBusyLocked(session string) bool {
	t := &j.leases
	t.mu.Lock()
	ls := t.sessions[session]
	t.mu.Unlock()
	if ls == nil {
		return false
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.rec.Held && j.now().Before(ls.rec.Expires)
}

// forgetLease drops a deleted session's lease: its grants are void and its
// waiters queue again on a new state.
func (j *Journal) forgetLease(session string) {
	t := &j.leases
	t.mu.Lock()
	ls := t.sessions[session]
	delete(t.sessions, session)
	t.mu.Unlock()
	if ls == nil {
		return
	}
	ls.mu.Lock()
	ls.deleted = true
	ls.broadcastLocked()
	ls.mu.Unlock()
}
