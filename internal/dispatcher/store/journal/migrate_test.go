package journal

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// legacyJournal writes a journal in the layout before sessions were keyed by
// UID: <dir>/sessions/<ns>/<name>, begin records naming "ns/name".
func legacyJournal(t *testing.T, sessions map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	j := open(t, dir, Options{})
	for session, runID := range sessions {
		r := begin(t, j, session, runID, "body of "+runID, BeginNew)
		if _, err := r.Append("partial", json.RawMessage(`{"text":"hi"}`)); err != nil {
			t.Fatal(err)
		}
		if err := r.Finish(StateFinished, json.RawMessage(`{"ok":true}`)); err != nil {
			t.Fatal(err)
		}
		if err := j.AppendTranscript(session, json.RawMessage(`{"said":"`+runID+`"}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, sessionsDirName), filepath.Join(dir, legacyDirName)); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestLegacyJournalIsRefusedWithoutAResolver(t *testing.T) {
	dir := legacyJournal(t, map[string]string{"team-a/kept": "run-1"})
	_, err := Open(dir, Options{})
	if !errors.Is(err, ErrLegacyLayout) || !strings.Contains(err.Error(), filepath.Join(dir, legacyDirName)) {
		t.Fatalf("Open of a name-keyed journal: %v; want ErrLegacyLayout naming %s", err, filepath.Join(dir, legacyDirName))
	}
}

func TestLegacyJournalMigratesToUIDKeys(t *testing.T) {
	dir := legacyJournal(t, map[string]string{"team-a/kept": "run-1", "team-a/gone": "run-2"})
	uids := map[string]string{"team-a/kept": "6f1c2f0e-4b7a-4c1e-9a57-2b1d1b0c8e11"}
	resolve := func(ns, name string) (string, bool, error) {
		uid, ok := uids[ns+"/"+name]
		return uid, ok, nil
	}
	j := open(t, dir, Options{ResolveLegacy: resolve})

	m := j.Recovery().Migrated
	kept := SessionKey("team-a", uids["team-a/kept"])
	if len(m.Moved) != 1 || m.Moved[0] != "team-a/kept → "+kept || len(m.Removed) != 1 || m.Removed[0] != "team-a/gone" {
		t.Fatalf("migration report = %+v", m)
	}
	if _, err := os.Stat(filepath.Join(dir, legacyDirName)); !os.IsNotExist(err) {
		t.Fatalf("the name-keyed directory is still there: %v", err)
	}
	// The runId claimed before the upgrade stays claimed: replayed for its
	// body, refused for another.
	r, err := j.Lookup(kept, "run-1")
	if err != nil || r.Info().State != StateFinished {
		t.Fatalf("Lookup of the migrated run: %v, %v", r, err)
	}
	if _, _, err := j.Begin(kept, "run-1", digestOf("another body")); !errors.Is(err, ErrRunConflict) {
		t.Fatalf("Begin of a pre-upgrade runId with another body: %v; want ErrRunConflict", err)
	}
	if got := len(mustCollect(t, r, 0)); got != 1 {
		t.Fatalf("the migrated run has %d events, want 1", got)
	}
	var tr strings.Builder
	if _, err := j.ReadTranscript(kept, &tr); err != nil || !strings.Contains(tr.String(), "run-1") {
		t.Fatalf("migrated transcript = %q, %v", tr.String(), err)
	}
	// A session that no longer exists left nothing a successor could read.
	keys, err := j.Sessions()
	if err != nil || len(keys) != 1 || keys[0] != kept {
		t.Fatalf("sessions after the migration = %v, %v; want only %s", keys, err, kept)
	}

	// Re-opening (a second start) finds nothing left to migrate.
	j = reopen(t, j, Options{})
	if _, err := j.Lookup(kept, "run-1"); err != nil {
		t.Fatalf("Lookup after reopening: %v", err)
	}
}

func TestLegacyMigrationResumesAfterACrash(t *testing.T) {
	dir := legacyJournal(t, map[string]string{"team-a/kept": "run-1"})
	uid := "0b6bd2a6-8a55-4d8f-8d2b-7d1f6c0f7a22"
	// The crash came after the begin record was rewritten, before the
	// session's directory moved.
	j := &Journal{dir: dir, opts: Options{}.withDefaults()}
	legacyRun := filepath.Join(dir, legacyDirName, "team-a", "kept", runsDirName, runFileName("run-1"))
	if err := j.rekeyRunFile(legacyRun, SessionKey("team-a", uid)); err != nil {
		t.Fatal(err)
	}
	j = open(t, dir, Options{ResolveLegacy: func(string, string) (string, bool, error) { return uid, true, nil }})
	if r, err := j.Lookup(SessionKey("team-a", uid), "run-1"); err != nil || r.Info().State != StateFinished {
		t.Fatalf("Lookup after the resumed migration: %v, %v", r, err)
	}
	if n := len(j.Recovery().Corrupt); n != 0 {
		t.Fatalf("the resumed migration quarantined %d files", n)
	}
}
