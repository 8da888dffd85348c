package pgstore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// appendLines is AppendTranscript's statement: it counts the lines into
// the session's transcript row (creating it), unless that takes the
// transcript past the limit, and inserts them after the row's previous
// last line. One statement is one round trip; the row's lock (the upsert's)
// numbers appends of a session one after the other. Its commit does not
// wait for the WAL flush (synchronous_commit off for its transaction
// alone): SyncTranscript flushes, unless a synchronous commit since has
// (unflushed). $1 session, $2 bytes added, $3 lines added, $4 the limit (0:
// none), $5 the lines. No row when the limit refused them.
const appendLines = `WITH t AS (INSERT INTO transcripts AS t (session, size, next) VALUES ($1, $2::bigint, 1 + $3::bigint)
		ON CONFLICT (session) DO UPDATE SET size = t.size + $2::bigint, next = t.next + $3::bigint
		WHERE $4::bigint <= 0 OR t.size + $2::bigint <= $4::bigint
		RETURNING t.next - $3::bigint AS first),
	i AS (INSERT INTO transcript_lines (session, n, line)
		SELECT $1, t.first + l.ord - 1, l.line FROM t, unnest($5::bytea[]) WITH ORDINALITY AS l (line, ord))
	SELECT first, set_config('synchronous_commit', 'off', true) FROM t`

// markFull is the refusal's write: the full mark, committed synchronously,
// when the session's transcript cannot take $2 bytes under the limit $3.
// No row when it can now (it was reset since): the append is tried again.
// A transcript not written yet is created full only for records larger
// than the limit on their own (appendLines takes them otherwise).
const markFull = `INSERT INTO transcripts AS t (session, full_) VALUES ($1, true)
	ON CONFLICT (session) DO UPDATE SET full_ = true WHERE t.size + $2::bigint > $3::bigint
	RETURNING t.size`

// AppendTranscript stores the records, compacted, as lines of the session's
// transcript, all or nothing. Appends are durable at SyncTranscript.
func (s *Store) AppendTranscript(session string, records ...json.RawMessage) error {
	if err := s.check(); err != nil {
		return err
	}
	if err := store.ValidateSession(session); err != nil {
		return err
	}
	lines := make([][]byte, 0, len(records))
	var adding int64
	for i, rec := range records {
		rec = bytes.TrimSpace(rec)
		if len(rec) == 0 || rec[0] != '{' {
			return fmt.Errorf("pgstore: append transcript of session %s: %w: record %d is not a JSON object", session, store.ErrInvalidRecord, i)
		}
		var b bytes.Buffer
		if err := json.Compact(&b, rec); err != nil {
			return fmt.Errorf("pgstore: append transcript of session %s: %w: record %d: %w", session, store.ErrInvalidRecord, i, err)
		}
		lines = append(lines, b.Bytes())
		adding += int64(b.Len() + 1) // and its newline
	}
	if len(lines) == 0 {
		return nil
	}
	limit := max(s.opts.MaxTranscriptBytes, 0)
	for {
		if limit == 0 || adding <= limit {
			var (
				first   int64
				setting string
			)
			err := s.pool.QueryRow(s.ctx, appendLines, session, adding, int64(len(lines)), limit, lines).Scan(&first, &setting)
			if err == nil {
				s.unflushed.committed(session)
				return nil
			}
			if !isNoRows(err) {
				return s.dbErr("append transcript of session "+session, err)
			}
		}
		// Refused: only the full mark is committed; the caller gets the
		// refusal.
		var size int64
		err := s.pool.QueryRow(s.ctx, markFull, session, adding, limit).Scan(&size)
		switch {
		case err == nil:
			return &store.TranscriptLimitError{Session: session, Size: size, Adding: adding, Limit: limit}
		case !isNoRows(err):
			return s.dbErr("append transcript of session "+session, err)
		}
	}
}

// lockTranscript creates the session's transcript row if needed and locks
// it, returning its size and next line number.
func lockTranscript(tx pgx.Tx, s *Store, session string) (size, next int64, err error) {
	if _, err := tx.Exec(s.ctx, "INSERT INTO transcripts (session) VALUES ($1) ON CONFLICT DO NOTHING", session); err != nil {
		return 0, 0, err
	}
	err = tx.QueryRow(s.ctx, "SELECT size, next FROM transcripts WHERE session = $1 FOR UPDATE", session).Scan(&size, &next)
	return size, next, err
}

func (s *Store) transcriptState(session string) (full bool, size int64, err error) {
	err = s.pool.QueryRow(s.ctx, "SELECT full_, size FROM transcripts WHERE session = $1", session).Scan(&full, &size)
	if isNoRows(err) {
		return false, 0, nil
	}
	if err != nil {
		return false, 0, s.dbErr("read transcript of session "+session, err)
	}
	return full, size, nil
}

// ResetTranscript replaces the transcript by the reset marker.
func (s *Store) ResetTranscript(session string, generation int64) error {
	if err := s.check(); err != nil {
		return err
	}
	if err := store.ValidateSession(session); err != nil {
		return err
	}
	line := []byte(`{"type":"reset","generation":` + strconv.FormatInt(generation, 10) +
		`,"at":"` + s.now().Format(time.RFC3339Nano) + `"}`)
	err := s.tx(func(tx pgx.Tx) error {
		if _, _, err := lockTranscript(tx, s, session); err != nil {
			return err
		}
		if _, err := tx.Exec(s.ctx, "DELETE FROM transcript_lines WHERE session = $1", session); err != nil {
			return err
		}
		if _, err := tx.Exec(s.ctx, "INSERT INTO transcript_lines (session, n, line) VALUES ($1, 1, $2)", session, line); err != nil {
			return err
		}
		_, err := tx.Exec(s.ctx, "UPDATE transcripts SET size = $2, next = 2, full_ = false WHERE session = $1", session, len(line)+1)
		return err
	})
	if err != nil {
		return s.dbErr("reset transcript of session "+session, err)
	}
	return nil
}

func (s *Store) TranscriptFull(session string) (bool, error) {
	if err := s.check(); err != nil {
		return false, err
	}
	if err := store.ValidateSession(session); err != nil {
		return false, err
	}
	full, _, err := s.transcriptState(session)
	return full, err
}

// SyncTranscript flushes the WAL when an append of the session committed
// without waiting for its flush and no synchronous commit has flushed it
// since (the engine syncs after the run's end, whose flush usually has):
// a write to the session's transcript row, committed synchronously, flushes
// the WAL up to it.
func (s *Store) SyncTranscript(session string) error {
	if err := s.check(); err != nil {
		return err
	}
	if err := store.ValidateSession(session); err != nil {
		return err
	}
	if !s.unflushed.pending(session) {
		return nil
	}
	mark := s.unflushed.mark()
	if _, err := s.pool.Exec(s.ctx, "UPDATE transcripts SET size = size WHERE session = $1", session); err != nil {
		return s.dbErr("sync transcript of session "+session, err)
	}
	s.unflushed.flushedTo(mark)
	return nil
}

// ReadTranscript streams the lines of one query — one snapshot, what was
// committed when it started — row by row to w; appends are not held up
// (MVCC), a slow w only holds this reader's connection.
func (s *Store) ReadTranscript(session string, w io.Writer) (int64, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	if err := store.ValidateSession(session); err != nil {
		return 0, err
	}
	rows, err := s.pool.Query(s.ctx, "SELECT line FROM transcript_lines WHERE session = $1 ORDER BY n", session)
	if err != nil {
		return 0, s.dbErr("read transcript of session "+session, err)
	}
	defer rows.Close()
	var (
		written int64
		line    []byte
	)
	for rows.Next() {
		// RawValues is pgx's read buffer: copied before the newline is added.
		line = append(append(line[:0], rows.RawValues()[0]...), '\n')
		n, err := w.Write(line)
		written += int64(n)
		if err != nil {
			return written, err
		}
	}
	if err := rows.Err(); err != nil {
		return written, s.dbErr("read transcript of session "+session, err)
	}
	return written, nil
}

func (s *Store) TranscriptSize(session string) (int64, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	if err := store.ValidateSession(session); err != nil {
		return 0, err
	}
	_, size, err := s.transcriptState(session)
	return size, err
}
