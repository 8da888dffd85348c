package engine

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// Prometheus metrics of the turn engine. They are registered on
// controller-runtime's metrics.Registry, so the dispatcher's /metrics serves
// them with no further wiring.
//
// Every label is bounded: namespace (the AgentSession's), harness (the
// AgentHarness object's name, empty when no harness was decided), runtime
// (the decision's runtime: a harness id or `openclaw`, empty when there was
// no decision), outcome (a terminal kind, or a turn's error code:
// docs/dispatcher-api.md, "Errors") and reason (a turn's error code). Session
// names, run ids and models are never labels: per-session counts live in
// AgentSession status.
//
// Only real turns are counted: a journal replay or live follow of a known
// runId records nothing.
const (
	metricsSubsystem = "harness_dispatcher"

	labelNamespace = "namespace"
	labelHarness   = "harness"
	labelRuntime   = "runtime"
	labelOutcome   = "outcome"
	labelReason    = "reason"
	labelKind      = "kind"

	tokenKindInput       = "input"
	tokenKindCachedInput = "cached_input"
	tokenKindOutput      = "output"
)

var (
	// turnsTotal counts turns by outcome: the terminal kind (ok, aborted,
	// timeout, failed) of a turn that produced a result, else the error
	// code it ended or was refused with.
	turnsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricsSubsystem + "_turns_total",
		Help: "Turns handled by the dispatcher, by outcome: a terminal kind (ok, aborted, timeout, failed) or the error code the turn ended or was refused with.",
	}, []string{labelNamespace, labelHarness, labelRuntime, labelOutcome})

	// failClosedTotal counts turns refused before anything ran (a fail-closed
	// decision or another refusal), by their error code.
	failClosedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricsSubsystem + "_fail_closed_total",
		Help: "Turns refused before any runtime ran them (fail-closed decisions and other refusals), by error code.",
	}, []string{labelNamespace, labelReason})

	timeToFirstPartial = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    metricsSubsystem + "_time_to_first_partial_seconds",
		Help:    "Time from the start of a turn's run to its first partial (visible assistant text delta).",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120},
	}, []string{labelNamespace, labelHarness})

	turnDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    metricsSubsystem + "_turn_duration_seconds",
		Help:    "Duration of turns that ran, from the start of the run to its result or error, by outcome.",
		Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800},
	}, []string{labelNamespace, labelHarness, labelOutcome})

	// turnsWaiting is the number of turns queued behind another turn of
	// their session (waiting for its lock), by namespace.
	turnsWaiting = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: metricsSubsystem + "_turns_waiting",
		Help: "Turns waiting for another turn of their session to finish (one turn runs per session at a time).",
	}, []string{labelNamespace})

	tokensTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricsSubsystem + "_tokens_total",
		Help: "Model tokens used by turns, by kind (input, cached_input, output).",
	}, []string{labelNamespace, labelHarness, labelKind})
)

func init() {
	metrics.Registry.MustRegister(turnsTotal, failClosedTotal, timeToFirstPartial, turnDuration, turnsWaiting, tokensTotal)
}

// turnLabels are the bounded labels of one turn.
type turnLabels struct {
	namespace string
	harness   string
	runtime   string
}

// labelsOf returns the labels of a turn on a session of namespace ns with
// decision d (the zero Decision when there was none).
func labelsOf(ns string, d wire.Decision) turnLabels {
	l := turnLabels{namespace: ns, runtime: d.Runtime}
	if d.HarnessRef != nil {
		l.harness = d.HarnessRef.Name
	}
	return l
}

// recordRefused records a turn refused before anything ran: its outcome and
// fail-closed reason are its error code.
func recordRefused(l turnLabels, code wire.ErrorCode) {
	turnsTotal.WithLabelValues(l.namespace, l.harness, l.runtime, string(code)).Inc()
	recordFailClosed(l, code)
}

// recordFailClosed records a fail-closed refusal of a turn whose outcome is
// recorded separately.
func recordFailClosed(l turnLabels, code wire.ErrorCode) {
	failClosedTotal.WithLabelValues(l.namespace, string(code)).Inc()
}

// recordFirstPartial records the time to the first partial of a turn.
func recordFirstPartial(l turnLabels, d time.Duration) {
	timeToFirstPartial.WithLabelValues(l.namespace, l.harness).Observe(d.Seconds())
}

// recordFinished records a turn that ran: res is its result (nil when it
// ended with terr), usage counts whenever there is a result.
func recordFinished(l turnLabels, res *wire.TurnResult, terr *wire.Error, d time.Duration) {
	outcome := string(wire.TerminalFailed)
	switch {
	case terr != nil:
		outcome = string(terr.Code)
	case res != nil && res.Terminal.Kind != "":
		outcome = string(res.Terminal.Kind)
	}
	turnsTotal.WithLabelValues(l.namespace, l.harness, l.runtime, outcome).Inc()
	turnDuration.WithLabelValues(l.namespace, l.harness, outcome).Observe(d.Seconds())
	if res == nil {
		return
	}
	for kind, n := range map[string]int64{
		tokenKindInput:       res.Usage.Input,
		tokenKindCachedInput: res.Usage.CachedInput,
		tokenKindOutput:      res.Usage.Output,
	} {
		if n > 0 {
			tokensTotal.WithLabelValues(l.namespace, l.harness, kind).Add(float64(n))
		}
	}
}
