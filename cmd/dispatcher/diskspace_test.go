package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openclaw/harness-operator/internal/testutil/tmpfs"
)

// A nearly full journal volume takes the dispatcher out of its Service
// before every turn fails on it: /readyz's journal-space check fails with a
// message naming the directory, its free bytes and the bytes required, and
// passes again once space is freed; harness_dispatcher_journal_free_bytes
// follows the volume.
func TestReadinessFailsWhileTheJournalVolumeIsNearlyFull(t *testing.T) {
	const size, required, filled = 2 << 20, 1 << 20, 3 << 19 // a 2 MiB volume, 1 MiB required, 1.5 MiB written
	dir := tmpfs.Mount(t, size)
	check := journalSpace(dir, required)
	if err := check(nil); err != nil {
		t.Fatalf("an empty %d-byte volume with %d bytes required: %v", size, required, err)
	}
	if free := promtestutil.ToFloat64(journalFreeBytes); free != size {
		t.Fatalf("harness_dispatcher_journal_free_bytes = %v on an empty %d-byte volume", free, size)
	}

	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, filled), 0o600); err != nil {
		t.Fatal(err)
	}
	err := check(nil)
	if err == nil {
		t.Fatalf("ready with %d of %d bytes used and %d required", filled, size, required)
	}
	for _, want := range []string{dir, "524288 bytes free", "1048576 --journal-min-free-bytes requires"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("the check's message %q does not say %q", err, want)
		}
	}
	if free := promtestutil.ToFloat64(journalFreeBytes); free != size-filled {
		t.Fatalf("harness_dispatcher_journal_free_bytes = %v, want %d", free, size-filled)
	}
	if err := journalSpace(dir, 0)(nil); err != nil {
		t.Fatalf("--journal-min-free-bytes=0 checks nothing, got %v", err)
	}

	tmpfs.Remove(t, filler)
	if err := check(nil); err != nil {
		t.Fatalf("still not ready once the space was freed: %v", err)
	}
}
