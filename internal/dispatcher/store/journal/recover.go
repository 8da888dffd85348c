package journal

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// load builds the index from the directory; it runs inside Open, before the
// Journal is shared, but takes j.mu for the helpers that expect it.
func (j *Journal) load() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	root := filepath.Join(j.dir, sessionsDirName)
	nsEntries, err := os.ReadDir(root)
	if err != nil {
		return fmt.Errorf("read %s: %w", root, err)
	}
	for _, nsEntry := range nsEntries {
		if !nsEntry.IsDir() {
			continue
		}
		nameEntries, err := os.ReadDir(filepath.Join(root, nsEntry.Name()))
		if err != nil {
			return fmt.Errorf("read namespace directory: %w", err)
		}
		for _, nameEntry := range nameEntries {
			key := SessionKey(nsEntry.Name(), nameEntry.Name())
			if !nameEntry.IsDir() || ValidateSession(key) != nil {
				continue
			}
			if err := j.loadSession(key); err != nil {
				return err
			}
		}
	}
	return nil
}

func (j *Journal) loadSession(session string) error {
	s := j.sessionLocked(session)
	torn, err := j.repairTranscript(s)
	if err != nil {
		return fmt.Errorf("session %s: %w", session, err)
	}
	if torn {
		j.recovery.TornTails++
	}
	removeTemp(filepath.Join(s.dir, transcriptFileName))
	runsDir := filepath.Join(s.dir, runsDirName)
	entries, err := os.ReadDir(runsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("session %s: read runs: %w", session, err)
	}
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), tmpExt); ok && isRunFileName(name) {
			removeTemp(filepath.Join(runsDir, name))
			continue
		}
		if !e.Type().IsRegular() || !isRunFileName(e.Name()) {
			continue // *.corrupt copies and strangers
		}
		if err := j.loadRun(session, filepath.Join(runsDir, e.Name())); err != nil {
			return fmt.Errorf("session %s: %w", session, err)
		}
	}
	return nil
}

func isRunFileName(name string) bool {
	h, ok := strings.CutSuffix(name, runFileExt)
	if !ok || len(h) != 64 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil && strings.ToLower(h) == h
}

// loadRun indexes one run file, repairing it as the package doc says.
func (j *Journal) loadRun(session, path string) error {
	if rs, ok, err := j.indexEnded(session, path); err != nil || ok {
		if ok {
			j.indexRunLocked(rs)
			j.recovery.Runs++
		}
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open run file: %w", err)
	}
	defer func() { _ = f.Close() }()
	// A run still running keeps its tail in memory, as before the restart.
	var tail eventTail
	p, err := scanRun(f, func(ev tailEvent) { tail.push(ev) })
	if err != nil {
		return fmt.Errorf("read run file: %w", err)
	}
	switch {
	case p.header.Rec == "" && !p.corrupt:
		// The begin record never completed, so Begin never returned BeginNew.
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("remove incomplete run file: %w", err)
		}
		j.recovery.Discarded = append(j.recovery.Discarded, path)
		return nil
	case p.header.Rec == "" || p.header.Session != session || runFileName(p.header.RunID) != filepath.Base(path):
		return j.quarantine(path)
	}
	if p.corrupt {
		copyPath := j.corruptPath(path)
		if err := j.writeFileSync(copyPath, io.NewSectionReader(f, 0, math.MaxInt64)); err != nil {
			return fmt.Errorf("keep corrupt run file: %w", err)
		}
		j.recovery.Corrupt = append(j.recovery.Corrupt, copyPath)
	} else if p.torn {
		j.recovery.TornTails++
	}
	if p.corrupt || p.torn {
		if err := j.truncateSync(path, p.good); err != nil {
			return fmt.Errorf("cut damaged run file: %w", err)
		}
	}
	rs := &runState{
		key: runKey{session, p.header.RunID}, path: path, digest: p.digest,
		startedAt: p.header.At.UTC(), requester: requesterOf(p.header), lastSeq: p.lastSeq, size: p.good,
	}
	if p.end != nil {
		rs.state, rs.finishedAt, rs.reason, rs.done = p.end.State, p.end.At.UTC(), p.end.Reason, closedChan
		rs.pruned = p.end.Pruned
	} else {
		rs.state, rs.tail, rs.evEnd, rs.recovered, rs.done = StateRunning, tail, p.good, true, make(chan struct{})
		j.tailBytes.Add(tail.bytes)
		j.recovery.Running++
	}
	j.indexRunLocked(rs)
	j.recovery.Runs++
	return nil
}

// indexEnded indexes an intact ended run from its first and last records
// only, without reading its events; ok is false when the file needs a full
// read.
func (j *Journal) indexEnded(session, path string) (rs *runState, ok bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, fmt.Errorf("open run file: %w", err)
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("stat run file: %w", err)
	}
	e, ok, err := readRunEnds(f, st.Size())
	if err != nil {
		return nil, false, fmt.Errorf("read run file: %w", err)
	}
	if !ok || e.begin.Session != session || runFileName(e.begin.RunID) != filepath.Base(path) {
		return nil, false, nil
	}
	return &runState{
		key: runKey{session, e.begin.RunID}, path: path, digest: e.digest,
		startedAt: e.begin.At.UTC(), requester: requesterOf(e.begin), state: e.end.State, lastSeq: e.end.LastSeq,
		finishedAt: e.end.At.UTC(), reason: e.end.Reason, size: st.Size(), pruned: e.end.Pruned, done: closedChan,
	}, true, nil
}

// quarantine moves a run file whose begin record is unreadable out of the
// index's way, keeping it for inspection.
func (j *Journal) quarantine(path string) error {
	to := j.corruptPath(path)
	if err := os.Rename(path, to); err != nil {
		return fmt.Errorf("quarantine run file: %w", err)
	}
	if err := j.syncDir(filepath.Dir(path)); err != nil {
		return err
	}
	j.recovery.Corrupt = append(j.recovery.Corrupt, to)
	return nil
}

func (j *Journal) corruptPath(path string) string {
	return path + "." + strconv.FormatInt(j.now().UnixNano(), 10) + corruptExt
}

func (j *Journal) writeFileSync(path string, content io.Reader) error {
	if err := j.writeFrom(path, content); err != nil {
		return err
	}
	return j.syncDir(filepath.Dir(path))
}

// writeFile creates or truncates path with data and fsyncs the file, not its
// directory entry.
func (j *Journal) writeFile(path string, data []byte) error {
	return j.writeFrom(path, bytes.NewReader(data))
}

// writeFrom creates or truncates path with what content holds, copied in
// chunks, and fsyncs the file, not its directory entry.
func (j *Journal) writeFrom(path string, content io.Reader) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fileMode)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, content)
	if err == nil {
		err = j.sync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (j *Journal) truncateSync(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	if err == nil {
		err = j.sync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// repairTranscript learns the size of the session's transcript and cuts off
// an incomplete last line left by a crash or an undone write; s.mu must be
// held (or the Journal not yet shared).
func (j *Journal) repairTranscript(s *sessionState) (torn bool, err error) {
	path := filepath.Join(s.dir, transcriptFileName)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		s.tsize = 0
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("open transcript: %w", err)
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("stat transcript: %w", err)
	}
	good, err := lastLineEnd(f, st.Size())
	if err != nil {
		return false, fmt.Errorf("read transcript: %w", err)
	}
	if good != st.Size() {
		if err := j.truncateSync(path, good); err != nil {
			return false, fmt.Errorf("cut torn transcript: %w", err)
		}
		torn = true
	}
	s.tsize = good
	return torn, nil
}

// lastLineEnd returns the offset just past the last '\n' in the first size
// bytes of r (0 when there is none), reading backwards in chunks.
func lastLineEnd(r io.ReaderAt, size int64) (int64, error) {
	buf := make([]byte, 0, 4096)
	for end := size; end > 0; {
		n := min(end, int64(cap(buf)))
		chunk := buf[:n]
		if _, err := r.ReadAt(chunk, end-n); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := bytes.LastIndexByte(chunk, '\n'); i >= 0 {
			return end - n + int64(i) + 1, nil
		}
		end -= n
	}
	return 0, nil
}
