package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// Digest is the request digest Begin expects: sha256 of the canonical request
// body. Canonicalization is the caller's (the same request must give the same
// bytes).
func Digest(canonicalBody []byte) [32]byte { return sha256.Sum256(canonicalBody) }

// Run is a handle on one run. A handle from BeginNew writes (Append, Finish);
// every handle reads (Events, Info, Done). Safe for concurrent use.
type Run struct {
	j      *Journal
	rs     *runState
	writer bool
	lease  *leaseBinding // the grant a run from Claim writes under; nil from Begin
}

// runState is one run. The index holds it: in full (with its tail of events,
// events.go) while the run is running, as a metadata-only copy once it ended.
// Handles keep the state they were given; events that are not in a tail are
// read from the run file.
//
// Locks: wmu (writes to the file) before Journal.mu before mu.
type runState struct {
	key       runKey
	gen       uint64 // the run's identity in the index, kept by its copies (indexRunLocked)
	path      string
	digest    [32]byte
	startedAt time.Time
	requester Requester // who asked for the run (its begin record)
	recovered bool
	pruned    bool          // the file holds only the run's tombstone (tombstone.go)
	ready     chan struct{} // non-nil while Begin creates the file; closed when done

	wmu    sync.Mutex
	f      *os.File // open while a writer in this process may append
	size   int64    // bytes of complete records in the file
	broken error    // a failed write could not be undone; the run takes no more writes
	// unwritten is the last Append's event when its write failed: the run's
	// last event if it now ends unrecorded (unrecorded.go).
	unwritten *unwrittenEvent

	mu         sync.Mutex
	state      State
	tail       eventTail // the latest events while running (events.go); empty once ended
	lastSeq    int64
	evEnd      int64 // offset just past the last event's record, as published to readers
	finishedAt time.Time
	result     json.RawMessage
	reason     string
	unrecorded bool          // ended in memory only: the file has no end record (unrecorded.go)
	wake       chan struct{} // closed at the next event or end; created by a waiting reader
	inbox      runInbox      // answers posted while it runs (inbox.go)
	done       chan struct{} // closed when the run ends
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (rs *runState) creating() bool {
	if rs.ready == nil {
		return false
	}
	select {
	case <-rs.ready:
		return false
	default:
		return true
	}
}

func (rs *runState) currentState() State {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.state
}

// metaCopy is the ended run as the index keeps it; rs.mu must be held.
func (rs *runState) metaCopy() *runState {
	return &runState{
		key: rs.key, gen: rs.gen, path: rs.path, digest: rs.digest, startedAt: rs.startedAt, requester: rs.requester, size: rs.size,
		state: rs.state, lastSeq: rs.lastSeq, finishedAt: rs.finishedAt, reason: rs.reason,
		pruned: rs.pruned, done: closedChan,
	}
}

// Begin records runID of session as running for the request with this digest,
// or reports what is already recorded for it (BeginOutcome). A runId recorded
// with another digest is refused with a *RunConflictError (ErrRunConflict);
// one whose payload retention pruned, with a *RunPrunedError; a new runId in
// a namespace at Options.MaxNamespaceRuns, with a *RetentionLimitError.
// Nothing is recorded then. BeginNew returns only after the begin record is
// fsynced. Begin never returns BeginNew for a runId the journal knows.
func (j *Journal) Begin(session, runID string, digest [32]byte) (*Run, BeginOutcome, error) {
	return j.begin(session, runID, digest, Requester{})
}

// begin is Begin recording by as the run's requester.
func (j *Journal) begin(session, runID string, digest [32]byte, by Requester) (*Run, BeginOutcome, error) {
	if err := ValidateSession(session); err != nil {
		return nil, 0, err
	}
	if err := store.ValidateRunID(runID); err != nil {
		return nil, 0, err
	}
	key := runKey{session, runID}
	for {
		j.mu.Lock()
		if j.closed.Load() {
			j.mu.Unlock()
			return nil, 0, ErrClosed
		}
		rs, ok := j.runs[key]
		if !ok {
			if err := j.admitLocked(session); err != nil {
				j.mu.Unlock()
				return nil, 0, err
			}
			rs = &runState{
				key: key, path: j.runPath(session, runID), digest: digest,
				startedAt: j.now(), requester: by, ready: make(chan struct{}),
				state: StateRunning, done: make(chan struct{}),
			}
			j.indexRunLocked(rs)
			sess := j.sessionLocked(session)
			j.mu.Unlock()
			if err := j.create(sess, rs); err != nil {
				j.mu.Lock()
				if j.runs[key] == rs {
					j.unindexRunLocked(key)
				}
				j.mu.Unlock()
				close(rs.ready)
				return nil, 0, fmt.Errorf("journal: begin run %q of session %s: %w", runID, session, err)
			}
			close(rs.ready)
			return &Run{j: j, rs: rs, writer: true}, BeginNew, nil
		}
		if rs.creating() {
			// Another Begin of the same runId is writing the begin record.
			j.mu.Unlock()
			<-rs.ready
			continue
		}
		if rs.digest != digest {
			j.mu.Unlock()
			return nil, 0, &RunConflictError{Session: session, RunID: runID, Recorded: rs.digest, Requested: digest}
		}
		if rs.pruned {
			j.mu.Unlock()
			return nil, 0, j.prunedError(rs)
		}
		r, err := j.handleLocked(rs) // unlocks j.mu
		if err != nil {
			return nil, 0, fmt.Errorf("journal: begin run %q of session %s: %w", runID, session, err)
		}
		if r.rs.currentState() == StateRunning {
			return r, BeginAttach, nil
		}
		return r, BeginReplay, nil
	}
}

// Lookup returns a read-only handle on a known run (for a reconnect that
// carries only the runId and Last-Event-ID), ErrNotFound, or a
// *RunPrunedError for a run of which only the tombstone is kept.
func (j *Journal) Lookup(session, runID string) (*Run, error) {
	if err := ValidateSession(session); err != nil {
		return nil, err
	}
	key := runKey{session, runID}
	for {
		j.mu.Lock()
		if j.closed.Load() {
			j.mu.Unlock()
			return nil, ErrClosed
		}
		rs, ok := j.runs[key]
		if !ok {
			j.mu.Unlock()
			return nil, fmt.Errorf("journal: run %q of session %s: %w", runID, session, ErrNotFound)
		}
		if rs.creating() {
			j.mu.Unlock()
			<-rs.ready
			continue
		}
		if rs.pruned {
			j.mu.Unlock()
			return nil, j.prunedError(rs)
		}
		r, err := j.handleLocked(rs)
		if err != nil {
			return nil, fmt.Errorf("journal: run %q of session %s: %w", runID, session, err)
		}
		return r, nil
	}
}

// handleLocked returns a read-only handle on rs and unlocks j.mu. A running
// run is shared in memory; of an ended one the begin and end records are read
// from its file, which is opened before j.mu is released so that Prune cannot
// remove it in between. Its events are read when iterated.
func (j *Journal) handleLocked(rs *runState) (*Run, error) {
	rs.mu.Lock()
	inMemory := rs.state == StateRunning || rs.unrecorded
	rs.mu.Unlock()
	if inMemory {
		j.mu.Unlock()
		return &Run{j: j, rs: rs}, nil
	}
	f, err := os.Open(rs.path)
	j.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("open run file: %w", err)
	}
	defer func() { _ = f.Close() }()
	loaded, err := loadEndedRun(f, rs)
	if err != nil {
		return nil, err
	}
	return &Run{j: j, rs: loaded}, nil
}

// create writes and fsyncs the begin record of a new run.
func (j *Journal) create(s *sessionState, rs *runState) error {
	s.mu.Lock()
	err := j.ensureDirs(s)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	line, err := beginLine(rs)
	if err != nil {
		return err
	}
	// O_TRUNC: a file left here is a begin record that never completed, or a
	// pruned run's file whose removal failed.
	f, err := os.OpenFile(rs.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, fileMode)
	if err != nil {
		return fmt.Errorf("create run file: %w", err)
	}
	if _, err := f.Write(line); err != nil {
		_ = f.Close()
		_ = os.Remove(rs.path)
		return fmt.Errorf("write begin record: %w", err)
	}
	// A claimed run is never replayed: its begin record, and the file's
	// entry in runs/, are on disk before BeginNew is returned, so a run
	// that may have executed is known after a crash of the machine.
	if err := j.sync(f); err != nil {
		_ = f.Close()
		_ = os.Remove(rs.path)
		return fmt.Errorf("sync run file: %w", err)
	}
	if err := j.syncDir(filepath.Dir(rs.path)); err != nil {
		_ = f.Close()
		_ = os.Remove(rs.path)
		return err
	}
	rs.wmu.Lock()
	defer rs.wmu.Unlock()
	if j.closed.Load() {
		// Close ran meanwhile and did not see this file; the run stays
		// recorded as running, as after a crash, and nothing executes it.
		_ = f.Close()
		return ErrClosed
	}
	rs.f, rs.size = f, int64(len(line))
	return nil
}

// beginLine is the first record of a run's file (and of its tombstone).
func beginLine(rs *runState) ([]byte, error) {
	return encodeLine(fileRecord{
		Rec: recBegin, V: formatVersion, Session: rs.key.session, RunID: rs.key.runID,
		Digest: hex.EncodeToString(rs.digest[:]), At: rs.startedAt, Requester: requesterRecord(rs.requester),
	})
}

// Ref names the run.
func (r *Run) Ref() RunRef {
	return RunRef{Session: r.rs.key.session, RunID: r.rs.key.runID, StartedAt: r.rs.startedAt, Requester: r.rs.requester, Recovered: r.rs.recovered}
}

// Info returns a snapshot of the run.
func (r *Run) Info() RunInfo {
	rs := r.rs
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return RunInfo{
		RunRef: r.Ref(), Digest: rs.digest, State: rs.state, LastSeq: rs.lastSeq,
		FinishedAt: rs.finishedAt, Result: rs.result, Reason: rs.reason,
	}
}

// Done returns a channel closed when the run has ended.
func (r *Run) Done() <-chan struct{} { return r.rs.done }

// Append records one event and returns its sequence number. typ must match
// [A-Za-z0-9_.:/-]{1,64}; payload must be valid JSON or empty, and is stored
// compacted. The event is written with one write(2) — it survives a crash of
// the process, and a crash of the machine once Finish has fsynced — and then
// published to every Events iterator; Append never waits for readers. Only a
// handle from BeginNew may append, and only while the run is running.
func (r *Run) Append(typ string, payload json.RawMessage) (int64, error) {
	if !r.writer {
		return 0, ErrNotWriter
	}
	if !store.ValidEventType(typ) {
		return 0, fmt.Errorf("%w: event type %q: want [A-Za-z0-9_.:/-]{1,64}", ErrInvalidRecord, typ)
	}
	unfence, err := r.holdLease()
	if err != nil {
		return 0, err
	}
	defer unfence()
	rs := r.rs
	rs.wmu.Lock()
	defer rs.wmu.Unlock()
	if err := r.writable(); err != nil {
		return 0, err
	}
	seq := rs.lastSeq + 1 // lastSeq changes only under wmu
	at := r.j.now()
	line, pstart, pend, err := eventLine(seq, typ, at, payload)
	if err != nil {
		return 0, fmt.Errorf("%w: event %d payload of run %q: %w", ErrInvalidRecord, seq, rs.key.runID, err)
	}
	ev := Event{Seq: seq, Type: typ, At: at}
	if pend > pstart {
		ev.Payload = line[pstart:pend:pend]
	}
	if err := rs.writeLine(line); err != nil {
		rs.unwritten = &unwrittenEvent{ev, err}
		return 0, fmt.Errorf("journal: append event %d to run %q: %w", seq, rs.key.runID, err)
	}
	rs.unwritten = nil
	rs.mu.Lock()
	r.j.tailBytes.Add(rs.tail.push(tailEvent{Event: ev, end: rs.size, size: int64(len(line))}))
	rs.lastSeq, rs.evEnd = seq, rs.size
	if rs.wake != nil {
		close(rs.wake)
		rs.wake = nil
	}
	rs.mu.Unlock()
	return seq, nil
}

// Finish ends the run with state StateFinished or StateFailed and its result
// (valid JSON or empty), fsyncs the file and closes it, and wakes every Events
// iterator. Once the end record is written the run has ended even if the
// fsync fails (the error reports it). When the end cannot be written — the
// file system is full — the run ends all the same, in memory only, and the
// write's error is returned (unrecorded.go).
func (r *Run) Finish(state State, result json.RawMessage) error {
	if !r.writer {
		return ErrNotWriter
	}
	if state != StateFinished && state != StateFailed {
		return fmt.Errorf("journal: finish run %q: state %q is not %q or %q", r.rs.key.runID, state, StateFinished, StateFailed)
	}
	unfence, err := r.holdLease()
	if err != nil {
		return err
	}
	defer unfence()
	r.rs.wmu.Lock()
	defer r.rs.wmu.Unlock()
	if err := r.writable(); err != nil && !r.endsUnrecorded() {
		return err
	}
	if err := r.j.finish(r.rs, state, result); err != nil {
		return fmt.Errorf("journal: finish run %q: %w", r.rs.key.runID, err)
	}
	return nil
}

// writable checks that the handle may write now; rs.wmu must be held.
func (r *Run) writable() error {
	if r.j.closed.Load() {
		return ErrClosed
	}
	if r.rs.broken != nil {
		return fmt.Errorf("journal: run %q: %w", r.rs.key.runID, r.rs.broken)
	}
	if r.rs.currentState() != StateRunning {
		return fmt.Errorf("journal: run %q: %w", r.rs.key.runID, ErrRunEnded)
	}
	return nil
}

// end writes the end record of a running run, fsyncs and closes its file,
// publishes the end and swaps the index entry for a metadata-only copy.
// rs.wmu must be held and the run running.
func (j *Journal) end(rs *runState, state State, result json.RawMessage, reason string) error {
	compact, err := compactResult(result)
	if err != nil {
		return err
	}
	at := j.now()
	line, err := encodeLine(fileRecord{Rec: recEnd, State: state, LastSeq: rs.lastSeq, At: at, Result: compact, Reason: reason})
	if err != nil {
		return err
	}
	if rs.f == nil { // a recovered run: nobody had it open
		f, err := os.OpenFile(rs.path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return fmt.Errorf("open run file: %w", err)
		}
		rs.f = f
	}
	if err := rs.writeLine(line); err != nil {
		return err
	}
	// The run's durable end: the end record and every event before it (a
	// reader that reconnects after a crash reads what it was streamed).
	syncErr := j.sync(rs.f)
	closeErr := rs.f.Close()
	rs.f = nil

	rs.mu.Lock()
	rs.state, rs.result, rs.reason, rs.finishedAt = state, compact, reason, at
	// Readers of an ended run read its events from the file.
	j.tailBytes.Add(-rs.tail.bytes)
	rs.tail = eventTail{}
	if rs.wake != nil {
		close(rs.wake)
		rs.wake = nil
	}
	close(rs.done)
	meta := rs.metaCopy()
	rs.mu.Unlock()

	j.mu.Lock()
	if j.runs[rs.key] == rs {
		j.runs[rs.key] = meta
	}
	j.mu.Unlock()
	if err := errors.Join(syncErr, closeErr); err != nil {
		return fmt.Errorf("end record written, not synced: %w", err)
	}
	return nil
}

// writeLine appends one complete record; on a failed or short write it cuts
// the file back so that no partial line stays in front of the next record.
// rs.wmu must be held.
func (rs *runState) writeLine(line []byte) error {
	n, err := rs.f.Write(line)
	if err == nil {
		rs.size += int64(n)
		return nil
	}
	if terr := rs.f.Truncate(rs.size); terr != nil {
		rs.broken = fmt.Errorf("write failed (%w) and could not be undone: %w", err, terr)
		return rs.broken
	}
	return fmt.Errorf("write: %w", err)
}

// MarkFailed ends a running run as failed with reason, without a result: for
// runs found running at Open (RunRef.Recovered), whose writer died with the
// previous process, and for a live run whose writer is stuck (its next Append
// or Finish gets ErrRunEnded). It returns ErrNotFound for an unknown run and
// ErrRunEnded for one that already ended. Only ref.Session and ref.RunID are
// used. Iterators attached to the run see it end.
func (j *Journal) MarkFailed(ref RunRef, reason string) error {
	rs, err := j.runOf(ref.Session, ref.RunID)
	if errors.Is(err, ErrClosed) {
		return err
	}
	if err != nil {
		return fmt.Errorf("journal: mark run %q of session %s failed: %w", ref.RunID, ref.Session, err)
	}
	rs.wmu.Lock()
	defer rs.wmu.Unlock()
	if j.closed.Load() {
		return ErrClosed
	}
	if rs.currentState() != StateRunning {
		return fmt.Errorf("journal: mark run %q of session %s failed: %w", ref.RunID, ref.Session, ErrRunEnded)
	}
	if rs.broken != nil {
		return fmt.Errorf("journal: mark run %q of session %s failed: %w", ref.RunID, ref.Session, rs.broken)
	}
	if err := j.end(rs, StateFailed, nil, reason); err != nil {
		return fmt.Errorf("journal: mark run %q of session %s failed: %w", ref.RunID, ref.Session, err)
	}
	return nil
}

// Running lists the runs that are running, sorted by session and runId. Right
// after Open they are exactly the runs found running on disk (Recovered): the
// engine marks each failed (MarkFailed) and clears its activeTurn.
func (j *Journal) Running() []RunRef {
	j.mu.Lock()
	defer j.mu.Unlock()
	var refs []RunRef
	for _, rs := range j.runs {
		if rs.creating() || rs.currentState() != StateRunning {
			continue
		}
		refs = append(refs, RunRef{Session: rs.key.session, RunID: rs.key.runID, StartedAt: rs.startedAt, Recovered: rs.recovered})
	}
	sort.Slice(refs, func(a, b int) bool {
		if refs[a].Session != refs[b].Session {
			return refs[a].Session < refs[b].Session
		}
		return refs[a].RunID < refs[b].RunID
	})
	return refs
}
