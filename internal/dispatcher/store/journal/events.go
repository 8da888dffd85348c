package journal

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
)

// A running run keeps only its latest events in memory — its tail — so that
// readers that keep up (the engine relaying a turn, a client following the
// stream) never touch the disk, while a run of any length holds a bounded
// amount of memory. A reader behind the tail, and every reader of an ended
// run, reads the run file from where it left off. The tail holds at most
// maxTailEvents events and maxTailBytes bytes of records; when an append
// takes it past either bound, only the newest events within half of both are
// kept (one copy every many appends, not one per append). An ended run keeps
// no events in memory at all.
const (
	maxTailEvents = 256
	maxTailBytes  = 1 << 20
)

// readBufferSize is the buffer of a reader of a run file.
const readBufferSize = 64 << 10

// tailEvent is an event kept in memory and where its record ends in the run
// file, which is where a reader that yielded it goes on reading.
type tailEvent struct {
	Event
	end  int64 // offset just past the event's record
	size int64 // bytes of the record: what the event holds in memory
}

// eventTail is a running run's latest events; runState.mu guards it.
// Iterators read a snapshot of events without the lock: push only appends
// past the end of every snapshot, or replaces the array.
type eventTail struct {
	events []tailEvent // consecutive Seqs, ending with the run's last event
	bytes  int64
}

// push adds the newest event and returns the change in bytes held.
func (t *eventTail) push(ev tailEvent) int64 {
	t.events = append(t.events, ev)
	t.bytes += ev.size
	if len(t.events) <= maxTailEvents && t.bytes <= maxTailBytes {
		return ev.size
	}
	keep, kept := 0, int64(0)
	for i := len(t.events) - 1; i >= 0; i-- {
		size := t.events[i].size
		if keep+1 > maxTailEvents/2 || kept+size > maxTailBytes/2 {
			break
		}
		keep, kept = keep+1, kept+size
	}
	// A new array: the evicted events are freed once no iterator reads
	// the old one.
	events := make([]tailEvent, keep, maxTailEvents+1)
	copy(events, t.events[len(t.events)-keep:])
	delta := ev.size - (t.bytes - kept)
	t.events, t.bytes = events, kept
	return delta
}

// Events iterates over the run's events with Seq > afterSeq, in order: first
// those recorded, then, while the run is running, each new one as it is
// appended; it ends when the run has ended and every event was yielded. It
// yields (Event{}, err) and stops when ctx is done (ctx.Err()) or the Journal
// is closed (ErrClosed), and when the run's events can no longer be read: a
// *RunPrunedError once retention pruned the payload of an ended run before
// the iteration started (one that started reads on), ErrNotFound once the run
// was forgotten or its session deleted. After the loop, Info gives the final
// state and result.
//
// Subscribers do not block the writer and start no goroutines: an iterator
// yields from the run's in-memory tail when it can and reads the run file,
// which it opens when it starts and closes when it returns, for the events
// that left the tail (and for every event of an ended run); when it has
// caught up it waits on a channel that the next Append closes. A slow reader
// only falls behind: it loses no event, yields none twice, and holds one
// event and one read buffer beyond the run's bounded tail.
func (r *Run) Events(ctx context.Context, afterSeq int64) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		f, err := r.j.openRunFile(r.rs)
		if err != nil {
			yield(Event{}, err)
			return
		}
		defer func() { _ = f.Close() }()
		rd := &runReader{rs: r.rs, f: f}
		rs := r.rs
		next := max(afterSeq, 0) // the last event yielded, or skipped
		for {
			rs.mu.Lock()
			tail, last, evEnd := rs.tail.events, rs.lastSeq, rs.evEnd
			ended := rs.state != StateRunning
			var wake chan struct{}
			if !ended && last <= next {
				if rs.wake == nil {
					rs.wake = make(chan struct{})
				}
				wake = rs.wake
			}
			rs.mu.Unlock()
			first := last + 1 // the first event in memory
			if len(tail) > 0 {
				first = tail[0].Seq
			}
			if next+1 < first {
				var ok bool
				if next, ok = rd.read(next, first-1, evEnd, yield); !ok {
					return
				}
			}
			if i := next + 1 - first; i >= 0 && i < int64(len(tail)) {
				for _, te := range tail[i:] {
					if !yield(te.Event, nil) {
						return
					}
					next, rd.off = te.Seq, te.end
				}
			}
			if ended {
				return
			}
			if wake == nil {
				continue // more arrived while yielding
			}
			select {
			case <-wake:
			case <-ctx.Done():
				yield(Event{}, ctx.Err())
				return
			case <-r.j.closing:
				yield(Event{}, ErrClosed)
				return
			}
		}
	}
}

// openRunFile opens the file of rs for reading if the index still holds that
// run with its payload. It checks under j.mu, which retention and
// DeleteSession hold to replace or remove run files, so the file opened is
// the run's whole file; an open file stays readable after it is replaced.
func (j *Journal) openRunFile(rs *runState) (*os.File, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	cur := j.runs[rs.key]
	switch {
	case cur == nil || cur.gen != rs.gen:
		return nil, fmt.Errorf("journal: run %q of session %s: %w", rs.key.runID, rs.key.session, ErrNotFound)
	case cur.pruned:
		return nil, j.prunedError(cur)
	}
	f, err := os.Open(rs.path)
	if err != nil {
		return nil, fmt.Errorf("journal: open run %q of session %s: %w", rs.key.runID, rs.key.session, err)
	}
	return f, nil
}

// runReader reads a run's events from its file for one iterator.
type runReader struct {
	rs *runState
	f  *os.File
	br *bufio.Reader
	// off is the offset just past the record of the last event the
	// iterator yielded or skipped, where the next one starts; 0 when not
	// known (the file is then read from its begin record).
	off int64
}

// read yields the events after next up to upto, reading no byte at or past
// limit (the end of the last event published to readers: anything after it
// may be a record being written). It returns the last event yielded and
// whether to go on: false when yield asked to stop or an error was yielded.
func (rd *runReader) read(next, upto, limit int64, yield func(Event, error) bool) (int64, bool) {
	// A new reader at every call: what an earlier one buffered beyond its
	// limit may since have been cut (a failed write) or rewritten.
	sr := io.NewSectionReader(rd.f, rd.off, limit-rd.off)
	if rd.br == nil {
		rd.br = bufio.NewReaderSize(sr, readBufferSize)
	} else {
		rd.br.Reset(sr)
	}
	prev := next // Seq of the record before rd.off
	if rd.off == 0 {
		prev = -1 // the begin record comes first
	}
	for next < upto {
		line, err := rd.br.ReadBytes('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("it ends before event %d", prev+1)
			}
			yield(Event{}, rd.damaged(err))
			return next, false
		}
		var rec fileRecord
		if err := json.Unmarshal(line, &rec); err != nil {
			yield(Event{}, rd.damaged(fmt.Errorf("the record after event %d: %w", prev, err)))
			return next, false
		}
		if prev < 0 {
			if rec.Rec != recBegin || rec.RunID != rd.rs.key.runID || rec.Digest != hex.EncodeToString(rd.rs.digest[:]) {
				yield(Event{}, rd.damaged(errors.New("its begin record is not this run's")))
				return next, false
			}
		} else if rec.Rec != recEvent || rec.Seq != prev+1 {
			yield(Event{}, rd.damaged(fmt.Errorf("the record after event %d is not event %d", prev, prev+1)))
			return next, false
		}
		rd.off += int64(len(line))
		prev = rec.Seq
		if rec.Rec != recEvent || rec.Seq <= next {
			continue
		}
		if !yield(Event{Seq: rec.Seq, Type: rec.Type, At: rec.At, Payload: rec.Payload}, nil) {
			return next, false
		}
		next = rec.Seq
	}
	return next, true
}

func (rd *runReader) damaged(err error) error {
	return fmt.Errorf("journal: read run %q of session %s: its file is damaged: %w", rd.rs.key.runID, rd.rs.key.session, err)
}
