package journal

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
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
	// Pruned marks the end record of a tombstone: the events before it and
	// the result were pruned, LastSeq is the run's last event all the same.
	Pruned bool `json:"pruned,omitempty"`
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
	events  []Event
	lastSeq int64 // the last event's; a tombstone's end record gives it
	end     *fileRecord
	good    int64 // offset just past the last valid record
	torn    bool  // what follows good is one incomplete or unreadable last line
	corrupt bool  // what follows good is more than that: records were lost
}

// parseRun reads a run file's records in order and stops at the first one that
// is unreadable or out of place. A missing or bad begin record leaves
// header.Rec empty.
func parseRun(data []byte, keepEvents bool) parsedRun {
	var p parsedRun
	off := 0
	for off < len(data) {
		nl := bytes.IndexByte(data[off:], '\n')
		if nl < 0 {
			p.torn = true
			break
		}
		line := data[off : off+nl]
		if !p.accept(line, keepEvents) {
			rest := data[off+nl+1:]
			if len(bytes.Trim(rest, "\x00 \t\r\n")) == 0 {
				p.torn = true
			} else {
				p.corrupt = true
			}
			break
		}
		off += nl + 1
		p.good = int64(off)
	}
	if p.header.Rec == "" {
		p.events, p.lastSeq, p.end = nil, 0, nil
	}
	return p
}

// accept applies one line; false means it is unreadable or out of place.
func (p *parsedRun) accept(line []byte, keepEvents bool) bool {
	if p.end != nil {
		return false // nothing follows the end record
	}
	var r fileRecord
	if err := json.Unmarshal(line, &r); err != nil {
		return false
	}
	if p.header.Rec == "" {
		if r.Rec != recBegin || r.V != formatVersion || r.RunID == "" || r.Session == "" {
			return false
		}
		d, err := hex.DecodeString(r.Digest)
		if err != nil || len(d) != len(p.digest) {
			return false
		}
		copy(p.digest[:], d)
		p.header = r
		return true
	}
	switch r.Rec {
	case recEvent:
		if r.Seq != p.lastSeq+1 || !validEventType(r.Type) {
			return false
		}
		p.lastSeq = r.Seq
		if keepEvents {
			p.events = append(p.events, Event{Seq: r.Seq, Type: r.Type, At: r.At, Payload: r.Payload})
		}
		return true
	case recEnd:
		if r.State != StateFinished && r.State != StateFailed {
			return false
		}
		// A tombstone keeps no event; any other end record follows them all.
		if r.Pruned && (p.lastSeq != 0 || r.LastSeq < 0 || len(r.Result) > 0) || !r.Pruned && r.LastSeq != p.lastSeq {
			return false
		}
		p.lastSeq = r.LastSeq
		p.end = &r
		return true
	}
	return false
}

// loadEndedRun reads the whole file of an ended run for a replay handle.
func loadEndedRun(f io.Reader, meta *runState) (*runState, error) {
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read run file: %w", err)
	}
	p := parseRun(data, true)
	switch {
	case p.header.Rec == "" || p.header.RunID != meta.key.runID || p.digest != meta.digest:
		return nil, errors.New("run file does not match the index")
	case p.end == nil || p.corrupt:
		return nil, fmt.Errorf("run file is damaged after event %d", p.lastSeq)
	}
	return &runState{
		key: meta.key, path: meta.path, digest: meta.digest, startedAt: p.header.At.UTC(),
		state: p.end.State, events: p.events, lastSeq: p.lastSeq,
		finishedAt: p.end.At.UTC(), result: p.end.Result, reason: p.end.Reason,
		done: closedChan,
	}, nil
}
