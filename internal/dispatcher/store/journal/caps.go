package journal

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Usage returns what each namespace holds now. A namespace with neither runs
// nor a session is absent.
func (j *Journal) Usage() (map[string]NamespaceUsage, error) {
	j.mu.Lock()
	if j.closed.Load() {
		j.mu.Unlock()
		return nil, ErrClosed
	}
	usage := make(map[string]NamespaceUsage, len(j.spaces))
	add := func(session string, runs int, bytes int64) {
		u := usage[namespaceOf(session)]
		u.Runs += runs
		u.Bytes += bytes
		usage[namespaceOf(session)] = u
	}
	var live []*runState
	for _, rs := range j.runs {
		switch {
		case rs.pruned:
			add(rs.key.session, 1, 0)
		case rs.creating() || rs.currentState() == StateRunning:
			add(rs.key.session, 1, 0)
			live = append(live, rs)
		default: // an ended run's size does not change
			add(rs.key.session, 1, rs.size)
		}
	}
	sessions := slices.Collect(maps.Values(j.sessions))
	j.mu.Unlock()

	for _, rs := range live {
		rs.wmu.Lock()
		size := rs.size
		rs.wmu.Unlock()
		add(rs.key.session, 0, size)
	}
	var errs []error
	for _, s := range sessions {
		s.mu.Lock()
		if !s.deleted {
			size, err := j.transcriptSize(s)
			errs = append(errs, err)
			add(s.name, 0, size)
		}
		s.mu.Unlock()
	}
	if err := errors.Join(errs...); err != nil {
		return usage, fmt.Errorf("journal: usage: %w", err)
	}
	return usage, nil
}

// applyByteCaps brings every namespace over Options.MaxNamespaceBytes back
// under it: first the payloads of its oldest ended runs go (their tombstones
// stay), then the transcripts of its idle sessions, least recently active
// first. What stays over the cap is live — running runs and the transcripts
// of sessions with a running turn — and is not touched: a turn's own records
// are never cut while it runs, and a session's transcript is bounded by
// Options.MaxTranscriptBytes anyway.
func (j *Journal) applyByteCaps(rep *PruneReport) error {
	limit := j.opts.MaxNamespaceBytes
	if limit <= 0 {
		return nil
	}
	usage, err := j.Usage()
	if errors.Is(err, ErrClosed) {
		return err
	}
	errs := []error{err}
	for _, ns := range slices.Sorted(maps.Keys(usage)) {
		over := usage[ns].Bytes - limit
		if over <= 0 {
			continue
		}
		n, freed, err := j.prunePayloads(j.oldestPayloadsOf(ns, over))
		rep.PayloadsPruned += n
		errs = append(errs, err)
		if over -= freed; over > 0 {
			n, err := j.pruneTranscriptsOf(ns, over)
			rep.TranscriptsPruned += n
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// oldestPayloadsOf picks the oldest ended runs of ns that keep their payload
// until their files add up to at least over bytes.
func (j *Journal) oldestPayloadsOf(ns string, over int64) []*runState {
	j.mu.Lock()
	defer j.mu.Unlock()
	var picked []*runState
	for _, rs := range j.endedLocked(true) {
		if over <= 0 {
			break
		}
		if namespaceOf(rs.key.session) == ns {
			picked = append(picked, rs)
			over -= rs.size
		}
	}
	return picked
}

// pruneTranscriptsOf replaces transcripts of idle sessions of ns by a
// "pruned" marker, least recently active session first, until over bytes
// are freed; it returns how many it replaced. pruneTranscript skips the
// sessions with a running run.
func (j *Journal) pruneTranscriptsOf(ns string, over int64) (int, error) {
	n := 0
	var errs []error
	for _, session := range j.sessionsByActivity(ns) {
		if over <= 0 {
			break
		}
		freed, err := j.pruneTranscript(session)
		if errors.Is(err, ErrClosed) {
			return n, err
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("prune the transcript of session %s: %w", session, err))
		}
		if freed > 0 {
			n++
			over -= freed
		}
	}
	return n, errors.Join(errs...)
}

// sessionsByActivity lists the sessions of ns, least recently active first
// (by their runs' last start or finish; a session without runs first).
func (j *Journal) sessionsByActivity(ns string) []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	active := map[string]time.Time{}
	for key, rs := range j.runs {
		if namespaceOf(key.session) != ns {
			continue
		}
		for _, t := range []time.Time{rs.startedAt, rs.finishedAt} {
			if t.After(active[key.session]) {
				active[key.session] = t
			}
		}
	}
	var names []string
	for name := range j.sessions {
		if namespaceOf(name) == ns {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		if c := active[a].Compare(active[b]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return names
}

// pruneTranscript replaces the transcript of an idle session by the marker
// {"type":"pruned","bytes":N,"at":"…"} (N: the bytes removed), written to a
// temporary file and renamed over it, and returns the bytes freed. The
// session is checked idle under j.mu and its lock taken before j.mu is let
// go, so a turn that begins meanwhile (Begin creates its run file under the
// session's lock) writes its records after the marker. The session's
// TranscriptFull is cleared: the transcript has room again.
func (j *Journal) pruneTranscript(session string) (int64, error) {
	j.mu.Lock()
	if j.closed.Load() {
		j.mu.Unlock()
		return 0, ErrClosed
	}
	s := j.sessions[session]
	if s == nil || j.sessionBusyLocked(session) {
		j.mu.Unlock()
		return 0, nil
	}
	s.mu.Lock()
	j.mu.Unlock()
	defer s.mu.Unlock()
	if s.deleted {
		return 0, nil
	}
	size, err := j.transcriptSize(s)
	if err != nil {
		return 0, err
	}
	marker := []byte(`{"type":"pruned","bytes":` + strconv.FormatInt(size, 10) +
		`,"at":"` + j.now().Format(time.RFC3339Nano) + `"}` + "\n")
	if size <= int64(len(marker)) {
		return 0, nil // nothing to gain
	}
	path := filepath.Join(s.dir, transcriptFileName)
	if err := j.writeFile(path+tmpExt, marker); err != nil {
		removeTemp(path)
		return 0, err
	}
	if err := os.Rename(path+tmpExt, path); err != nil {
		removeTemp(path)
		return 0, err
	}
	// The rename is made durable by the next SyncTranscript, before any
	// record appended after the marker is: a crash before it brings back the
	// old transcript, which the Prune in Open prunes again.
	s.tsize, s.tfull, s.tdirPending = int64(len(marker)), false, true
	return size - int64(len(marker)), nil
}

// sessionBusyLocked reports whether a run of session is running or being
// begun; j.mu must be held.
func (j *Journal) sessionBusyLocked(session string) bool {
	for key, rs := range j.runs {
		if key.session == session && (rs.creating() || rs.currentState() == StateRunning) {
			return true
		}
	}
	return false
}
