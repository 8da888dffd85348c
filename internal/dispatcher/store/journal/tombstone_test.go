package journal

import (
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"
)

func TestTombstoneRecords(t *testing.T) {
	d := digestOf("body")
	begin := `{"rec":"begin","v":1,"session":"team-a/s","runId":"r","digest":"` + hex.EncodeToString(d[:]) + `","at":"2026-03-01T12:00:00Z"}`
	event := `{"rec":"event","seq":1,"type":"partial","at":"2026-03-01T12:00:01Z"}`
	for _, tc := range []struct {
		name        string
		lines       []string
		wantEnd     bool
		wantPruned  bool
		wantLastSeq int64
	}{
		{"tombstone", []string{begin, `{"rec":"end","state":"failed","lastSeq":7,"at":"2026-03-01T12:00:02Z","reason":"x","pruned":true}`}, true, true, 7},
		{"whole run", []string{begin, event, `{"rec":"end","state":"finished","lastSeq":1,"at":"2026-03-01T12:00:02Z"}`}, true, false, 1},
		{"tombstone after events", []string{begin, event, `{"rec":"end","state":"finished","lastSeq":1,"at":"2026-03-01T12:00:02Z","pruned":true}`}, false, false, 1},
		{"tombstone with a result", []string{begin, `{"rec":"end","state":"finished","lastSeq":1,"at":"2026-03-01T12:00:02Z","result":{"ok":true},"pruned":true}`}, false, false, 0},
		{"tombstone with a negative lastSeq", []string{begin, `{"rec":"end","state":"finished","lastSeq":-1,"at":"2026-03-01T12:00:02Z","pruned":true}`}, false, false, 0},
		{"end record without its events", []string{begin, `{"rec":"end","state":"finished","lastSeq":7,"at":"2026-03-01T12:00:02Z"}`}, false, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := parseRun(t, []byte(strings.Join(tc.lines, "\n")+"\n"))
			if (p.end != nil) != tc.wantEnd || p.end != nil && p.end.Pruned != tc.wantPruned || p.lastSeq != tc.wantLastSeq {
				t.Fatalf("parseRun: end %+v, lastSeq %d; want end %v, pruned %v, lastSeq %d", p.end, p.lastSeq, tc.wantEnd, tc.wantPruned, tc.wantLastSeq)
			}
		})
	}
}

func TestOpenRemovesLeftoverReplacements(t *testing.T) {
	j := open(t, t.TempDir(), noOtherLimits(Options{}))
	endedRun(t, j, sess, "run-1", 3)
	fillTranscript(t, j, sess, 100)
	// A crash between writing a replacement and renaming it leaves these.
	leftovers := []string{runFile(j, sess, "run-1") + tmpExt, transcriptPath(j, sess) + tmpExt}
	for _, p := range leftovers {
		if err := os.WriteFile(p, []byte("partial"), fileMode); err != nil {
			t.Fatal(err)
		}
	}
	j = reopen(t, j, noOtherLimits(Options{}))
	for _, p := range leftovers {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s survived Open: %v", p, err)
		}
	}
	checkSeqs(t, mustCollect(t, begin(t, j, sess, "run-1", "body", BeginReplay), 0), 1, 3)
}
