package engine

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// histogramCount is the number of observations of one histogram series (0
// when o is not a histogram series).
func histogramCount(o prometheus.Observer) uint64 {
	m, ok := o.(prometheus.Metric)
	if !ok {
		return 0
	}
	pb := &dto.Metric{}
	if err := m.Write(pb); err != nil {
		return 0
	}
	return pb.GetHistogram().GetSampleCount()
}

func TestMetricsRecordingHelpers(t *testing.T) {
	const ns = "unit-metrics"
	d := wire.Decision{Runtime: "codex", HarnessID: "codex", HarnessRef: &wire.HarnessRef{Namespace: ns, Name: "codex-h"}}
	l := labelsOf(ns, d)
	if l != (turnLabels{namespace: ns, harness: "codex-h", runtime: "codex"}) {
		t.Fatalf("labelsOf = %+v", l)
	}

	// A refused turn: outcome and reason are its error code; no duration.
	recordRefused(labelsOf(ns, wire.Decision{}), wire.CodeSessionMismatch)
	if got := promtestutil.ToFloat64(turnsTotal.WithLabelValues(ns, "", "", "SessionMismatch")); got != 1 {
		t.Errorf("turns_total{outcome=SessionMismatch} = %v, want 1", got)
	}
	if got := promtestutil.ToFloat64(failClosedTotal.WithLabelValues(ns, "SessionMismatch")); got != 1 {
		t.Errorf("fail_closed_total{reason=SessionMismatch} = %v, want 1", got)
	}

	// A turn with a result: its terminal kind, duration and tokens.
	res := &wire.TurnResult{Terminal: wire.Terminal{Kind: wire.TerminalOK}, Usage: wire.Usage{Input: 100, CachedInput: 40, Output: 7}}
	recordFirstPartial(l, 300*time.Millisecond)
	recordFinished(l, res, nil, 2*time.Second)
	if got := promtestutil.ToFloat64(turnsTotal.WithLabelValues(ns, "codex-h", "codex", "ok")); got != 1 {
		t.Errorf("turns_total{outcome=ok} = %v, want 1", got)
	}
	for kind, want := range map[string]float64{"input": 100, "cached_input": 40, "output": 7} {
		if got := promtestutil.ToFloat64(tokensTotal.WithLabelValues(ns, "codex-h", kind)); got != want {
			t.Errorf("tokens_total{kind=%s} = %v, want %v", kind, got, want)
		}
	}
	if n := histogramCount(turnDuration.WithLabelValues(ns, "codex-h", "ok")); n != 1 {
		t.Errorf("turn_duration_seconds{outcome=ok} count = %d, want 1", n)
	}
	if n := histogramCount(timeToFirstPartial.WithLabelValues(ns, "codex-h")); n != 1 {
		t.Errorf("time_to_first_partial_seconds count = %d, want 1", n)
	}

	// A turn that ran and ended with an error: the outcome is its code, it
	// is not a fail-closed decision.
	recordFinished(l, nil, wire.Errorf(wire.CodeHarnessUnavailable, "", "gone").Touched(false), time.Second)
	if got := promtestutil.ToFloat64(turnsTotal.WithLabelValues(ns, "codex-h", "codex", "HarnessUnavailable")); got != 1 {
		t.Errorf("turns_total{outcome=HarnessUnavailable} = %v, want 1", got)
	}
	if got := promtestutil.ToFloat64(failClosedTotal.WithLabelValues(ns, "HarnessUnavailable")); got != 0 {
		t.Errorf("fail_closed_total{reason=HarnessUnavailable} = %v, want 0", got)
	}
}

func TestMetricsRegisteredAndLintClean(t *testing.T) {
	// Every collector is on controller-runtime's registry (registering it
	// again is refused as a duplicate) and passes promlint.
	for name, c := range map[string]prometheus.Collector{
		"harness_dispatcher_turns_total":                   turnsTotal,
		"harness_dispatcher_fail_closed_total":             failClosedTotal,
		"harness_dispatcher_time_to_first_partial_seconds": timeToFirstPartial,
		"harness_dispatcher_turn_duration_seconds":         turnDuration,
		"harness_dispatcher_tokens_total":                  tokensTotal,
	} {
		var are prometheus.AlreadyRegisteredError
		if err := metrics.Registry.Register(c); !errors.As(err, &are) {
			t.Errorf("%s: Register again = %v, want AlreadyRegisteredError", name, err)
		}
		problems, err := promtestutil.CollectAndLint(c, name)
		if err != nil {
			t.Errorf("%s: lint: %v", name, err)
		}
		for _, p := range problems {
			t.Errorf("%s: lint: %s", name, p.Text)
		}
	}
}
