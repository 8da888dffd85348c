package pgstore

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// Recover ends, session by session (each one transaction under the
// session's advisory lock and the lease row's lock), the running runs whose
// lease owner holds, or nobody holds, or has expired, and releases that
// lease; it releases owner's other leases too.
func (s *Store) Recover(ctx context.Context, owner, reason string) ([]store.RunRef, error) {
	if owner == "" {
		return nil, fmt.Errorf("%w: Recover needs the owner whose leases to recover", store.ErrInvalidLease)
	}
	return s.takeOver(ctx, owner, reason)
}

// Sweep is Recover's takeover for no owner: only the runs of expired or
// free leases are ended, and no live lease is released.
func (s *Store) Sweep(ctx context.Context, reason string) ([]store.RunRef, error) {
	return s.takeOver(ctx, "", reason)
}

// takeOver ends the running runs whose lease is owner's, expired or not
// held, and releases owner's leases; an empty owner holds none (Sweep).
func (s *Store) takeOver(ctx context.Context, owner, reason string) ([]store.RunRef, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	// Only the sessions it may have to take over: a running run under an
	// expired, missing or owner's lease, or owner's leases. Every replica
	// sweeps every few seconds, so the running turns of live dispatchers are
	// not visited one transaction each; recoverSession checks again under
	// the session's locks.
	rows, err := s.pool.Query(ctx, `SELECT r.session FROM runs r LEFT JOIN leases l ON l.session = r.session
		WHERE r.state = 'running' AND (l.session IS NULL OR l.owner = $1 OR l.expires <= `+leaseNow(2)+`)
		UNION SELECT session FROM leases WHERE owner = $1 ORDER BY 1`, owner, s.leaseClock())
	if err != nil {
		return nil, s.ctxErr(ctx, "recover", err)
	}
	sessions, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, s.ctxErr(ctx, "recover", err)
	}
	var ended []store.RunRef
	for _, session := range sessions {
		refs, err := s.recoverSession(ctx, session, owner, reason)
		if err != nil {
			return ended, s.ctxErr(ctx, "recover session "+session, err)
		}
		ended = append(ended, refs...)
	}
	slices.SortFunc(ended, func(a, b store.RunRef) int {
		if c := strings.Compare(a.Session, b.Session); c != 0 {
			return c
		}
		return strings.Compare(a.RunID, b.RunID)
	})
	return ended, nil
}

func (s *Store) recoverSession(ctx context.Context, session, owner, reason string) ([]store.RunRef, error) {
	var ended []store.RunRef
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		ended = nil
		if _, err := tx.Exec(ctx, sessionLock, session); err != nil {
			return err
		}
		var (
			holder string
			token  int64
			live   bool
		)
		err := tx.QueryRow(ctx, "SELECT owner, token, expires > "+leaseNow(2)+" FROM leases WHERE session = $1 FOR UPDATE",
			session, s.leaseClock()).Scan(&holder, &token, &live)
		if err != nil && !isNoRows(err) {
			return err
		}
		if err == nil && holder != owner && live {
			return nil // a live dispatcher's: left alone
		}
		rows, err := tx.Query(ctx, `UPDATE runs SET state = 'failed', finished_at = $2, reason = $3, result = NULL, durable_seq = last_seq
			WHERE session = $1 AND state = 'running' RETURNING `+runColumns, session, s.now(), reason)
		if err != nil {
			return err
		}
		runs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (runRow, error) { return s.scanRun(row) })
		if err != nil {
			return err
		}
		for _, r := range runs {
			ref := r.info.RunRef
			ref.Recovered = r.writer != s.instance
			ended = append(ended, ref)
			if _, err := tx.Exec(ctx, eraseAnswers, r.id); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, "SELECT pg_notify('"+runChannel+"', $1::bigint::text || ' end')", r.id); err != nil {
				return err
			}
		}
		if len(runs) == 0 && holder != owner {
			return nil // an expired lease of an idle session: its holder keeps it until someone acquires the session
		}
		_, err = tx.Exec(ctx, `WITH d AS (DELETE FROM leases WHERE session = $1 AND token = $2 RETURNING session)
			SELECT pg_notify('`+leaseChannel+`', session) FROM d`, session, token)
		return err
	})
	return ended, err
}
