package journal

import (
	"strings"
	"time"
)

// namespaceState is what the index keeps per namespace; j.mu guards it.
type namespaceState struct {
	runs int // runs in the index: running, ended and tombstones
	// oldestEnd is the finish time of the namespace's oldest ended run at
	// the last Prune (zero: none), for RetentionLimitError.RetryAfter
	// without a scan of the index at every refusal.
	oldestEnd time.Time
}

func namespaceOf(session string) string {
	ns, _, _ := strings.Cut(session, "/")
	return ns
}

// indexRunLocked puts rs, a run new to the index, in it, counting a new key
// for its namespace, and gives it its gen: the copies that later replace it in
// the index (ended, pruned) keep it, a run recorded again under the same key
// (after it was forgotten) gets another. j.mu must be held. Every insertion
// of a key goes through it.
func (j *Journal) indexRunLocked(rs *runState) {
	j.lastGen++
	rs.gen = j.lastGen
	if _, ok := j.runs[rs.key]; !ok {
		if j.spaces == nil {
			j.spaces = map[string]*namespaceState{}
		}
		ns := namespaceOf(rs.key.session)
		st := j.spaces[ns]
		if st == nil {
			st = &namespaceState{}
			j.spaces[ns] = st
		}
		st.runs++
	}
	j.runs[rs.key] = rs
}

// unindexRunLocked removes a key from the index and its namespace's count;
// j.mu must be held. Every deletion of a key goes through it.
func (j *Journal) unindexRunLocked(key runKey) {
	if _, ok := j.runs[key]; !ok {
		return
	}
	delete(j.runs, key)
	ns := namespaceOf(key.session)
	if st := j.spaces[ns]; st != nil {
		if st.runs--; st.runs <= 0 {
			delete(j.spaces, ns)
		}
	}
}

// Admit returns the *RetentionLimitError Begin would refuse a new runId of
// session with now, or nil: a check the engine can make before it selects a
// harness and connects to a server. Begin checks again.
func (j *Journal) Admit(session string) error {
	if err := ValidateSession(session); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed.Load() {
		return ErrClosed
	}
	return j.admitLocked(session)
}

// admitLocked refuses a new runId in a namespace that holds
// Options.MaxNamespaceRuns runs; j.mu must be held.
func (j *Journal) admitLocked(session string) error {
	ns := namespaceOf(session)
	st := j.spaces[ns]
	limit := j.opts.MaxNamespaceRuns
	if limit <= 0 || st == nil || st.runs < limit {
		return nil
	}
	e := &RetentionLimitError{Namespace: ns, Runs: st.runs, Limit: limit}
	if j.opts.MaxAge > 0 && !st.oldestEnd.IsZero() {
		e.RetryAfter = max(0, st.oldestEnd.Add(j.opts.MaxAge).Sub(j.now()))
	}
	return e
}

// noteOldestLocked records each namespace's oldest ended run from ended
// (oldest first); j.mu must be held.
func (j *Journal) noteOldestLocked(ended []*runState) {
	for _, st := range j.spaces {
		st.oldestEnd = time.Time{}
	}
	for _, rs := range ended {
		if st := j.spaces[namespaceOf(rs.key.session)]; st != nil && st.oldestEnd.IsZero() {
			st.oldestEnd = rs.finishedAt
		}
	}
}
