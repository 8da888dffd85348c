package main

import (
	"flag"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The journal's free space. A journal write that fails — a full disk —
// fails the turn that made it (the engine interrupts the native turn and the
// turn fails HarnessUnavailable), so the dispatcher reports a nearly full
// journal volume before every turn fails: /readyz fails while the journal
// directory's file system has less than --journal-min-free-bytes available,
// which takes the replica out of its Service (turns already running finish
// or fail), and harness_dispatcher_journal_free_bytes shows the space at
// every check. The threshold is in bytes, not a share of the volume: what a
// turn needs does not grow with the volume, and the chart's default volume
// (10Gi) keeps 256 MiB free at 97.5% use. Available means what statfs(2)
// reports for an unprivileged writer, the dispatcher's case. An emptyDir's
// sizeLimit is not a file system's limit (the kubelet evicts the pod past
// it) and is not seen here.

// defaultJournalMinFreeBytes is --journal-min-free-bytes' default: room for
// thousands of turns' events and transcripts, and for retention to rewrite
// files while it prunes.
const defaultJournalMinFreeBytes int64 = 256 << 20

var journalFreeBytes = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "harness_dispatcher_journal_free_bytes",
	Help: "Bytes available to the dispatcher on the journal directory's file system, as of the last readiness check; /readyz fails below --journal-min-free-bytes.",
})

func init() {
	metrics.Registry.MustRegister(journalFreeBytes)
}

func bindDiskSpaceFlags(fs *flag.FlagSet, minFree *int64) {
	fs.Int64Var(minFree, "journal-min-free-bytes", defaultJournalMinFreeBytes,
		"Bytes that must be available on the journal directory's file system for /readyz to pass: below it the dispatcher reports not ready (a journal write that fails fails its turn). 0: no check.")
}

func validateMinFree(minFree int64) error {
	if minFree < 0 {
		return fmt.Errorf("--journal-min-free-bytes must not be negative, got %d", minFree)
	}
	return nil
}

// journalSpace is the /readyz check of the journal's free space: it
// measures dir's file system, publishes harness_dispatcher_journal_free_bytes
// and fails below minFree bytes (never when minFree is 0).
func journalSpace(dir string, minFree int64) healthz.Checker {
	return func(*http.Request) error {
		var st unix.Statfs_t
		if err := unix.Statfs(dir, &st); err != nil {
			return fmt.Errorf("the free space of the journal directory %s: %w", dir, err)
		}
		free := st.Bavail * uint64(st.Bsize)
		journalFreeBytes.Set(float64(free))
		if free < uint64(minFree) { // validateMinFree refuses a negative minFree
			return fmt.Errorf("the journal directory %s has %d bytes free, fewer than the %d --journal-min-free-bytes requires: free space on its volume (retention: --journal-max-namespace-bytes, --journal-max-age) or grow it", dir, free, minFree)
		}
		return nil
	}
}
