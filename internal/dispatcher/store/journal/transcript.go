package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// AppendTranscript appends records to the session's transcript mirror, one
// compact JSON line each, all or nothing. Every record must be a JSON object;
// the journal stores it as given (whitespace removed) and adds nothing. When
// the records would take the file past Options.MaxTranscriptBytes the call
// fails with a *TranscriptLimitError (ErrTranscriptLimitExceeded) and the file
// is unchanged. Appends are written but not fsynced: call SyncTranscript once
// per turn.
func (j *Journal) AppendTranscript(session string, records ...json.RawMessage) error {
	if err := ValidateSession(session); err != nil {
		return err
	}
	var buf bytes.Buffer
	for i, rec := range records {
		rec = bytes.TrimSpace(rec)
		if len(rec) == 0 || rec[0] != '{' {
			return fmt.Errorf("journal: append transcript of session %s: %w: record %d is not a JSON object", session, ErrInvalidRecord, i)
		}
		if err := json.Compact(&buf, rec); err != nil {
			return fmt.Errorf("journal: append transcript of session %s: %w: record %d: %w", session, ErrInvalidRecord, i, err)
		}
		buf.WriteByte('\n')
	}
	if buf.Len() == 0 {
		return nil
	}
	return j.withSession(session, func(s *sessionState) error {
		if err := j.appendTranscript(s, buf.Bytes(), true); err != nil {
			return fmt.Errorf("journal: append transcript of session %s: %w", session, err)
		}
		return nil
	})
}

// ResetTranscript starts the session's transcript anew for its new reset
// generation: the previous transcript file is deleted (the gateway keeps its
// own history; the mirror follows the native thread, which a reset replaces),
// and the new file begins with the marker {"type":"reset","generation":N,
// "at":"…"}. So a session whose transcript reached its size limit is reset,
// not deleted. Callers write it once per generation (the engine, when it
// starts the new native thread); a repeated reset leaves just the marker.
func (j *Journal) ResetTranscript(session string, generation int64) error {
	line := []byte(`{"type":"reset","generation":` + strconv.FormatInt(generation, 10) +
		`,"at":"` + j.now().Format(time.RFC3339Nano) + `"}` + "\n")
	return j.withSession(session, func(s *sessionState) error {
		err := os.Remove(filepath.Join(s.dir, transcriptFileName))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("journal: reset transcript of session %s: %w", session, err)
		}
		s.tsize, s.tfull = 0, false
		if err := j.appendTranscript(s, line, false); err != nil {
			return fmt.Errorf("journal: reset transcript of session %s: %w", session, err)
		}
		return nil
	})
}

// TranscriptFull reports whether an append to the session's transcript was
// refused for the size limit since its last reset, or since retention pruned
// it (which makes room: caps.go): a turn started now could not mirror its
// records, so the engine refuses it before it starts. The fact lives in this
// process; after a restart the first refused append learns it again.
func (j *Journal) TranscriptFull(session string) (bool, error) {
	full := false
	err := j.withSession(session, func(s *sessionState) error {
		full = s.tfull
		return nil
	})
	return full, err
}

// appendTranscript writes complete lines with one write(2); s.mu must be held.
func (j *Journal) appendTranscript(s *sessionState, data []byte, limited bool) error {
	size, err := j.transcriptSize(s)
	if err != nil {
		return err
	}
	if limit := j.opts.MaxTranscriptBytes; limited && limit > 0 && size+int64(len(data)) > limit {
		s.tfull = true
		return &TranscriptLimitError{Session: s.name, Size: size, Adding: int64(len(data)), Limit: limit}
	}
	if err := j.ensureDirs(s); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(s.dir, transcriptFileName), os.O_WRONLY|os.O_CREATE|os.O_APPEND, fileMode)
	if err != nil {
		return fmt.Errorf("open transcript: %w", err)
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Write(data); err != nil {
		if terr := f.Truncate(size); terr != nil {
			s.tsize = -1 // the next operation cuts the partial line (repairTranscript)
		}
		return fmt.Errorf("write transcript: %w", err)
	}
	if size == 0 {
		s.tdirPending = true // the file may be new: its directory entry needs an fsync
	}
	s.tsize = size + int64(len(data))
	return nil
}

// transcriptSize returns the transcript's size, learning it (and repairing a
// torn tail) when unknown; s.mu must be held.
func (j *Journal) transcriptSize(s *sessionState) (int64, error) {
	if s.tsize < 0 {
		if _, err := j.repairTranscript(s); err != nil {
			return 0, err
		}
	}
	return s.tsize, nil
}

// SyncTranscript fsyncs the session's transcript (and, once, its directory
// entry). The engine calls it once per turn, before reporting the result.
func (j *Journal) SyncTranscript(session string) error {
	return j.withSession(session, func(s *sessionState) error {
		f, err := os.OpenFile(filepath.Join(s.dir, transcriptFileName), os.O_WRONLY, 0)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("journal: sync transcript of session %s: %w", session, err)
		}
		// SyncTranscript's promise: the turn's transcript records are on
		// disk before the engine reports its result.
		err = j.sync(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil && s.tdirPending { // and a new file's entry with them
			if err = j.syncDir(s.dir); err == nil {
				s.tdirPending = false
			}
		}
		if err != nil {
			return fmt.Errorf("journal: sync transcript of session %s: %w", session, err)
		}
		return nil
	})
}

// TranscriptSize returns the size in bytes of the session's transcript; 0 when
// it has none.
func (j *Journal) TranscriptSize(session string) (int64, error) {
	var size int64
	err := j.withSession(session, func(s *sessionState) error {
		var err error
		size, err = j.transcriptSize(s)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("journal: transcript size of session %s: %w", session, err)
	}
	return size, nil
}

// ReadTranscript copies the session's transcript, as complete JSON lines, to
// w and returns the bytes copied. It copies what was appended when it started;
// the session's lock is not held while w is written, so a slow reader does not
// hold up appends.
func (j *Journal) ReadTranscript(session string, w io.Writer) (int64, error) {
	var (
		f    *os.File
		size int64
	)
	err := j.withSession(session, func(s *sessionState) error {
		var err error
		if size, err = j.transcriptSize(s); err != nil || size == 0 {
			return err
		}
		f, err = os.Open(filepath.Join(s.dir, transcriptFileName))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("journal: read transcript of session %s: %w", session, err)
	}
	if f == nil {
		return 0, nil
	}
	defer func() { _ = f.Close() }()
	n, err := io.Copy(w, io.NewSectionReader(f, 0, size))
	if err != nil {
		return n, fmt.Errorf("journal: read transcript of session %s: %w", session, err)
	}
	return n, nil
}
