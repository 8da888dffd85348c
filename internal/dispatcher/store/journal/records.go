package journal

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

const formatVersion = 1

// Record kinds of a run file.
const (
	recBegin = "begin"
	recEvent = "event"
	recEnd   = "end"
)

// fileRecord is one line of a run file.
type fileRecord struct {
	Rec     string          `json:"rec"`
	V       int             `json:"v,omitempty"`
	Session string          `json:"session,omitempty"`
	RunID   string          `json:"runId,omitempty"`
	Digest  string          `json:"digest,omitempty"`
	Seq     int64           `json:"seq,omitempty"`
	Type    string          `json:"type,omitempty"`
	State   State           `json:"state,omitempty"`
	LastSeq int64           `json:"lastSeq,omitempty"`
	At      time.Time       `json:"at"`
	Payload json.RawMessage `json:"payload,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Reason  string          `json:"reason,omitempty"`
	// Requester is who asked for the run (begin record only).
	Requester *Requester `json:"requester,omitempty"`
	// Pruned marks the end record of a tombstone: the events before it and
	// the result were pruned, LastSeq is the run's last event all the same.
	Pruned bool `json:"pruned,omitempty"`
}

// requesterRecord is the begin record's requester: none when it is empty.
func requesterRecord(by Requester) *Requester {
	if by.User == "" && by.UID == "" && len(by.Groups) == 0 {
		return nil
	}
	return &by
}

// requesterOf is the requester of a begin record.
func requesterOf(begin fileRecord) Requester {
	if begin.Requester == nil {
		return Requester{}
	}
	return *begin.Requester
}

// encodeLine renders r as one JSON line (HTML characters are not escaped, so
// payloads keep their bytes).
func encodeLine(r fileRecord) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRecord, err)
	}
	return b.Bytes(), nil
}

// compactResult is a run's result as its end record stores it: compacted,
// nil when empty.
func compactResult(result json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(result)) == 0 {
		return nil, nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, result); err != nil {
		return nil, fmt.Errorf("%w: result: %w", ErrInvalidRecord, err)
	}
	return b.Bytes(), nil
}

// eventLine renders an event record by hand (the hot path) and returns where
// the compacted payload sits in it. typ must satisfy validEventType.
func eventLine(seq int64, typ string, at time.Time, payload json.RawMessage) (line []byte, pstart, pend int, err error) {
	b := bytes.NewBuffer(make([]byte, 0, 96+len(typ)+len(payload)))
	b.WriteString(`{"rec":"event","seq":`)
	b.Write(strconv.AppendInt(b.AvailableBuffer(), seq, 10))
	b.WriteString(`,"type":"`)
	b.WriteString(typ)
	b.WriteString(`","at":"`)
	b.Write(at.AppendFormat(b.AvailableBuffer(), time.RFC3339Nano))
	b.WriteByte('"')
	if len(bytes.TrimSpace(payload)) > 0 {
		b.WriteString(`,"payload":`)
		pstart = b.Len()
		if err := json.Compact(b, payload); err != nil {
			return nil, 0, 0, err
		}
		pend = b.Len()
	}
	b.WriteString("}\n")
	return b.Bytes(), pstart, pend, nil
}

// parsedRun is what a run file holds up to its last valid record.
type parsedRun struct {
	header  fileRecord
	digest  [32]byte
	lastSeq int64 // the last event's; a tombstone's end record gives it
	end     *fileRecord
	good    int64 // offset just past the last valid record
	torn    bool  // what follows good is one incomplete or unreadable last line
	corrupt bool  // what follows good is more than that: records were lost
}

// scanRun reads a run file's records in order, one line at a time, and stops
// at the first one that is unreadable or out of place; onEvent (may be nil)
// receives each event with where its record ends. A missing or bad begin
// record leaves header.Rec empty. The error is a failed read.
func scanRun(r io.Reader, onEvent func(tailEvent)) (parsedRun, error) {
	var p parsedRun
	br := bufio.NewReaderSize(r, readBufferSize)
	for {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			p.torn = len(line) > 0
			break
		}
		if err != nil {
			return p, err
		}
		ev, ok := p.accept(line[:len(line)-1])
		if !ok {
			padding, err := onlyPadding(br)
			if err != nil {
				return p, err
			}
			p.torn, p.corrupt = padding, !padding
			break
		}
		p.good += int64(len(line))
		if ev != nil && onEvent != nil {
			onEvent(tailEvent{Event: *ev, end: p.good, size: int64(len(line))})
		}
	}
	if p.header.Rec == "" {
		p.lastSeq, p.end = 0, nil
	}
	return p, nil
}

// onlyPadding reports whether the rest of r is only NULs and white space:
// what a torn write leaves, not lost records.
func onlyPadding(r io.Reader) (bool, error) {
	buf := make([]byte, 4096)
	for {
		n, err := r.Read(buf)
		if len(bytes.Trim(buf[:n], "\x00 \t\r\n")) > 0 {
			return false, nil
		}
		if errors.Is(err, io.EOF) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
	}
}

// accept applies one line; false means it is unreadable or out of place. An
// event record is returned as the event.
func (p *parsedRun) accept(line []byte) (*Event, bool) {
	if p.end != nil {
		return nil, false // nothing follows the end record
	}
	var r fileRecord
	if err := json.Unmarshal(line, &r); err != nil {
		return nil, false
	}
	if p.header.Rec == "" {
		if r.Rec != recBegin || r.V != formatVersion || r.RunID == "" || r.Session == "" {
			return nil, false
		}
		d, err := hex.DecodeString(r.Digest)
		if err != nil || len(d) != len(p.digest) {
			return nil, false
		}
		copy(p.digest[:], d)
		p.header = r
		return nil, true
	}
	switch r.Rec {
	case recEvent:
		if r.Seq != p.lastSeq+1 || !store.ValidEventType(r.Type) {
			return nil, false
		}
		p.lastSeq = r.Seq
		return &Event{Seq: r.Seq, Type: r.Type, At: r.At, Payload: r.Payload}, true
	case recEnd:
		if r.State != StateFinished && r.State != StateFailed {
			return nil, false
		}
		// A tombstone keeps no event; any other end record follows them all.
		if r.Pruned && (p.lastSeq != 0 || r.LastSeq < 0 || len(r.Result) > 0) || !r.Pruned && r.LastSeq != p.lastSeq {
			return nil, false
		}
		p.lastSeq = r.LastSeq
		p.end = &r
		return nil, true
	}
	return nil, false
}

// maxBeginRecord bounds the begin record readRunEnds looks for: a runId of
// MaxRunIDBytes, every byte escaped, and the rest fit with room to spare.
const maxBeginRecord = 8 << 10

// runEnds is what the first and the last record of a run file say.
type runEnds struct {
	begin  fileRecord
	digest [32]byte
	end    fileRecord
}

// readRunEnds reads the begin and end records of an ended run's file of size
// bytes without reading the events between them; ok is false when the file
// does not start with a valid begin record and end with an end record.
func readRunEnds(f io.ReaderAt, size int64) (e runEnds, ok bool, err error) {
	if size == 0 {
		return e, false, nil
	}
	head, err := bufio.NewReaderSize(io.NewSectionReader(f, 0, size), maxBeginRecord).ReadSlice('\n')
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, bufio.ErrBufferFull):
		return e, false, nil
	case err != nil:
		return e, false, err
	}
	var p parsedRun
	if _, ok := p.accept(head[:len(head)-1]); !ok {
		return e, false, nil
	}
	last := make([]byte, 1)
	if err := readFullAt(f, last, size-1); err != nil {
		return e, false, err
	}
	if last[0] != '\n' {
		return e, false, nil
	}
	start, err := lastLineEnd(f, size-1)
	if err != nil || start == 0 { // start 0: the begin record is the only line
		return e, false, err
	}
	line := make([]byte, size-1-start)
	if err := readFullAt(f, line, start); err != nil {
		return e, false, err
	}
	if json.Unmarshal(line, &e.end) != nil || e.end.Rec != recEnd || (e.end.State != StateFinished && e.end.State != StateFailed) {
		return e, false, nil
	}
	e.begin, e.digest = p.header, p.digest
	return e, true, nil
}

// readFullAt fills b from r at off; io.EOF only when b could not be filled.
func readFullAt(r io.ReaderAt, b []byte, off int64) error {
	n, err := r.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	return err
}

// loadEndedRun is the state of a replay handle on the ended run meta: what
// its begin and end records say. Its events are read when iterated.
func loadEndedRun(f *os.File, meta *runState) (*runState, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat run file: %w", err)
	}
	e, ok, err := readRunEnds(f, st.Size())
	switch {
	case err != nil:
		return nil, fmt.Errorf("read run file: %w", err)
	case !ok:
		return nil, errors.New("run file is damaged: no begin or no end record")
	case e.begin.RunID != meta.key.runID || e.digest != meta.digest:
		return nil, errors.New("run file does not match the index")
	}
	return &runState{
		key: meta.key, gen: meta.gen, path: meta.path, digest: meta.digest, startedAt: e.begin.At.UTC(), requester: requesterOf(e.begin),
		state: e.end.State, lastSeq: e.end.LastSeq, evEnd: st.Size(),
		finishedAt: e.end.At.UTC(), result: e.end.Result, reason: e.end.Reason,
		done: closedChan,
	}, nil
}
