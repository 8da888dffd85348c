package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// Per-session leases (store.Store's Acquire, Renew, Release) are kept in
// memory: a grant, a renewal and a release write nothing. That is safe
// because one process owns the directory (Open's flock): every holder of a
// lease lives in this process and dies with it, so a lease has nobody to
// fence after a crash, and the runs it leaves running are ended by Recover
// (their lease is not held). Two things outlive the process:
//
//   - Tokens. A grant's token is (epoch << 32) + n: the epoch is persisted
//     once per Open (leaseEpochFileName, fsynced before the Journal is
//     returned) and is above every earlier one, so every token of this
//     process is above every token a previous process of the directory gave
//     out, whether it was closed or crashed; n counts the session's grants
//     of this epoch from 1. A session deleted and acquired again counts on
//     from above every deleted session's last token (leaseTable.floor), so
//     its tokens keep growing although its state was dropped.
//   - Held leases at Close. Close writes each held lease to the session's
//     lease.json, and Open reads them back (and removes the files): a
//     restart through Close keeps a lease held until it expires, as a shared
//     store would. After a crash there is no lease.json and no lease is
//     held.
//
// One process owns the directory, but the lease behaves as a shared store's
// would: a grant is decided under the session's fence, exclusive of every
// fenced write, so no write checked against a grant lands after the grant
// changed.

const (
	leaseFileName = "lease.json"
	// leaseEpochFileName is <dir>/lease-epoch: {"epoch":N}, the epoch of the
	// lease tokens of the Journal that last opened the directory.
	leaseEpochFileName = "lease-epoch"
	// leaseEpochShift places the epoch above a session's grant count in a
	// token; maxLeaseEpoch keeps tokens positive int64s.
	leaseEpochShift = 32
	maxLeaseEpoch   = 1<<(63-leaseEpochShift) - 1
	leaseCountMask  = 1<<leaseEpochShift - 1
)

// leaseRecord is lease.json.
type leaseRecord struct {
	Owner   string    `json:"owner"`
	Token   int64     `json:"token"`
	Expires time.Time `json:"expires"`
	Held    bool      `json:"held"`
}

// leaseEpochRecord is lease-epoch.
type leaseEpochRecord struct {
	Epoch int64 `json:"epoch"`
}

// leaseTable holds the lease state of every session that has one.
type leaseTable struct {
	mu       sync.Mutex
	sessions map[string]*leaseState
	// floor is the greatest token of a deleted session's lease, of this
	// process: a session's first grant is above it, so a session acquired
	// again after DeleteSession never gets a token it had before. One
	// number, not one per deleted session, so memory does not grow with
	// deletions; a new session's tokens then start higher, which uses the
	// epoch's count space faster (at most one per grant of the process).
	floor atomic.Int64
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

// grant gives the lease to owner if w is still first and the lease free.
func (j *Journal) grant(ls *leaseState, w *leaseWaiter, owner string, ttl time.Duration) (store.Lease, bool, error) {
	ls.fence.Lock()
	defer ls.fence.Unlock()
	var lease store.Lease
	// Under the session's lock, as DeleteSession decides: a grant is either
	// before the deletion (which then refuses the held lease) or sees it.
	err := j.withSession(ls.session, func(*sessionState) error {
		ls.mu.Lock()
		now := j.now()
		if ls.deleted {
			ls.mu.Unlock()
			return errLeaseDeleted
		}
		if j.closed.Load() { // Close keeps only the grants made before it
			ls.mu.Unlock()
			return store.ErrClosed
		}
		if ls.queue[0] != w || (ls.rec.Held && now.Before(ls.rec.Expires)) {
			ls.mu.Unlock()
			return nil
		}
		prev := ls.rec.Token
		if prev == 0 {
			// The session's first grant (or first since DeleteSession,
			// which raised the floor under the session's lock).
			prev = j.leases.floor.Load()
		}
		token, err := j.nextLeaseToken(prev)
		if err != nil {
			ls.mu.Unlock()
			return err
		}
		ls.rec = leaseRecord{Owner: owner, Token: token, Expires: now.Add(ttl), Held: true}
		ls.mu.Unlock()
		lease = store.Lease{Session: ls.session, Owner: owner, Token: token, Expires: now.Add(ttl)}
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

// Holds implements store.Store from memory, under the session's lease lock:
// it creates no lease state and writes nothing.
func (j *Journal) Holds(_ context.Context, session string, token int64) (bool, error) {
	if err := ValidateSession(session); err != nil {
		return false, err
	}
	if token <= 0 {
		return false, fmt.Errorf("%w: token %d of session %s: want the positive Token Acquire returned", store.ErrInvalidLease, token, session)
	}
	if j.closed.Load() {
		return false, store.ErrClosed
	}
	t := &j.leases
	t.mu.Lock()
	ls := t.sessions[session]
	t.mu.Unlock()
	if ls == nil {
		return false, nil
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return !ls.deleted && ls.rec.Held && ls.rec.Token == token, nil
}

// changeLease applies change to the session's grant if lease is it, wakes
// the waiters and returns the new record.
func (j *Journal) changeLease(lease store.Lease, change func(*leaseRecord, time.Time)) (leaseRecord, error) {
	ls, err := j.leaseOf(lease.Session)
	if err != nil {
		return leaseRecord{}, err
	}
	ls.fence.Lock()
	defer ls.fence.Unlock()
	var rec leaseRecord
	err = j.withSession(ls.session, func(*sessionState) error {
		ls.mu.Lock()
		defer ls.mu.Unlock()
		if j.closed.Load() { // Close keeps the lease as it was
			return store.ErrClosed
		}
		if !ls.currentLocked(lease) {
			return fenced(lease, ls.rec, ls.deleted)
		}
		change(&ls.rec, j.now())
		rec = ls.rec
		ls.broadcastLocked()
		return nil
	})
	return rec, err
}

// nextLeaseToken is the token of a session's grant after the one whose
// token was prev: the next of this epoch, or this epoch's first.
func (j *Journal) nextLeaseToken(prev int64) (int64, error) {
	if prev>>leaseEpochShift < j.leaseEpoch {
		return j.leaseEpoch<<leaseEpochShift + 1, nil
	}
	if prev&leaseCountMask == leaseCountMask {
		// 4 294 967 295 grants of one session in one process: refuse
		// rather than give a token out twice; a restart starts an epoch.
		return 0, fmt.Errorf("the lease tokens of epoch %d are used up (restart the dispatcher)", j.leaseEpoch)
	}
	return prev + 1, nil
}

// openLeases runs inside Open, after loadSessionFiles: it persists a lease
// epoch above the last one and above every token read back from lease.json,
// and then removes those files, whose leases now live in memory. maxToken is
// the greatest token read back.
func (j *Journal) openLeases(maxToken int64, leaseFiles []string) error {
	path := filepath.Join(j.dir, leaseEpochFileName)
	removeTemp(path)
	var last leaseEpochRecord
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("read %s: %w", path, err)
	default:
		if err := json.Unmarshal(data, &last); err != nil || last.Epoch < 0 {
			return fmt.Errorf("%s is damaged (%q): it holds the epoch of the sessions' lease tokens, which must grow; "+
				`write {"epoch":N} with N above every epoch it held`, path, bytes.TrimSpace(data))
		}
	}
	epoch := max(last.Epoch, maxToken>>leaseEpochShift) + 1
	if epoch > maxLeaseEpoch {
		return fmt.Errorf("%s: the lease token epochs are used up (%d)", path, last.Epoch)
	}
	data, err = json.Marshal(leaseEpochRecord{Epoch: epoch})
	if err != nil {
		return err
	}
	// Durable before any grant: a token of this epoch must never be given
	// out again by a later process.
	if err := j.writeFile(path+tmpExt, append(data, '\n')); err != nil {
		removeTemp(path)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(path+tmpExt, path); err != nil {
		removeTemp(path)
		return fmt.Errorf("replace %s: %w", path, err)
	}
	if err := j.syncDir(j.dir); err != nil {
		return err
	}
	j.leaseEpoch = epoch
	// Removed without an fsync: one that comes back after a crash holds a
	// token below the epoch and a lease whose holder is gone, as any read
	// back at Open.
	for _, f := range leaseFiles {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", f, err)
		}
	}
	return nil
}

// writeHeldLeases writes each held lease to its session's lease.json, for
// the next Open; Close calls it once no grant can change any more.
func (j *Journal) writeHeldLeases() error {
	j.leases.mu.Lock()
	states := slices.Collect(maps.Values(j.leases.sessions))
	j.leases.mu.Unlock()
	var errs []error
	for _, ls := range states {
		j.mu.Lock()
		s := j.sessionLocked(ls.session)
		j.mu.Unlock()
		s.mu.Lock()
		ls.mu.Lock()
		rec, held := ls.rec, ls.rec.Held && !ls.deleted && !s.deleted
		ls.mu.Unlock()
		if held {
			if err := j.writeLease(s, rec); err != nil {
				errs = append(errs, fmt.Errorf("keep the held lease of session %s: %w", ls.session, err))
			}
		}
		s.mu.Unlock()
	}
	return errors.Join(errs...)
}

// writeLease replaces the session's lease.json; s.mu must be held.
func (j *Journal) writeLease(s *sessionState, rec leaseRecord) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return j.replaceSessionFile(s, leaseFileName, append(data, '\n'))
}

// leaseSessions lists the sessions with a lease granted or read back.
func (j *Journal) leaseSessions() []string {
	t := &j.leases
	t.mu.Lock()
	defer t.mu.Unlock()
	var keys []string
	for session, ls := range t.sessions {
		ls.mu.Lock()
		if !ls.deleted && ls.rec.Token != 0 {
			keys = append(keys, session)
		}
		ls.mu.Unlock()
	}
	return keys
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
	for last := ls.rec.Token; ; {
		floor := t.floor.Load()
		if last <= floor || t.floor.CompareAndSwap(floor, last) {
			break
		}
	}
	ls.broadcastLocked()
	ls.mu.Unlock()
}
