package journal

import (
	"encoding/json"
	"fmt"
)

// A run whose end cannot be written — the journal's file system is full, or
// a failed write could not be undone (runState.broken) — still ends for the
// readers of this process, so that a turn that could not be recorded fails
// visibly instead of looking like it runs forever. Finish then ends the run
// in memory with its state and result, publishes the event whose Append
// failed last, if any (the `error` event the engine appends before Finish),
// as the run's last event with the sequence number it was given, wakes every
// reader, and returns the write's error.
//
// None of that is durable. The file keeps the events written before it and
// no end record, so a journal opened after a restart finds the run running
// and Recover ends it failed, outcome unknown; the event published in memory
// is gone then. Until the restart the index keeps the run in memory (Lookup
// answers from there) and its runId is answered as any ended run's: it never
// runs again.

// unwrittenEvent is an event whose write failed, with the write's error.
type unwrittenEvent struct {
	Event
	err error
}

// endsUnrecorded reports whether Finish ends the run although writable
// refused it: a run broken by a write that could not be undone. rs.wmu must
// be held.
func (r *Run) endsUnrecorded() bool {
	return r.rs.broken != nil && !r.j.closed.Load() && r.rs.currentState() == StateRunning
}

// finish ends the running run rs for Finish; rs.wmu must be held. After an
// event that could not be written no end record is written either: the file
// would then claim an end without the event its readers saw last. Such a
// run ends unrecorded, as one whose end record cannot be written does.
func (j *Journal) finish(rs *runState, state State, result json.RawMessage) error {
	compact, err := compactResult(result)
	if err != nil {
		return err
	}
	werr := rs.broken
	if werr == nil && rs.unwritten != nil {
		werr = fmt.Errorf("event %d was not written: %w", rs.unwritten.Seq, rs.unwritten.err)
	}
	if werr == nil {
		werr = j.end(rs, state, compact, "")
		if werr == nil || rs.currentState() != StateRunning {
			return werr // ended; an fsync that failed is reported
		}
	}
	j.endUnrecorded(rs, state, compact)
	return fmt.Errorf("the run ended for this process's readers only, its end is not on disk: %w", werr)
}

// endUnrecorded ends rs in memory only; rs.wmu must be held.
func (j *Journal) endUnrecorded(rs *runState, state State, result json.RawMessage) {
	if rs.f != nil {
		_ = rs.f.Close() // nothing more is written to it
		rs.f = nil
	}
	ev := rs.unwritten
	rs.unwritten = nil
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if ev != nil {
		// Served from memory: the tail is never dropped for a run that ends
		// unrecorded, and no file offset follows it.
		j.tailBytes.Add(rs.tail.push(tailEvent{Event: ev.Event, end: rs.size}))
		rs.lastSeq = ev.Seq
	}
	rs.state, rs.result, rs.finishedAt, rs.unrecorded = state, result, j.now(), true
	if rs.wake != nil {
		close(rs.wake)
		rs.wake = nil
	}
	close(rs.done)
}
