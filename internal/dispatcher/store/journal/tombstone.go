package journal

import (
	"errors"
	"fmt"
	"os"
)

// A run's tombstone is what retention keeps of it when its payload goes (for
// Options.MaxRuns or Options.MaxNamespaceBytes): the run file is rewritten to
// two records,
//
//	{"rec":"begin","v":1,"session":"ns/uid","runId":"…","digest":"<hex>","at":"…"}
//	{"rec":"end","state":"finished|failed","lastSeq":N,"at":"…","reason":"…","pruned":true}
//
// — the runId, the request digest, the final state, the finish time and the
// last event number, without the events and the result. The new content is
// written to <file>.tmp, fsynced and renamed over the run file, so a crash
// leaves the whole run or its tombstone, never a mix (Open removes a stale
// .tmp). The tombstone stays until the run ages out (Options.MaxAge) like any
// run, so a runId is never forgotten early and never runs again: Begin and
// Lookup answer it with a *RunPrunedError, and Begin with another digest
// still with a *RunConflictError.

// tmpExt is the suffix of a file's replacement while it is written.
const tmpExt = ".tmp"

// prunedError is the answer for a known run whose payload is gone.
func (j *Journal) prunedError(rs *runState) error {
	e := &RunPrunedError{Session: rs.key.session, RunID: rs.key.runID, State: rs.state, FinishedAt: rs.finishedAt, LastSeq: rs.lastSeq}
	if j.opts.MaxAge > 0 {
		e.KeptUntil = rs.finishedAt.Add(j.opts.MaxAge)
	}
	return e
}

// tombstoneLines renders the tombstone of an ended run.
func tombstoneLines(rs *runState) ([]byte, error) {
	begin, err := beginLine(rs)
	if err != nil {
		return nil, err
	}
	end, err := encodeLine(fileRecord{Rec: recEnd, State: rs.state, LastSeq: rs.lastSeq, At: rs.finishedAt, Reason: rs.reason, Pruned: true})
	if err != nil {
		return nil, err
	}
	return append(begin, end...), nil
}

// prunePayloads reduces ended runs (index entries, oldest first) to their
// tombstones and returns how many it reduced and how many bytes their files
// held before. A run that is gone or was replaced meanwhile (aged out, its
// session deleted) is skipped.
//
// The tombstones are fsynced before they are renamed over the run files, so
// a run file holds the whole run or its tombstone, and its runId is kept
// either way (never replay). The renames are not made durable: one lost in a
// crash brings back a payload, which the Prune in Open prunes again.
func (j *Journal) prunePayloads(victims []*runState) (n int, freed int64, err error) {
	var errs []error
	for _, rs := range victims {
		ok, err := j.pruneRun(rs)
		if err != nil {
			errs = append(errs, fmt.Errorf("prune the payload of run %q of session %s: %w", rs.key.runID, rs.key.session, err))
			if errors.Is(err, ErrClosed) {
				break
			}
		}
		if ok {
			n++
			freed += rs.size
		}
	}
	return n, freed, errors.Join(errs...)
}

// pruneRun replaces the file of an ended run by its tombstone. The new file
// is written under the session's lock (DeleteSession waits for it, and a
// deleted session is skipped) and renamed under j.mu, together with the
// index update, so a reader that opened the run file (handleLocked, under
// j.mu) reads the whole run and a later one gets the RunPrunedError.
func (j *Journal) pruneRun(rs *runState) (bool, error) {
	data, err := tombstoneLines(rs)
	if err != nil {
		return false, err
	}
	j.mu.Lock()
	if j.closed.Load() {
		j.mu.Unlock()
		return false, ErrClosed
	}
	if j.runs[rs.key] != rs {
		j.mu.Unlock()
		return false, nil
	}
	s := j.sessionLocked(rs.key.session)
	j.mu.Unlock()

	s.mu.Lock()
	if s.deleted {
		s.mu.Unlock()
		return false, nil
	}
	err = j.writeFile(rs.path+tmpExt, data)
	s.mu.Unlock()
	if err != nil {
		removeTemp(rs.path)
		return false, err
	}

	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed.Load() {
		removeTemp(rs.path)
		return false, ErrClosed
	}
	if j.runs[rs.key] != rs {
		removeTemp(rs.path)
		return false, nil
	}
	if err := os.Rename(rs.path+tmpExt, rs.path); err != nil {
		removeTemp(rs.path)
		return false, err
	}
	rs.mu.Lock()
	t := rs.metaCopy()
	rs.mu.Unlock()
	t.pruned, t.size = true, int64(len(data))
	j.runs[rs.key] = t
	return true, nil
}

// removeTemp removes the replacement of path left by a failed or interrupted
// rewrite, if any.
func removeTemp(path string) { _ = os.Remove(path + tmpExt) }
