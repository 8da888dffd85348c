package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
)

// defaultRetentionInterval is how often retention runs while the dispatcher
// is up: often enough that a namespace's byte cap is overshot by at most a
// minute of writes, cheap because a pass with nothing to prune reads only
// the in-memory index and each session's known transcript size.
const defaultRetentionInterval = time.Minute

// retentionOptions are the journal's retention flags. Zero values mean the
// journal's defaults (journal.Options).
type retentionOptions struct {
	interval          time.Duration
	maxAge            time.Duration
	maxNamespaceRuns  int
	maxNamespaceBytes int64
}

func bindRetentionFlags(fs *flag.FlagSet, o *retentionOptions) {
	fs.DurationVar(&o.interval, "journal-retention-interval", defaultRetentionInterval,
		"How often journal retention runs while the dispatcher is up (it also runs when the journal opens).")
	fs.DurationVar(&o.maxAge, "journal-max-age", journal.DefaultMaxAge,
		"Retention of a run after it ended: for this long its runId is answered (replayed, or 410 RunPayloadPruned) and never runs again; then it is forgotten. Negative: forever.")
	fs.IntVar(&o.maxNamespaceRuns, "journal-max-namespace-runs", journal.DefaultMaxNamespaceRuns,
		"Runs one namespace may hold in the journal: running, ended and pruned to their tombstone. At the bound, turns with a new runId in the namespace are refused (429 RetentionLimitReached) until its oldest runs age out. Negative: no bound.")
	fs.Int64Var(&o.maxNamespaceBytes, "journal-max-namespace-bytes", journal.DefaultMaxNamespaceBytes,
		"Bytes of run events, results and transcripts one namespace may keep in the journal. Over it, retention prunes the events and results of its oldest ended runs (their runIds stay known: 410 RunPayloadPruned), then the transcripts of its idle sessions. Negative: no cap.")
}

func (o retentionOptions) validate() error {
	if o.interval < 0 {
		return fmt.Errorf("--journal-retention-interval must not be negative, got %s", o.interval)
	}
	return nil
}

func (o retentionOptions) journalOptions() journal.Options {
	return journal.Options{MaxAge: o.maxAge, MaxNamespaceRuns: o.maxNamespaceRuns, MaxNamespaceBytes: o.maxNamespaceBytes}
}

// runnable is the periodic retention of j for the manager.
func (o retentionOptions) runnable(s store.Store, log logr.Logger) *retention {
	interval := o.interval
	if interval == 0 {
		interval = defaultRetentionInterval
	}
	return &retention{store: s, interval: interval, log: log}
}

// Retention metrics. Their one open label is namespace, bounded like the
// engine's (internal/dispatcher/engine/metrics.go).
var (
	retentionPasses = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "harness_dispatcher_journal_retention_passes_total",
		Help: "Periodic journal retention passes, by result (ok, error).",
	}, []string{"result"})
	retentionPruned = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "harness_dispatcher_journal_pruned_total",
		Help: "What periodic journal retention removed, by kind: aged_out (runs forgotten with their tombstones after --journal-max-age), payload (ended runs reduced to their tombstones), transcript (idle sessions' transcripts).",
	}, []string{"kind"})
	namespaceRuns = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "harness_dispatcher_journal_namespace_runs",
		Help: "Runs a namespace holds in the journal (running, ended and tombstones), against --journal-max-namespace-runs.",
	}, []string{"namespace"})
	namespaceBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "harness_dispatcher_journal_namespace_bytes",
		Help: "Bytes of run payloads and transcripts a namespace keeps in the journal, against --journal-max-namespace-bytes.",
	}, []string{"namespace"})
)

func init() {
	metrics.Registry.MustRegister(retentionPasses, retentionPruned, namespaceRuns, namespaceBytes)
}

// retention runs the store's retention for as long as the manager runs and
// publishes each pass as metrics. It needs no leadership: whoever opened the
// journal holds its lock and owns it; replicas sharing a database prune the
// same rows, each pass idempotent.
type retention struct {
	store    store.Store
	interval time.Duration
	log      logr.Logger

	shown map[string]bool // namespaces with usage gauges; only Start's goroutine uses it
}

// Start implements manager.Runnable; it returns when ctx ends.
func (r *retention) Start(ctx context.Context) error {
	return r.store.RunRetention(ctx, r.interval, r.record)
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (r *retention) NeedLeaderElection() bool { return false }

// record publishes one pass: its outcome, what it pruned, and what each
// namespace holds after it.
func (r *retention) record(rep store.PruneReport, err error) {
	result := "ok"
	if err != nil {
		result = "error"
		r.log.Error(err, "journal retention")
	}
	retentionPasses.WithLabelValues(result).Inc()
	retentionPruned.WithLabelValues("aged_out").Add(float64(rep.Forgotten))
	retentionPruned.WithLabelValues("payload").Add(float64(rep.PayloadsPruned))
	retentionPruned.WithLabelValues("transcript").Add(float64(rep.TranscriptsPruned))
	if rep != (store.PruneReport{}) {
		r.log.Info("journal retention pruned", "agedOut", rep.Forgotten, "payloads", rep.PayloadsPruned, "transcripts", rep.TranscriptsPruned)
	}
	usage, err := r.store.Usage()
	if err != nil {
		r.log.Error(err, "journal usage")
	}
	for ns := range r.shown {
		if _, ok := usage[ns]; !ok {
			namespaceRuns.DeleteLabelValues(ns)
			namespaceBytes.DeleteLabelValues(ns)
		}
	}
	r.shown = make(map[string]bool, len(usage))
	for ns, u := range usage {
		namespaceRuns.WithLabelValues(ns).Set(float64(u.Runs))
		namespaceBytes.WithLabelValues(ns).Set(float64(u.Bytes))
		r.shown[ns] = true
	}
}
