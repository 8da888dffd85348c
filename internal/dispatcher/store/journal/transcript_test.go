package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type bytesBuffer = bytes.Buffer

func readTranscript(t *testing.T, j *Journal, session string) string {
	t.Helper()
	var b bytes.Buffer
	n, err := j.ReadTranscript(session, &b)
	if err != nil {
		t.Fatalf("ReadTranscript: %v", err)
	}
	if n != int64(b.Len()) {
		t.Fatalf("ReadTranscript returned %d, wrote %d", n, b.Len())
	}
	return b.String()
}

func TestTranscriptAppendReadSync(t *testing.T) {
	j := open(t, t.TempDir(), Options{})
	if got := readTranscript(t, j, sess); got != "" {
		t.Fatalf("empty transcript reads %q", got)
	}
	if err := j.SyncTranscript(sess); err != nil {
		t.Fatalf("SyncTranscript with no transcript: %v", err)
	}
	if err := j.AppendTranscript(sess,
		json.RawMessage("{\n  \"role\": \"user\",\n  \"text\": \"a <b> & c\"\n}"),
		json.RawMessage(`  {"role":"assistant","text":"line1\nline2"}  `),
	); err != nil {
		t.Fatal(err)
	}
	if err := j.AppendTranscript(sess); err != nil { // nothing to do
		t.Fatal(err)
	}
	if err := j.AppendTranscript(sess, json.RawMessage(`{"role":"tool","output":{}}`)); err != nil {
		t.Fatal(err)
	}
	if err := j.SyncTranscript(sess); err != nil {
		t.Fatal(err)
	}
	want := `{"role":"user","text":"a <b> & c"}` + "\n" +
		`{"role":"assistant","text":"line1\nline2"}` + "\n" +
		`{"role":"tool","output":{}}` + "\n"
	if got := readTranscript(t, j, sess); got != want {
		t.Fatalf("transcript =\n%s\nwant\n%s", got, want)
	}
	if got := string(readFile(t, transcriptPath(j, sess))); got != want {
		t.Fatalf("file =\n%s", got)
	}
	if n, err := j.TranscriptSize(sess); err != nil || n != int64(len(want)) {
		t.Fatalf("TranscriptSize = %d, %v; want %d", n, err, len(want))
	}
	j = reopen(t, j, Options{})
	if got := readTranscript(t, j, sess); got != want {
		t.Fatalf("transcript after reopen =\n%s", got)
	}
}

func TestTranscriptRejectsNonObjects(t *testing.T) {
	j := open(t, t.TempDir(), Options{})
	if err := j.AppendTranscript(sess, json.RawMessage(`{"first":true}`)); err != nil {
		t.Fatal(err)
	}
	before := readFile(t, transcriptPath(j, sess))
	for _, tc := range []struct{ name, record string }{
		{"empty", ""},
		{"blank", "   "},
		{"array", `[{"a":1}]`},
		{"string", `"text"`},
		{"null", `null`},
		{"number", `42`},
		{"truncated", `{"a":`},
		{"two objects", `{"a":1} {"b":2}`},
		{"trailing garbage", `{"a":1}x`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The bad record comes second: the good one before it is not written either.
			err := j.AppendTranscript(sess, json.RawMessage(`{"ok":1}`), json.RawMessage(tc.record))
			if !errors.Is(err, ErrInvalidRecord) {
				t.Fatalf("AppendTranscript(%q): %v, want ErrInvalidRecord", tc.record, err)
			}
			if after := readFile(t, transcriptPath(j, sess)); !bytes.Equal(before, after) {
				t.Fatalf("refused records changed the file: %q", after)
			}
		})
	}
}

func TestTranscriptLimit(t *testing.T) {
	const limit = 100
	clk := newClock()
	j := open(t, t.TempDir(), Options{MaxTranscriptBytes: limit, Now: clk.Now})
	rec := json.RawMessage(`{"text":"` + strings.Repeat("x", 20) + `"}`) // 31 bytes + newline
	for range 3 {
		if err := j.AppendTranscript(sess, rec); err != nil {
			t.Fatal(err)
		}
	}
	path := transcriptPath(j, sess)
	before := readFile(t, path) // 96 bytes
	for _, tc := range []struct {
		name    string
		records []json.RawMessage
		adding  int64
	}{
		{"one record too many", []json.RawMessage{rec}, 32},
		{"a batch that would cross the limit", []json.RawMessage{json.RawMessage(`{}`), rec}, 35},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := j.AppendTranscript(sess, tc.records...)
			var le *TranscriptLimitError
			if !errors.Is(err, ErrTranscriptLimitExceeded) || !errors.As(err, &le) {
				t.Fatalf("AppendTranscript past the limit: %v", err)
			}
			if le.Session != sess || le.Size != int64(len(before)) || le.Adding != tc.adding || le.Limit != limit {
				t.Fatalf("limit error = %+v", le)
			}
			if after := readFile(t, path); !bytes.Equal(before, after) {
				t.Fatalf("a refused append changed the file:\n%s", after)
			}
		})
	}
	// What still fits is accepted, up to the limit exactly.
	if err := j.AppendTranscript(sess, json.RawMessage(`{"a":1}`)); err == nil {
		t.Fatal("an append to 104 bytes succeeded")
	}
	if err := j.AppendTranscript(sess, json.RawMessage(`{}`)); err != nil {
		t.Fatalf("an append to 99 bytes: %v", err)
	}
	if n, _ := j.TranscriptSize(sess); n != 99 {
		t.Fatalf("size = %d, want 99", n)
	}
	// A refused append marks the transcript full: the engine refuses turns
	// before they start until the session is reset.
	if full, err := j.TranscriptFull(sess); err != nil || !full {
		t.Fatalf("TranscriptFull after a refused append = %v, %v; want true", full, err)
	}
	// The limit counts the file as found at Open.
	j = reopen(t, j, Options{MaxTranscriptBytes: limit})
	if err := j.AppendTranscript(sess, json.RawMessage(`{}`)); !errors.Is(err, ErrTranscriptLimitExceeded) {
		t.Fatalf("append after reopen: %v", err)
	}
	// A reset starts the transcript anew, past the limit too: just its
	// marker, room again, not full.
	if err := j.ResetTranscript(sess, 2); err != nil {
		t.Fatalf("ResetTranscript past the limit: %v", err)
	}
	if full, err := j.TranscriptFull(sess); err != nil || full {
		t.Fatalf("TranscriptFull after a reset = %v, %v; want false", full, err)
	}
	if err := j.AppendTranscript(sess, json.RawMessage(`{"after":"reset"}`)); err != nil {
		t.Fatalf("append after the reset: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(readTranscript(t, j, sess), "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], `{"type":"reset","generation":2,`) || lines[1] != `{"after":"reset"}` {
		t.Fatalf("transcript after the reset = %q", lines)
	}
}

func TestResetMarker(t *testing.T) {
	clk := newClock()
	j := open(t, t.TempDir(), Options{Now: clk.Now})
	if err := j.AppendTranscript(sess, json.RawMessage(`{"role":"user","text":"before"}`)); err != nil {
		t.Fatal(err)
	}
	if err := j.ResetTranscript(sess, 3); err != nil {
		t.Fatal(err)
	}
	if err := j.AppendTranscript(sess, json.RawMessage(`{"role":"user","text":"after"}`)); err != nil {
		t.Fatal(err)
	}
	// The reset replaced the transcript: its marker, then what came after.
	lines := strings.Split(strings.TrimSuffix(readTranscript(t, j, sess), "\n"), "\n")
	if len(lines) != 2 || lines[1] != `{"role":"user","text":"after"}` {
		t.Fatalf("transcript lines = %q", lines)
	}
	var marker struct {
		Type       string    `json:"type"`
		Generation int64     `json:"generation"`
		At         time.Time `json:"at"`
	}
	dec := json.NewDecoder(strings.NewReader(lines[0]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&marker); err != nil {
		t.Fatalf("marker %s: %v", lines[0], err)
	}
	if marker.Type != "reset" || marker.Generation != 3 || !marker.At.Equal(clk.Now()) {
		t.Fatalf("marker = %+v", marker)
	}
}

func TestTranscriptTornTail(t *testing.T) {
	dir := t.TempDir()
	j := open(t, dir, Options{})
	if err := j.AppendTranscript(sess, json.RawMessage(`{"n":1}`), json.RawMessage(`{"n":2}`)); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	appendBytes(t, transcriptPath(j, sess), []byte(`{"n":3,"te`))
	j = open(t, dir, Options{})
	if rep := j.Recovery(); rep.TornTails != 1 {
		t.Fatalf("Recovery() = %+v", rep)
	}
	if err := j.AppendTranscript(sess, json.RawMessage(`{"n":4}`)); err != nil {
		t.Fatal(err)
	}
	if got, want := readTranscript(t, j, sess), "{\"n\":1}\n{\"n\":2}\n{\"n\":4}\n"; got != want {
		t.Fatalf("transcript = %q, want %q", got, want)
	}
}

func TestSessionNames(t *testing.T) {
	for _, tc := range []struct {
		session string
		valid   bool
	}{
		{"default/s1", true},
		{"team-a/sess.v2-x", true},
		{strings.Repeat("n", 63) + "/" + strings.Repeat("a", 253), true},
		{"", false},
		{"noslash", false},
		{"/name", false},
		{"ns/", false},
		{"../etc", false},
		{"ns/..", false},
		{"ns/.", false},
		{"../../tmp/x", false},
		{"ns/../../../x", false},
		{"ns/a/b", false},
		{"..", false},
		{".hidden/x", false},
		{"ns/.hidden", false},
		{"ns/a..b", false},
		{"ns/a.", false},
		{"NS/x", false},
		{"ns/X", false},
		{"-ns/x", false},
		{"ns/x-", false},
		{"ns/a b", false},
		{`ns/a\b`, false},
		{"ns/a\x00b", false},
		{"ns.x/y", false},
		{strings.Repeat("n", 64) + "/x", false},
		{"ns/" + strings.Repeat("a", 254), false},
	} {
		t.Run(tc.session, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "journal")
			j := open(t, dir, Options{})
			err := ValidateSession(tc.session)
			if (err == nil) != tc.valid {
				t.Fatalf("ValidateSession(%q) = %v, want valid=%v", tc.session, err, tc.valid)
			}
			_, _, beginErr := j.Begin(tc.session, "run-1", digestOf("b"))
			calls := map[string]error{
				"Begin":            beginErr,
				"AppendTranscript": j.AppendTranscript(tc.session, json.RawMessage(`{}`)),
				"ResetTranscript":  j.ResetTranscript(tc.session, 1),
				"SyncTranscript":   j.SyncTranscript(tc.session),
				"DeleteSession":    j.DeleteSession(tc.session),
			}
			_, calls["ReadTranscript"] = j.ReadTranscript(tc.session, &bytes.Buffer{})
			_, calls["Lookup"] = j.Lookup(tc.session, "run-1")
			for name, err := range calls {
				if !tc.valid && !errors.Is(err, ErrInvalidSession) {
					t.Errorf("%s(%q): %v, want ErrInvalidSession", name, tc.session, err)
				}
				if tc.valid && errors.Is(err, ErrInvalidSession) {
					t.Errorf("%s(%q): %v", name, tc.session, err)
				}
			}
			// Nothing was written outside the journal directory, and an
			// invalid name created nothing inside it.
			if entries, _ := os.ReadDir(parent); len(entries) != 1 || entries[0].Name() != "journal" {
				t.Fatalf("files outside the journal: %v", entries)
			}
			sessions, _ := os.ReadDir(filepath.Join(dir, sessionsDirName))
			if !tc.valid && len(sessions) != 0 {
				t.Fatalf("invalid session %q created %v", tc.session, sessions)
			}
		})
	}
}
