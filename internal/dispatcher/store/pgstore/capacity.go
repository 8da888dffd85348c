package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// Reserve takes a place on server under the server's advisory lock, so
// that the count and the insert are one step across Stores.
func (s *Store) Reserve(ctx context.Context, server, session string, limit int) error {
	if err := s.check(); err != nil {
		return err
	}
	if err := store.ValidateSession(session); err != nil {
		return err
	}
	if server == "" || limit < 1 {
		return fmt.Errorf("%w: server %q, limit %d: want a server and a limit of at least 1", store.ErrInvalidReservation, server, limit)
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('server:' || $1, 0))", server); err != nil {
			return err
		}
		var mine bool
		var held int
		if err := tx.QueryRow(ctx, "SELECT coalesce(bool_or(session = $2), false), count(*) FROM reservations WHERE server = $1",
			server, session).Scan(&mine, &held); err != nil {
			return err
		}
		if mine {
			return nil
		}
		if held >= limit {
			return &store.CapacityError{Server: server, Held: held, Limit: limit}
		}
		_, err := tx.Exec(ctx, "INSERT INTO reservations (server, session) VALUES ($1, $2)", server, session)
		return err
	})
	if err != nil && !isStoreErr(err) {
		return s.ctxErr(ctx, "reserve", err)
	}
	return err
}

func (s *Store) Unreserve(ctx context.Context, server, session string) error {
	if err := s.check(); err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, "DELETE FROM reservations WHERE server = $1 AND session = $2", server, session); err != nil {
		return s.ctxErr(ctx, "unreserve", err)
	}
	return nil
}

func (s *Store) Reserved(ctx context.Context, server string) (int, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	var n int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM reservations WHERE server = $1", server).Scan(&n); err != nil {
		return 0, s.ctxErr(ctx, "count reservations", err)
	}
	return n, nil
}
