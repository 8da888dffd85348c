package pgstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// runColumns are what a handle is built from (scanRun).
const runColumns = `id, session, run_id, digest, requester, token, writer, state, started_at,
	finished_at, last_seq, result, reason, pruned, durable_seq`

type runRow struct {
	id       int64
	info     store.RunInfo
	token    int64
	writer   string
	pruned   bool
	finished *time.Time
	durable  int64 // readers are shown the events up to it (groupCommit)
}

func (s *Store) scanRun(row pgx.Row) (runRow, error) {
	var (
		r         runRow
		digest    []byte
		requester []byte
		state     string
		started   time.Time
		result    []byte
	)
	err := row.Scan(&r.id, &r.info.Session, &r.info.RunID, &digest, &requester, &r.token, &r.writer, &state,
		&started, &r.finished, &r.info.LastSeq, &result, &r.info.Reason, &r.pruned, &r.durable)
	if err != nil {
		return runRow{}, err
	}
	copy(r.info.Digest[:], digest)
	if len(requester) > 0 {
		if err := json.Unmarshal(requester, &r.info.Requester); err != nil {
			return runRow{}, fmt.Errorf("requester of run %q: %w", r.info.RunID, err)
		}
	}
	r.info.State = store.State(state)
	r.info.StartedAt = started.UTC()
	if r.finished != nil {
		r.info.FinishedAt = r.finished.UTC()
	}
	if len(result) > 0 {
		r.info.Result = result
	}
	r.info.Recovered = r.info.State == store.StateRunning && r.writer != s.instance
	return r, nil
}

// pruned is the answer for a run of which only the tombstone is kept.
func (s *Store) pruned(r runRow) error {
	e := &store.RunPrunedError{Session: r.info.Session, RunID: r.info.RunID, State: r.info.State,
		FinishedAt: r.info.FinishedAt, LastSeq: r.info.LastSeq}
	if s.opts.MaxAge > 0 {
		e.KeptUntil = r.info.FinishedAt.Add(s.opts.MaxAge)
	}
	return e
}

// Claim records runID under lease, or answers what is recorded for it. The
// session's advisory lock serializes claims of the session across Stores.
func (s *Store) Claim(lease store.Lease, runID string, digest [32]byte, by store.Requester) (store.Run, store.BeginOutcome, error) {
	if err := s.check(); err != nil {
		return nil, 0, err
	}
	if err := validLease(lease); err != nil {
		return nil, 0, err
	}
	if err := store.ValidateRunID(runID); err != nil {
		return nil, 0, err
	}
	requester, err := json.Marshal(by)
	if err != nil {
		return nil, 0, err
	}
	var (
		r       runRow
		outcome store.BeginOutcome
	)
	err = s.tx(func(tx pgx.Tx) error {
		if _, err := tx.Exec(s.ctx, sessionLock, lease.Session); err != nil {
			return err
		}
		var held int
		if err := tx.QueryRow(s.ctx, "SELECT count(*) FROM leases WHERE session = $1 AND token = $2",
			lease.Session, lease.Token).Scan(&held); err != nil {
			return err
		}
		if held == 0 {
			return errFenced(lease.Session)
		}
		found, err := s.scanRun(tx.QueryRow(s.ctx, "SELECT "+runColumns+" FROM runs WHERE session = $1 AND run_id = $2", lease.Session, runID))
		switch {
		case err == nil:
			r = found
			outcome, err = s.recorded(found, digest)
			return err
		case !isNoRows(err):
			return err
		}
		if err := s.admit(tx, lease.Session); err != nil {
			return err
		}
		outcome = store.BeginNew
		r, err = s.scanRun(tx.QueryRow(s.ctx, `INSERT INTO runs
			(session, namespace, run_id, digest, requester, token, writer, state, started_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, 'running', $8) RETURNING `+runColumns,
			lease.Session, namespaceOf(lease.Session), runID, digest[:], requester, lease.Token, s.instance, s.now()))
		return err
	})
	if err != nil {
		if isStoreErr(err) {
			return nil, 0, err
		}
		return nil, 0, s.dbErr("claim run", err)
	}
	return s.handle(r, outcome == store.BeginNew), outcome, nil
}

// recorded is the answer of Claim for a runId it found.
func (s *Store) recorded(r runRow, digest [32]byte) (store.BeginOutcome, error) {
	switch {
	case r.info.Digest != digest:
		return 0, &store.RunConflictError{Session: r.info.Session, RunID: r.info.RunID, Recorded: r.info.Digest, Requested: digest}
	case r.pruned:
		return 0, s.pruned(r)
	case r.info.State == store.StateRunning:
		return store.BeginAttach, nil
	default:
		return store.BeginReplay, nil
	}
}

// isStoreErr tells the contract's answers from the database's failures.
func isStoreErr(err error) bool {
	for _, target := range []error{store.ErrFenced, store.ErrRunConflict, store.ErrRunPayloadPruned,
		store.ErrRetentionLimitReached, store.ErrAtCapacity, store.ErrSessionBusy, store.ErrTranscriptLimitExceeded,
		store.ErrRunEnded, store.ErrNotFound, store.ErrInvalidRecord, store.ErrAlreadyPosted, ErrInboxFull} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

func namespaceOf(session string) string {
	ns, _, _ := strings.Cut(session, "/")
	return ns
}

// FindRun returns a read-only handle on a known run.
func (s *Store) FindRun(session, runID string) (store.Run, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if err := store.ValidateSession(session); err != nil {
		return nil, err
	}
	r, err := s.scanRun(s.pool.QueryRow(s.ctx, "SELECT "+runColumns+" FROM runs WHERE session = $1 AND run_id = $2", session, runID))
	switch {
	case isNoRows(err):
		return nil, fmt.Errorf("%w: run %q of session %s", store.ErrNotFound, runID, session)
	case err != nil:
		return nil, s.dbErr("find run", err)
	case r.pruned:
		return nil, s.pruned(r)
	}
	return s.handle(r, false), nil
}
