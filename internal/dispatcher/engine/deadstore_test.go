package engine

import (
	"context"
	"encoding/json"
	"time"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// deadStore is the store of a dispatcher process that died, for the specs
// that leave a native turn running with nobody following it. Once killed,
// every write the engine makes through it — its runs' events and end, the
// transcript, the lease — waits until the spec is over: a dead process never
// writes again, so it can neither record the turn's end nor react to a failed
// write by interrupting the turn (as a live engine whose store broke does).
type deadStore struct {
	store.Store
	dead   chan struct{} // closed by kill
	buried chan struct{} // closed by bury: the writes go on (and fail)
}

func newDeadStore(s store.Store) *deadStore {
	return &deadStore{Store: s, dead: make(chan struct{}), buried: make(chan struct{})}
}

// kill stops every write from now on; bury lets them go on again.
func (s *deadStore) kill() { close(s.dead) }
func (s *deadStore) bury() { close(s.buried) }

// wait blocks a write of a killed store until it is buried.
func (s *deadStore) wait() {
	select {
	case <-s.dead:
		<-s.buried
	default:
	}
}

func (s *deadStore) Claim(lease store.Lease, runID string, digest [32]byte, by store.Requester) (store.Run, store.BeginOutcome, error) {
	r, outcome, err := s.Store.Claim(lease, runID, digest, by)
	if r != nil {
		r = deadRun{Run: r, store: s}
	}
	return r, outcome, err
}

func (s *deadStore) AppendTranscript(session string, records ...json.RawMessage) error {
	s.wait()
	return s.Store.AppendTranscript(session, records...)
}

func (s *deadStore) SyncTranscript(session string) error {
	s.wait()
	return s.Store.SyncTranscript(session)
}

func (s *deadStore) Renew(ctx context.Context, lease store.Lease, ttl time.Duration) (store.Lease, error) {
	s.wait()
	return s.Store.Renew(ctx, lease, ttl)
}

func (s *deadStore) Release(ctx context.Context, lease store.Lease) error {
	s.wait()
	return s.Store.Release(ctx, lease)
}

func (s *deadStore) Unreserve(ctx context.Context, server, session string) error {
	s.wait()
	return s.Store.Unreserve(ctx, server, session)
}

// deadRun is a run handle of a deadStore.
type deadRun struct {
	store.Run
	store *deadStore
}

func (r deadRun) Append(typ string, payload json.RawMessage) (int64, error) {
	r.store.wait()
	return r.Run.Append(typ, payload)
}

func (r deadRun) Finish(state store.State, result json.RawMessage) error {
	r.store.wait()
	return r.Run.Finish(state, result)
}
