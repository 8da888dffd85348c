package journal

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// Prune applies retention. It forgets ended runs that finished more than
// Options.MaxAge ago — only then is a runId free again, and a tombstone
// goes no earlier than its run would have. Then it reduces to their
// tombstones the oldest ended runs beyond Options.MaxRuns and those of
// every namespace over Options.MaxNamespaceBytes, and last, for a namespace
// still over, prunes the transcripts of its idle sessions (caps.go).
// Running runs are never pruned. Open prunes once; RunRetention prunes
// periodically.
func (j *Journal) Prune() (PruneReport, error) {
	var rep PruneReport
	n, err := j.forgetAged()
	rep.Forgotten = n
	if errors.Is(err, ErrClosed) {
		return rep, err
	}
	errs := []error{err}
	n, _, err = j.prunePayloads(j.beyondMaxRuns())
	rep.PayloadsPruned += n
	errs = append(errs, err, j.applyByteCaps(&rep))
	if err := errors.Join(errs...); err != nil {
		return rep, fmt.Errorf("journal: prune: %w", err)
	}
	return rep, nil
}

// RunRetention prunes (Prune) every interval until ctx ends or the Journal
// is closed, and hands each pass's outcome to report (may be nil). The
// dispatcher runs it for as long as it is up, so the age limit and the caps
// hold while it runs, not only at start-up.
func (j *Journal) RunRetention(ctx context.Context, interval time.Duration, report func(PruneReport, error)) error {
	if interval <= 0 {
		return fmt.Errorf("journal: retention interval must be positive, got %s", interval)
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-j.closing:
			return nil
		case <-tick.C:
			rep, err := j.Prune()
			if report != nil {
				report(rep, err)
			}
		}
	}
}

// forgetAged removes the runs, tombstones included, that ended more than
// Options.MaxAge ago, and notes each namespace's oldest remaining run.
func (j *Journal) forgetAged() (int, error) {
	now := j.now()
	j.mu.Lock()
	if j.closed.Load() {
		j.mu.Unlock()
		return 0, ErrClosed
	}
	ended := j.endedLocked(false)
	cut := 0 // ended[:cut] go
	if j.opts.MaxAge > 0 {
		limit := now.Add(-j.opts.MaxAge)
		for cut < len(ended) && ended[cut].finishedAt.Before(limit) {
			cut++
		}
	}
	// Files go while j.mu is held: a Begin that reuses a forgotten runId must
	// not create its file before the old one is removed. No directory is
	// fsynced: a removal lost in a crash brings back a run that aged out, and
	// the Prune in Open forgets it again. A runId is only kept longer then,
	// never forgotten early; a Begin that reuses it fsyncs its directory.
	var errs []error
	for _, rs := range ended[:cut] {
		j.unindexRunLocked(rs.key)
		if err := os.Remove(rs.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	j.noteOldestLocked(ended[cut:])
	j.mu.Unlock()
	return cut, errors.Join(errs...)
}

// beyondMaxRuns lists the ended runs that keep their payload beyond the
// newest Options.MaxRuns, oldest first.
func (j *Journal) beyondMaxRuns() []*runState {
	if j.opts.MaxRuns <= 0 {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	kept := j.endedLocked(true)
	if len(kept) <= j.opts.MaxRuns {
		return nil
	}
	return kept[:len(kept)-j.opts.MaxRuns]
}

// endedLocked lists the ended runs, oldest finish first (ties by session and
// runId), only those that keep their payload when withPayload; j.mu must be
// held.
func (j *Journal) endedLocked(withPayload bool) []*runState {
	var ended []*runState
	for _, rs := range j.runs {
		if !rs.creating() && rs.currentState() != StateRunning && (!withPayload || !rs.pruned) {
			ended = append(ended, rs)
		}
	}
	sort.Slice(ended, func(a, b int) bool {
		x, y := ended[a], ended[b]
		if !x.finishedAt.Equal(y.finishedAt) {
			return x.finishedAt.Before(y.finishedAt)
		}
		if x.key.session != y.key.session {
			return x.key.session < y.key.session
		}
		return x.key.runID < y.key.runID
	})
	return ended
}

// DeleteSession removes every run (tombstones included), the transcript, the
// lease and the capacity reservations of a session, for the AgentSession
// finalizer; its runs no longer count against the namespace's
// Options.MaxNamespaceRuns. It fails with ErrSessionBusy while one of the
// session's runs is running or its lease is held and has not expired (the
// engine ends the turn first; the finalizer retries). Deleting a session the journal has
// nothing for is not an error.
func (j *Journal) DeleteSession(session string) error {
	if err := ValidateSession(session); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed.Load() {
		return ErrClosed
	}
	var keys []runKey
	for key, rs := range j.runs {
		if key.session != session {
			continue
		}
		if rs.creating() || rs.currentState() == StateRunning {
			return fmt.Errorf("journal: delete session %s: run %q: %w", session, key.runID, ErrSessionBusy)
		}
		keys = append(keys, key)
	}
	s := j.sessionLocked(session)
	s.mu.Lock() // waits for a transcript operation, grant or reservation in flight
	defer s.mu.Unlock()
	if j.leaseBusyLocked(session) {
		return fmt.Errorf("journal: delete session %s: its lease is held: %w", session, ErrSessionBusy)
	}
	if err := os.RemoveAll(s.dir); err != nil {
		return fmt.Errorf("journal: delete session %s: %w", session, err)
	}
	for _, key := range keys {
		j.unindexRunLocked(key)
	}
	j.forgetLease(session)
	j.forgetReservations(session)
	s.deleted = true
	delete(j.sessions, session)
	// The namespace directory stays: removing it could race with a Begin of
	// another session of the namespace creating its directories.
	if err := j.syncDir(filepath.Dir(s.dir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("journal: delete session %s: %w", session, err)
	}
	return nil
}
