package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// A session's capacity reservations (capacity.go), and its lease while the
// journal is closed (lease.go), are small files in its directory, each
// replaced whole: written to <name>.tmp, fsynced, renamed over <name>, and
// the directory fsynced. A crash leaves the old file or the new one; Open
// removes a stale .tmp. They go with the session's directory when
// DeleteSession removes it.

// replaceSessionFile replaces the session's file name with data; s.mu must
// be held.
func (j *Journal) replaceSessionFile(s *sessionState, name string, data []byte) error {
	if err := j.ensureDirs(s); err != nil {
		return err
	}
	path := filepath.Join(s.dir, name)
	if err := j.writeFile(path+tmpExt, data); err != nil {
		removeTemp(path)
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := os.Rename(path+tmpExt, path); err != nil {
		removeTemp(path)
		return fmt.Errorf("replace %s: %w", name, err)
	}
	// Reservations are durable (a server's limit holds across restarts),
	// and so is a lease kept at Close.
	return j.syncDir(s.dir)
}

// removeSessionFile removes the session's file name; s.mu must be held.
func (j *Journal) removeSessionFile(s *sessionState, name string) error {
	err := os.Remove(filepath.Join(s.dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	return j.syncDir(s.dir)
}

// loadSessionFiles reads every session's reservations and the leases Close
// kept into memory, and starts the lease tokens' epoch (openLeases); it runs
// inside Open, before the Journal is shared.
func (j *Journal) loadSessionFiles() error {
	sessions, err := j.Sessions()
	if err != nil {
		return err
	}
	var (
		maxToken   int64
		leaseFiles []string
	)
	for _, session := range sessions {
		dir := filepath.Join(j.dir, sessionsDirName, filepath.FromSlash(session))
		var rec leaseRecord
		switch ok, err := readSessionFile(dir, leaseFileName, &rec); {
		case err != nil:
			return fmt.Errorf("session %s: %w", session, err)
		case ok:
			ls, _ := j.leaseOf(session)
			ls.rec = rec
			maxToken = max(maxToken, rec.Token)
			leaseFiles = append(leaseFiles, filepath.Join(dir, leaseFileName))
		}
		var res reservationsFile
		switch ok, err := readSessionFile(dir, reservationsFileName, &res); {
		case err != nil:
			return fmt.Errorf("session %s: %w", session, err)
		case ok:
			for _, server := range res.Servers {
				j.capacity.add(server, session)
			}
		}
	}
	return j.openLeases(maxToken, leaseFiles)
}

// readSessionFile decodes dir/name into v, removing a stale replacement;
// ok is false when the file does not exist.
func readSessionFile(dir, name string, v any) (ok bool, err error) {
	path := filepath.Join(dir, name)
	removeTemp(path)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", name, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("%s is damaged (remove it to start the session's %s afresh): %w", path, name, err)
	}
	return true, nil
}
