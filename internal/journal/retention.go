package journal

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// Prune applies retention and returns how many runs it removed: ended runs
// that finished more than Options.MaxAge ago, then the oldest ended runs
// beyond Options.MaxRuns (oldest by finish time). Running runs are never
// pruned. Open prunes once; the dispatcher calls Prune periodically. A pruned
// runId is forgotten: Begin treats it as new.
func (j *Journal) Prune() (int, error) {
	now := j.now()
	j.mu.Lock()
	if j.closed.Load() {
		j.mu.Unlock()
		return 0, ErrClosed
	}
	var ended []*runState
	for _, rs := range j.runs {
		if !rs.creating() && rs.currentState() != StateRunning {
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
	cut := 0 // ended[:cut] go
	if j.opts.MaxAge > 0 {
		limit := now.Add(-j.opts.MaxAge)
		for cut < len(ended) && ended[cut].finishedAt.Before(limit) {
			cut++
		}
	}
	if j.opts.MaxRuns > 0 && len(ended)-cut > j.opts.MaxRuns {
		cut = len(ended) - j.opts.MaxRuns
	}
	// Files go while j.mu is held: a Begin that reuses a pruned runId must not
	// create its file before the old one is removed.
	dirs := map[string]bool{}
	var errs []error
	for _, rs := range ended[:cut] {
		delete(j.runs, rs.key)
		if err := os.Remove(rs.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
		dirs[filepath.Dir(rs.path)] = true
	}
	j.mu.Unlock()
	for d := range dirs {
		if err := j.syncDir(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return cut, fmt.Errorf("journal: prune: %w", err)
	}
	return cut, nil
}

// DeleteSession removes every run and the transcript of a session, for the
// AgentSession finalizer. It fails with ErrSessionBusy while one of the
// session's runs is running (the engine ends it first; the finalizer retries).
// Deleting a session the journal has nothing for is not an error.
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
	s.mu.Lock() // waits for a transcript operation in flight
	defer s.mu.Unlock()
	if err := os.RemoveAll(s.dir); err != nil {
		return fmt.Errorf("journal: delete session %s: %w", session, err)
	}
	for _, key := range keys {
		delete(j.runs, key)
	}
	s.deleted = true
	delete(j.sessions, session)
	// The namespace directory stays: removing it could race with a Begin of
	// another session of the namespace creating its directories.
	if err := j.syncDir(filepath.Dir(s.dir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("journal: delete session %s: %w", session, err)
	}
	return nil
}
