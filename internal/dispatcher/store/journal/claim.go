package journal

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// Claim implements store.Store: Begin under the session's lease. The lease
// is checked with its fence held shared, so no grant changes while the begin
// record is written, and a BeginNew handle keeps checking it at every Append
// and Finish (Run.holdLease).
func (j *Journal) Claim(lease store.Lease, runID string, digest [32]byte, by store.Requester) (store.Run, store.BeginOutcome, error) {
	if err := validLease(lease); err != nil {
		return nil, 0, err
	}
	ls, err := j.leaseOf(lease.Session)
	if err != nil {
		return nil, 0, err
	}
	binding := &leaseBinding{ls: ls, lease: lease}
	unfence, err := binding.hold()
	if err != nil {
		return nil, 0, fmt.Errorf("journal: claim run %q: %w", runID, err)
	}
	defer unfence()
	r, outcome, err := j.begin(lease.Session, runID, digest, by)
	if err != nil {
		return nil, 0, err
	}
	if outcome == BeginNew {
		r.lease = binding
	}
	return r, outcome, nil
}

// leaseBinding ties a run claimed under a lease to that grant.
type leaseBinding struct {
	ls    *leaseState
	lease store.Lease
}

// hold checks that the run's grant is current and keeps it so (fence held
// shared) until the returned function is called.
func (b *leaseBinding) hold() (func(), error) {
	b.ls.fence.RLock()
	b.ls.mu.Lock()
	ok, rec, deleted := b.ls.currentLocked(b.lease), b.ls.rec, b.ls.deleted
	b.ls.mu.Unlock()
	if !ok {
		b.ls.fence.RUnlock()
		return nil, fenced(b.lease, rec, deleted)
	}
	return b.ls.fence.RUnlock, nil
}

// holdLease is hold for the run's lease; a run begun without one (Begin)
// is not fenced.
func (r *Run) holdLease() (func(), error) {
	if r.lease == nil {
		return func() {}, nil
	}
	release, err := r.lease.hold()
	if err != nil {
		return nil, fmt.Errorf("journal: run %q: %w", r.rs.key.runID, err)
	}
	return release, nil
}

// FindRun implements store.Store with Lookup.
func (j *Journal) FindRun(session, runID string) (store.Run, error) {
	r, err := j.Lookup(session, runID)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Recover implements store.Store. Each session is decided and recovered with
// its fence held exclusively: no fenced write, claim or grant of the session
// happens in between.
func (j *Journal) Recover(_ context.Context, owner, reason string) ([]store.RunRef, error) {
	if owner == "" {
		return nil, fmt.Errorf("%w: Recover needs the owner whose leases to recover", store.ErrInvalidLease)
	}
	return j.takeOver(owner, reason)
}

// Sweep implements store.Store: Recover's takeover for no owner, so that
// only the runs of expired or free leases are ended and no live lease is
// released.
func (j *Journal) Sweep(_ context.Context, reason string) ([]store.RunRef, error) {
	return j.takeOver("", reason)
}

// takeOver ends the running runs whose lease is owner's, expired or not
// held, and releases owner's leases; an empty owner holds none (Sweep).
func (j *Journal) takeOver(owner, reason string) ([]store.RunRef, error) {
	if j.closed.Load() {
		return nil, store.ErrClosed
	}
	running := map[string][]store.RunRef{}
	for _, ref := range j.Running() {
		running[ref.Session] = append(running[ref.Session], ref)
	}
	sessions := map[string]bool{}
	for s := range running {
		sessions[s] = true
	}
	j.leases.mu.Lock()
	for s, ls := range j.leases.sessions {
		ls.mu.Lock()
		if ls.rec.Held && ls.rec.Owner == owner {
			sessions[s] = true
		}
		ls.mu.Unlock()
	}
	j.leases.mu.Unlock()

	var ended []store.RunRef
	var errs []error
	for _, session := range slices.Sorted(maps.Keys(sessions)) {
		refs, err := j.recoverSession(session, owner, reason, running[session])
		ended = append(ended, refs...)
		if errors.Is(err, store.ErrClosed) {
			return ended, err
		}
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return ended, fmt.Errorf("journal: recover: %w", err)
	}
	return ended, nil
}

// recoverSession ends the session's running runs if its lease is owner's,
// expired or not held, and releases that lease if it is owner's or a run
// was ended under it: an expired lease of an idle session is left to its
// holder until someone acquires the session.
func (j *Journal) recoverSession(session, owner, reason string, running []store.RunRef) ([]store.RunRef, error) {
	ls, err := j.leaseOf(session)
	if err != nil {
		return nil, err
	}
	ls.fence.Lock()
	defer ls.fence.Unlock()
	ls.mu.Lock()
	rec := ls.rec
	ls.mu.Unlock()
	if rec.Held && rec.Owner != owner && j.now().Before(rec.Expires) {
		return nil, nil // its holder is alive, or will be recoverable when the lease expires
	}
	var ended []store.RunRef
	var errs []error
	for _, ref := range running {
		switch err := j.MarkFailed(ref, reason); {
		case err == nil:
			ended = append(ended, ref)
		case !errors.Is(err, store.ErrRunEnded):
			errs = append(errs, err)
		}
	}
	if rec.Held && (rec.Owner == owner || len(ended) > 0) {
		err := j.withSession(session, func(*sessionState) error {
			ls.mu.Lock()
			defer ls.mu.Unlock()
			if ls.deleted { // the session went with its lease (DeleteSession, under s.mu)
				return nil
			}
			rec.Held, rec.Expires = false, j.now()
			ls.rec = rec
			ls.broadcastLocked()
			return nil
		})
		errs = append(errs, err)
	}
	return ended, errors.Join(errs...)
}
