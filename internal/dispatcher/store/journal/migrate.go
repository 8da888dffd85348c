package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// LegacyMigration says what Open did with a journal kept by AgentSession name.
type LegacyMigration struct {
	// Moved lists "namespace/name → namespace/uid" for sessions that exist
	// now: their runs (so every runId claimed before the upgrade stays
	// claimed) and transcript moved to the UID-keyed layout.
	Moved []string
	// Removed lists "namespace/name" of sessions that no longer exist: their
	// state was deleted, as the dispatcher's finalizer would have done, so no
	// session created later under the name can read it.
	Removed []string
}

// migrateLegacy moves <dir>/sessions/<ns>/<name> (the layout before sessions
// were keyed by UID) to <dir>/by-uid/<ns>/<uid>, one session at a time, then
// removes <dir>/sessions. Each step can be repeated after a crash: a run
// file's begin record is rewritten to the UID key (a temporary file renamed
// over it) before its session directory is renamed, and the rename is the
// step that commits a session. The caller holds the directory's lock.
func (j *Journal) migrateLegacy() (LegacyMigration, error) {
	var m LegacyMigration
	legacy := filepath.Join(j.dir, legacyDirName)
	nsEntries, err := os.ReadDir(legacy)
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, fmt.Errorf("read %s: %w", legacy, err)
	}
	if j.opts.ResolveLegacy == nil {
		return m, fmt.Errorf("%w: %s", ErrLegacyLayout, legacy)
	}
	for _, nsEntry := range nsEntries {
		if !nsEntry.IsDir() {
			continue
		}
		ns := nsEntry.Name()
		names, err := os.ReadDir(filepath.Join(legacy, ns))
		if err != nil {
			return m, fmt.Errorf("read %s: %w", filepath.Join(legacy, ns), err)
		}
		for _, nameEntry := range names {
			if !nameEntry.IsDir() {
				continue
			}
			name := nameEntry.Name()
			moved, err := j.migrateSession(ns, name)
			if err != nil {
				return m, fmt.Errorf("migrate %s/%s: %w", ns, name, err)
			}
			if moved != "" {
				m.Moved = append(m.Moved, ns+"/"+name+" → "+moved)
			} else {
				m.Removed = append(m.Removed, ns+"/"+name)
			}
		}
	}
	if err := os.RemoveAll(legacy); err != nil {
		return m, fmt.Errorf("remove %s: %w", legacy, err)
	}
	return m, j.syncDir(j.dir)
}

// migrateSession moves one legacy session and returns its new key, or "" when
// the session no longer exists and its state was removed.
func (j *Journal) migrateSession(ns, name string) (string, error) {
	from := filepath.Join(j.dir, legacyDirName, ns, name)
	uid, exists, err := j.opts.ResolveLegacy(ns, name)
	if err != nil {
		return "", fmt.Errorf("look up the AgentSession: %w", err)
	}
	if !exists {
		return "", os.RemoveAll(from)
	}
	key := SessionKey(ns, uid)
	if err := ValidateSession(key); err != nil {
		return "", err
	}
	runs, err := os.ReadDir(filepath.Join(from, runsDirName))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	for _, e := range runs {
		if e.Type().IsRegular() && isRunFileName(e.Name()) {
			if err := j.rekeyRunFile(filepath.Join(from, runsDirName, e.Name()), key); err != nil {
				return "", err
			}
		}
	}
	to := filepath.Join(j.dir, sessionsDirName, ns, uid)
	if err := os.MkdirAll(filepath.Dir(to), dirMode); err != nil {
		return "", err
	}
	if err := os.Rename(from, to); err != nil {
		return "", err
	}
	return key, j.syncDir(filepath.Dir(to))
}

// rekeyRunFile rewrites the session of a run file's begin record. A file
// without a complete begin record is left to Open's recovery.
func (j *Journal) rekeyRunFile(path, key string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	first, rest, ok := bytes.Cut(data, []byte("\n"))
	if !ok {
		return nil
	}
	var header fileRecord
	if json.Unmarshal(first, &header) != nil || header.Rec != recBegin || header.Session == key {
		return nil
	}
	header.Session = key
	line, err := encodeLine(header)
	if err != nil {
		return err
	}
	tmp := path + ".migrating"
	if err := j.writeFileSync(tmp, bytes.NewReader(append(line, rest...))); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
