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

// AppendTranscript stores the records, compacted, as lines of the session's
// transcript, all or nothing, under the transcript row's lock. Appends are
// durable at commit: SyncTranscript has nothing left to do.
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
	var refused error
	err := s.tx(func(tx pgx.Tx) error {
		refused = nil
		size, next, err := lockTranscript(tx, s, session)
		if err != nil {
			return err
		}
		if limit := s.opts.MaxTranscriptBytes; limit > 0 && size+adding > limit {
			// Only the full mark is committed; the caller gets the refusal.
			refused = &store.TranscriptLimitError{Session: session, Size: size, Adding: adding, Limit: limit}
			_, err := tx.Exec(s.ctx, "UPDATE transcripts SET full_ = true WHERE session = $1", session)
			return err
		}
		ns := make([]int64, len(lines))
		for i := range ns {
			ns[i] = next + int64(i)
		}
		if _, err := tx.Exec(s.ctx, `INSERT INTO transcript_lines (session, n, line)
			SELECT $1, n, line FROM unnest($2::bigint[], $3::bytea[]) AS l (n, line)`, session, ns, lines); err != nil {
			return err
		}
		_, err = tx.Exec(s.ctx, "UPDATE transcripts SET size = size + $2, next = next + $3 WHERE session = $1", session, adding, len(lines))
		return err
	})
	if err != nil {
		return s.dbErr("append transcript of session "+session, err)
	}
	return refused
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

// SyncTranscript: appends are durable at their commit.
func (s *Store) SyncTranscript(session string) error {
	if err := s.check(); err != nil {
		return err
	}
	return store.ValidateSession(session)
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
