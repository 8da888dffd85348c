package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// Sessions lists every session with a run, a transcript, a lease or a
// reservation.
func (s *Store) Sessions() ([]string, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(s.ctx, `SELECT session FROM runs UNION SELECT session FROM leases
		UNION SELECT session FROM transcripts UNION SELECT session FROM reservations ORDER BY 1`)
	if err != nil {
		return nil, s.dbErr("list sessions", err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, s.dbErr("list sessions", err)
	}
	return keys, nil
}

// DeleteSession removes everything of an idle session in one transaction
// under its advisory lock and its lease row's lock; iterators of its runs
// end with ErrNotFound, waiters for its lease are woken.
func (s *Store) DeleteSession(session string) error {
	if err := s.check(); err != nil {
		return err
	}
	if err := store.ValidateSession(session); err != nil {
		return err
	}
	err := s.tx(func(tx pgx.Tx) error {
		if _, err := tx.Exec(s.ctx, sessionLock, session); err != nil {
			return err
		}
		var running, held bool
		if err := tx.QueryRow(s.ctx, `SELECT
			EXISTS (SELECT 1 FROM runs WHERE session = $1 AND state = 'running'),
			EXISTS (SELECT 1 FROM leases WHERE session = $1 AND expires > `+leaseNow(2)+` FOR UPDATE)`,
			session, s.leaseClock()).Scan(&running, &held); err != nil {
			return err
		}
		if running || held {
			return fmt.Errorf("%w: %s (running run: %t, lease held: %t)", store.ErrSessionBusy, session, running, held)
		}
		for _, q := range []string{
			`WITH d AS (DELETE FROM runs WHERE session = $1 RETURNING id) SELECT pg_notify('` + runChannel + `', id::text || ' gone') FROM d`,
			`WITH d AS (DELETE FROM leases WHERE session = $1 RETURNING session) SELECT pg_notify('` + leaseChannel + `', session) FROM d`,
			"DELETE FROM transcript_lines WHERE session = $1",
			"DELETE FROM transcripts WHERE session = $1",
			"DELETE FROM reservations WHERE session = $1",
		} {
			if _, err := tx.Exec(s.ctx, q, session); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil && !isStoreErr(err) {
		return s.dbErr("delete session "+session, err)
	}
	return err
}

// Admit is Claim's namespace bound, checked before any work.
func (s *Store) Admit(session string) error {
	if err := s.check(); err != nil {
		return err
	}
	if err := store.ValidateSession(session); err != nil {
		return err
	}
	err := s.tx(func(tx pgx.Tx) error { return s.admit(tx, session) })
	if err != nil && !isStoreErr(err) {
		return s.dbErr("admit", err)
	}
	return err
}

// admit refuses a new runId in a namespace at its run bound. Claim calls it
// under the namespace's advisory lock, so concurrent claims cannot pass the
// bound together.
func (s *Store) admit(tx pgx.Tx, session string) error {
	limit := s.opts.MaxNamespaceRuns
	if limit <= 0 {
		return nil
	}
	ns := namespaceOf(session)
	if _, err := tx.Exec(s.ctx, "SELECT pg_advisory_xact_lock(hashtextextended('namespace:' || $1, 0))", ns); err != nil {
		return err
	}
	var (
		runs   int
		oldest *time.Time
	)
	if err := tx.QueryRow(s.ctx, "SELECT count(*), min(finished_at) FROM runs WHERE namespace = $1", ns).Scan(&runs, &oldest); err != nil {
		return err
	}
	if runs < limit {
		return nil
	}
	e := &store.RetentionLimitError{Namespace: ns, Runs: runs, Limit: limit}
	if oldest != nil && s.opts.MaxAge > 0 {
		e.RetryAfter = max(oldest.Add(s.opts.MaxAge).Sub(s.now()), 0)
	}
	return e
}

// Usage counts each namespace's runs and the bytes of its runs' payloads
// (events and results, tombstones excluded) and transcripts.
func (s *Store) Usage() (map[string]store.NamespaceUsage, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(s.ctx, `SELECT ns, sum(runs)::bigint, sum(bytes)::bigint FROM (
		SELECT namespace AS ns, count(*) AS runs, sum(CASE WHEN pruned THEN 0 ELSE bytes END) AS bytes FROM runs GROUP BY namespace
		UNION ALL SELECT split_part(session, '/', 1), 0, sum(size) FROM transcripts GROUP BY 1) u GROUP BY ns`)
	if err != nil {
		return nil, s.dbErr("usage", err)
	}
	out := map[string]store.NamespaceUsage{}
	var (
		ns    string
		runs  int64
		bytes int64
	)
	_, err = pgx.ForEachRow(rows, []any{&ns, &runs, &bytes}, func() error {
		out[ns] = store.NamespaceUsage{Runs: int(runs), Bytes: bytes}
		return nil
	})
	if err != nil {
		return nil, s.dbErr("usage", err)
	}
	return out, nil
}

// Prune forgets the runs that ended more than MaxAge ago and keeps only the
// tombstones of the ended runs beyond the MaxRuns most recent ones. (The
// journal's per-namespace byte cap is not applied here yet.)
func (s *Store) Prune() (store.PruneReport, error) {
	if err := s.check(); err != nil {
		return store.PruneReport{}, err
	}
	var rep store.PruneReport
	if s.opts.MaxAge > 0 {
		tag, err := s.pool.Exec(s.ctx, `WITH d AS (DELETE FROM runs WHERE state <> 'running' AND finished_at < $1 RETURNING id)
			SELECT pg_notify('`+runChannel+`', id::text || ' gone') FROM d`, s.now().Add(-s.opts.MaxAge))
		if err != nil {
			return rep, s.dbErr("prune", err)
		}
		rep.Forgotten = int(tag.RowsAffected())
	}
	if s.opts.MaxRuns > 0 {
		tag, err := s.pool.Exec(s.ctx, `WITH p AS (UPDATE runs SET pruned = true, result = NULL WHERE id IN (
				SELECT id FROM runs WHERE state <> 'running' AND NOT pruned
				ORDER BY finished_at DESC, id DESC OFFSET $1) RETURNING id),
			e AS (DELETE FROM events WHERE run IN (SELECT id FROM p)),
			i AS (DELETE FROM inbox WHERE run IN (SELECT id FROM p))
			SELECT id FROM p`, s.opts.MaxRuns)
		if err != nil {
			return rep, s.dbErr("prune", err)
		}
		rep.PayloadsPruned = int(tag.RowsAffected())
	}
	return rep, nil
}

// RunRetention prunes every interval (on the store's clock) until ctx ends
// or the Store is closed.
func (s *Store) RunRetention(ctx context.Context, interval time.Duration, report func(store.PruneReport, error)) error {
	if interval <= 0 {
		return fmt.Errorf("pgstore: retention interval must be positive, got %s", interval)
	}
	tick := s.opts.Clock.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.closed:
			return nil
		case <-tick.C():
			rep, err := s.Prune()
			if report != nil {
				report(rep, err)
			}
		}
	}
}
