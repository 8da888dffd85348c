package pgstore

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/jackc/pgx/v5"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// Limits of one run's inbox (Options.MaxInboxMessages, MaxInboxBytes). A
// caller allowed to answer a run may post answers with keys the run never
// asked for (the owner drops them; the dispatcher that posts cannot tell),
// so without a bound one run could fill the database.
const (
	// DefaultMaxInboxMessages is the most messages a run's inbox takes:
	// far more answers than a turn asks for.
	DefaultMaxInboxMessages = 1024
	// DefaultMaxInboxBytes is the most payload bytes a run's inbox takes:
	// sixteen messages of the largest payload (store.MaxInboxPayloadBytes).
	DefaultMaxInboxBytes = 16 * store.MaxInboxPayloadBytes
)

// ErrInboxFull is returned by Post when the message would take the run's
// inbox over Options.MaxInboxMessages or MaxInboxBytes. Nothing was
// recorded.
var ErrInboxFull = errors.New("pgstore: the run's inbox is full")

// eraseAnswers removes the values of the user-input answers posted to a
// run's inbox; it runs in the transaction that ends the run. An answer may
// be a secret a question asked for: the file journal keeps answers only in
// memory and writes them to its events redacted, so after the run the
// database holds no more than the journal's disk. Nothing reads an ended
// run's inbox (Inbox yields nothing for it).
const eraseAnswers = "UPDATE inbox SET payload = NULL WHERE run = $1 AND kind = '" + string(store.InboxUserInput) + "' AND payload IS NOT NULL"

// eraseAnswersOf is eraseAnswers for the run Finish's statement ends (its
// CTE f).
const eraseAnswersOf = "UPDATE inbox SET payload = NULL WHERE run = (SELECT id FROM f) AND kind = '" + string(store.InboxUserInput) + "' AND payload IS NOT NULL"

// Post records the message in one transaction that holds the run's row, as
// Append and Finish do: a Post and the run's end are ordered, Posts of one
// run take their sequence numbers one after the other, and the inbox's
// limits are checked against every message before it. It notifies
// "<run> inbox" on the run's channel (Events readers of the run re-read
// once, finding nothing new).
func (s *Store) Post(session, runID string, m store.InboxMessage) (int64, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	if err := store.ValidateSession(session); err != nil {
		return 0, err
	}
	m, err := store.NormalizeInbox(m)
	if err != nil {
		return 0, err
	}
	var seq int64
	err = s.tx(func(tx pgx.Tx) error {
		var (
			id    int64
			state string
		)
		err := tx.QueryRow(s.ctx, "SELECT id, state FROM runs WHERE session = $1 AND run_id = $2 FOR UPDATE", session, runID).Scan(&id, &state)
		switch {
		case isNoRows(err):
			return fmt.Errorf("%w: run %q of session %s", store.ErrNotFound, runID, session)
		case err != nil:
			return err
		case state != string(store.StateRunning):
			return fmt.Errorf("%w: run %q of session %s", store.ErrRunEnded, runID, session)
		}
		var posted int64
		err = tx.QueryRow(s.ctx, "SELECT seq FROM inbox WHERE run = $1 AND kind = $2 AND key = $3", id, string(m.Kind), m.Key).Scan(&posted)
		switch {
		case err == nil:
			return &store.AlreadyPostedError{Session: session, RunID: runID, Kind: m.Kind, Key: m.Key, Seq: posted}
		case !isNoRows(err):
			return err
		}
		if err := s.inboxRoom(tx, id, session, runID, int64(len(m.Payload))); err != nil {
			return err
		}
		err = tx.QueryRow(s.ctx, `INSERT INTO inbox (run, seq, kind, key, at, payload)
			SELECT $1, coalesce(max(seq), 0) + 1, $2, $3, $4, $5 FROM inbox WHERE run = $1 RETURNING seq`,
			id, string(m.Kind), m.Key, s.now(), []byte(m.Payload)).Scan(&seq)
		if err != nil {
			return err
		}
		_, err = tx.Exec(s.ctx, "SELECT pg_notify('"+runChannel+"', $1::bigint::text || ' inbox')", id)
		return err
	})
	if err != nil {
		if isStoreErr(err) {
			return 0, err
		}
		return 0, s.dbErr("post to run", err)
	}
	return seq, nil
}

// inboxRoom fails with ErrInboxFull when the run's inbox cannot take a
// message of size payload bytes. The caller holds the run's row, so no
// other Post of the run counts at the same time.
func (s *Store) inboxRoom(tx pgx.Tx, id int64, session, runID string, size int64) error {
	var n, bytes int64
	if err := tx.QueryRow(s.ctx, "SELECT count(*), coalesce(sum(octet_length(payload)), 0) FROM inbox WHERE run = $1", id).Scan(&n, &bytes); err != nil {
		return err
	}
	if maxN := s.opts.MaxInboxMessages; maxN > 0 && n >= int64(maxN) {
		return fmt.Errorf("%w: run %q of session %s holds %d messages, the limit (MaxInboxMessages)", ErrInboxFull, runID, session, n)
	}
	if maxB := s.opts.MaxInboxBytes; maxB > 0 && bytes+size > maxB {
		return fmt.Errorf("%w: run %q of session %s holds %d payload bytes, %d more would pass the limit of %d (MaxInboxBytes)",
			ErrInboxFull, runID, session, bytes, size, maxB)
	}
	return nil
}

// Inbox reads the run's messages from the database and, caught up with a
// running run, waits for its notification (a Post, the end, or a
// re-established listening connection).
func (s *Store) Inbox(ctx context.Context, ref store.RunRef, afterSeq int64) iter.Seq2[store.InboxMessage, error] {
	return func(yield func(store.InboxMessage, error) bool) {
		if err := s.check(); err != nil {
			yield(store.InboxMessage{}, err)
			return
		}
		if err := store.ValidateSession(ref.Session); err != nil {
			yield(store.InboxMessage{}, err)
			return
		}
		var (
			id    int64
			state string
		)
		err := s.pool.QueryRow(ctx, "SELECT id, state FROM runs WHERE session = $1 AND run_id = $2", ref.Session, ref.RunID).Scan(&id, &state)
		switch {
		case isNoRows(err):
			yield(store.InboxMessage{}, fmt.Errorf("%w: run %q of session %s", store.ErrNotFound, ref.RunID, ref.Session))
			return
		case err != nil:
			yield(store.InboxMessage{}, s.ctxErr(ctx, "read inbox", err))
			return
		case state != string(store.StateRunning):
			return // the inbox is the running turn's
		}
		// Subscribed before the first read: no Post after it goes unseen.
		wake, unsubscribe := s.hub.wake(runKey(id))
		defer unsubscribe()
		for after := max(afterSeq, 0); ; {
			msgs, ended, err := s.inboxPage(ctx, id, after)
			if err != nil {
				yield(store.InboxMessage{}, err)
				return
			}
			for _, m := range msgs {
				if !yield(m, nil) {
					return
				}
				after = m.Seq
			}
			switch {
			case len(msgs) > 0:
				continue
			case ended:
				return
			}
			select {
			case <-wake:
			case <-ctx.Done():
				yield(store.InboxMessage{}, ctx.Err())
				return
			case <-s.closed:
				yield(store.InboxMessage{}, store.ErrClosed)
				return
			}
		}
	}
}

// inboxPage reads whether the run has ended, then at most eventsPage of its
// messages after seq: an end read first means every Post before it is
// committed and among what follows (Post holds the run's row, which the end
// updates).
func (s *Store) inboxPage(ctx context.Context, id, after int64) ([]store.InboxMessage, bool, error) {
	var state string
	err := s.pool.QueryRow(ctx, "SELECT state FROM runs WHERE id = $1", id).Scan(&state)
	switch {
	case isNoRows(err):
		return nil, false, fmt.Errorf("%w: run %d was forgotten or its session deleted", store.ErrNotFound, id)
	case err != nil:
		return nil, false, s.ctxErr(ctx, "read inbox", err)
	}
	rows, err := s.pool.Query(ctx, "SELECT seq, kind, key, at, payload FROM inbox WHERE run = $1 AND seq > $2 ORDER BY seq LIMIT $3",
		id, after, eventsPage)
	if err != nil {
		return nil, false, s.ctxErr(ctx, "read inbox", err)
	}
	msgs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.InboxMessage, error) {
		var (
			m       store.InboxMessage
			kind    string
			payload []byte
		)
		err := row.Scan(&m.Seq, &kind, &m.Key, &m.At, &payload)
		m.Kind, m.At = store.InboxKind(kind), m.At.UTC()
		if len(payload) > 0 {
			m.Payload = payload
		}
		return m, err
	})
	if err != nil {
		return nil, false, s.ctxErr(ctx, "read inbox", err)
	}
	return msgs, state != string(store.StateRunning), nil
}
