package journal_test

import (
	"testing"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
	"github.com/openclaw/harness-operator/internal/testutil/storetest"
)

// TestStoreConformance runs the store contract's suite against the journal:
// one directory per storage name, opened with the suite's clock and limits.
func TestStoreConformance(t *testing.T) {
	dirs := map[string]string{} // test name and storage → directory
	storetest.Run(t, storetest.Opener{Open: func(t *testing.T, storage string, cfg storetest.Config) store.Store {
		key := t.Name() + "\x00" + storage
		if dirs[key] == "" {
			dirs[key] = t.TempDir()
		}
		j, err := journal.Open(dirs[key], journal.Options{
			Clock:              cfg.Clock,
			MaxAge:             orNoLimit(cfg.MaxAge),
			MaxRuns:            orNoLimit(cfg.MaxRuns),
			MaxNamespaceRuns:   orNoLimit(cfg.MaxNamespaceRuns),
			MaxNamespaceBytes:  -1,
			MaxTranscriptBytes: orNoLimit(cfg.MaxTranscriptBytes),
		})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return j
	}})
}

// orNoLimit maps the suite's "zero: no limit" to the journal's (negative;
// zero is its default).
func orNoLimit[T ~int | ~int64](v T) T {
	if v == 0 {
		return -1
	}
	return v
}
