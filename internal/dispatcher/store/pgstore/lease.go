package pgstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// queues keeps the Acquires of this Store waiting for each session's lease
// in arrival order: only the first asks the database, so they are granted
// in that order. Waiters of different Stores race at the database.
type queues struct {
	mu sync.Mutex
	q  map[string][]*waiter
}

type waiter struct {
	first chan struct{} // closed when the waiter is first in its queue
}

func newQueues() *queues { return &queues{q: map[string][]*waiter{}} }

func (qs *queues) join(session string) *waiter {
	w := &waiter{first: make(chan struct{})}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	qs.q[session] = append(qs.q[session], w)
	if len(qs.q[session]) == 1 {
		close(w.first)
	}
	return w
}

func (qs *queues) leave(session string, w *waiter) {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	q := qs.q[session]
	for i, x := range q {
		if x != w {
			continue
		}
		q = append(q[:i:i], q[i+1:]...)
		if i == 0 && len(q) > 0 {
			close(q[0].first)
		}
		break
	}
	if len(q) == 0 {
		delete(qs.q, session)
	} else {
		qs.q[session] = q
	}
}

func validLease(lease store.Lease) error {
	if err := store.ValidateSession(lease.Session); err != nil {
		return err
	}
	if lease.Owner == "" || lease.Token <= 0 {
		return fmt.Errorf("%w: no Acquire returned %+v", store.ErrInvalidLease, lease)
	}
	return nil
}

// Acquire grants the session's lease to owner, waiting — first in this
// Store's queue, then for a notification that the lease was freed or for
// its expiry — while another grant holds it. Expiry is measured on the
// database's clock (leaseNow); only the remaining time is waited for on the
// Store's.
func (s *Store) Acquire(ctx context.Context, session, owner string, ttl time.Duration) (store.Lease, error) {
	if err := s.check(); err != nil {
		return store.Lease{}, err
	}
	if err := store.ValidateSession(session); err != nil {
		return store.Lease{}, err
	}
	if owner == "" || ttl <= 0 {
		return store.Lease{}, fmt.Errorf("%w: owner %q, ttl %s: want an owner and a positive ttl", store.ErrInvalidLease, owner, ttl)
	}
	w := s.queues.join(session)
	defer s.queues.leave(session, w)
	freed, unsubscribe := s.hub.wake(leaseKey(session))
	defer unsubscribe()
	select {
	case <-w.first:
	case <-ctx.Done():
		return store.Lease{}, ctx.Err()
	case <-s.closed:
		return store.Lease{}, store.ErrClosed
	}
	for {
		lease, wait, err := s.tryAcquire(ctx, session, owner, ttl)
		if err != nil || lease.Token != 0 {
			return lease, err
		}
		if wait <= 0 {
			continue // expired since: ask again
		}
		timer := s.opts.Clock.NewTimer(wait)
		select {
		case <-freed:
		case <-timer.C():
		case <-ctx.Done():
			timer.Stop()
			return store.Lease{}, ctx.Err()
		case <-s.closed:
			timer.Stop()
			return store.Lease{}, store.ErrClosed
		}
		timer.Stop()
	}
}

// tryAcquire grants the lease when it is free or expired, with a new token;
// otherwise it returns how long the current grant still lives. Both are
// decided on the database's clock, so a replica whose own clock runs ahead
// cannot take a grant that is still live.
func (s *Store) tryAcquire(ctx context.Context, session, owner string, ttl time.Duration) (store.Lease, time.Duration, error) {
	var (
		token   int64
		expires time.Time
	)
	err := s.pool.QueryRow(ctx, `INSERT INTO leases (session, owner, token, expires)
		VALUES ($1, $2, nextval('lease_tokens'), `+leaseNow(4)+` + $3::bigint * interval '1 microsecond')
		ON CONFLICT (session) DO UPDATE SET owner = EXCLUDED.owner, token = EXCLUDED.token, expires = EXCLUDED.expires
		WHERE leases.expires <= `+leaseNow(4)+`
		RETURNING token, expires`, session, owner, ttl.Microseconds(), s.leaseClock()).Scan(&token, &expires)
	if err == nil {
		return store.Lease{Session: session, Owner: owner, Token: token, Expires: expires.UTC()}, 0, nil
	}
	if !isNoRows(err) {
		return store.Lease{}, 0, s.ctxErr(ctx, "acquire lease", err)
	}
	var now time.Time
	err = s.pool.QueryRow(ctx, "SELECT expires, "+leaseNow(2)+" FROM leases WHERE session = $1", session, s.leaseClock()).Scan(&expires, &now)
	switch {
	case isNoRows(err):
		return store.Lease{}, 0, nil // released since: ask again at once
	case err != nil:
		return store.Lease{}, 0, s.ctxErr(ctx, "acquire lease", err)
	}
	return store.Lease{}, expires.Sub(now), nil
}

// ctxErr maps a failed query of a call with a context: the context's error
// when it ended, ErrClosed when the Store closed.
func (s *Store) ctxErr(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return s.dbErr(what, err)
}

// Renew extends the grant while it is still the session's current one.
func (s *Store) Renew(ctx context.Context, lease store.Lease, ttl time.Duration) (store.Lease, error) {
	if err := s.check(); err != nil {
		return store.Lease{}, err
	}
	if err := validLease(lease); err != nil {
		return store.Lease{}, err
	}
	if ttl <= 0 {
		return store.Lease{}, fmt.Errorf("%w: ttl %s is not positive", store.ErrInvalidLease, ttl)
	}
	var expires time.Time
	err := s.pool.QueryRow(ctx, "UPDATE leases SET expires = "+leaseNow(4)+" + $3::bigint * interval '1 microsecond' WHERE session = $1 AND token = $2 RETURNING expires",
		lease.Session, lease.Token, ttl.Microseconds(), s.leaseClock()).Scan(&expires)
	switch {
	case isNoRows(err):
		return store.Lease{}, errFenced(lease.Session)
	case err != nil:
		return store.Lease{}, s.ctxErr(ctx, "renew lease", err)
	}
	lease.Expires = expires.UTC()
	return lease, nil
}

// Release deletes the grant and notifies the session's waiters, in every
// Store.
func (s *Store) Release(ctx context.Context, lease store.Lease) error {
	if err := s.check(); err != nil {
		return err
	}
	if err := validLease(lease); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `WITH d AS (DELETE FROM leases WHERE session = $1 AND token = $2 RETURNING session)
		SELECT pg_notify('`+leaseChannel+`', session) FROM d`, lease.Session, lease.Token)
	// This Store's next waiter asks at once, even when the write failed:
	// it then waits for the stored grant to expire.
	s.hub.notify(leaseKey(lease.Session), "free")
	if err != nil {
		return s.ctxErr(ctx, "release lease", err)
	}
	if tag.RowsAffected() == 0 {
		return errFenced(lease.Session)
	}
	return nil
}

// holdsQuery is Holds' statement: $1 the session, $2 the token.
const holdsQuery = "SELECT EXISTS (SELECT 1 FROM leases WHERE session = $1 AND token = $2)"

// Holds reads whether the session's lease row carries token: one SELECT on
// the leases table's primary key. Release, Recover, Sweep and DeleteSession
// delete the row and a takeover replaces its token, so only the current
// grant's token is found; an expired row keeps it until then.
func (s *Store) Holds(ctx context.Context, session string, token int64) (bool, error) {
	if err := s.check(); err != nil {
		return false, err
	}
	if err := store.ValidateSession(session); err != nil {
		return false, err
	}
	if token <= 0 {
		return false, fmt.Errorf("%w: token %d of session %s: want the positive Token Acquire returned", store.ErrInvalidLease, token, session)
	}
	var holds bool
	err := s.pool.QueryRow(ctx, holdsQuery, session, token).Scan(&holds)
	if err != nil {
		return false, s.ctxErr(ctx, "holds", err)
	}
	return holds, nil
}
