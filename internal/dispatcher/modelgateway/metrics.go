package modelgateway

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// The gateway's metrics. Every label is bounded: code is a Code or
// "forwarded", class an HTTP status class, limit one of the cut reasons
// below. Sessions, runs, harnesses and models are never labels: the
// refusal's log line names them.
const metricsPrefix = "harness_model_gateway"

// codeForwarded labels a request that was forwarded upstream, whatever the
// upstream answered (upstream_responses_total has its status class).
const codeForwarded = "forwarded"

// Why a stream was cut after its headers were sent: the limit label of
// streams_cut_total.
const (
	cutUpstreamIdle  = "upstream_idle"
	cutEventTooLarge = "event_too_large"
	cutClientWrite   = "client_write"
	cutUpstreamRead  = "upstream_read"
)

type metrics struct {
	requests           *prometheus.CounterVec
	upstreamResponses  *prometheus.CounterVec
	streamsCut         *prometheus.CounterVec
	inFlight           prometheus.Gauge
	duration           prometheus.Histogram
	added              prometheus.Histogram
	connectionsRefused prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricsPrefix + "_requests_total",
			Help: "Model requests, by code: the gateway's refusal code, or forwarded for a request sent to the upstream.",
		}, []string{"code"}),
		upstreamResponses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricsPrefix + "_upstream_responses_total",
			Help: "Answers of the upstreams, by HTTP status class (2xx, 4xx, …), passed to the client unchanged.",
		}, []string{"class"}),
		streamsCut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: metricsPrefix + "_streams_cut_total",
			Help: "Answers cut after their headers were sent, by limit: upstream_idle (no bytes within the idle timeout), event_too_large (one event over its limit), client_write (a write to the client missed its deadline or failed), upstream_read (the upstream's answer broke off).",
		}, []string{"limit"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: metricsPrefix + "_requests_in_flight",
			Help: "Model requests being handled, refused ones included until their answer is written.",
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    metricsPrefix + "_request_duration_seconds",
			Help:    "Time from a model request's headers to the end of its answer (a streamed answer included).",
			Buckets: []float64{0.001, 0.005, 0.025, 0.1, 0.5, 2, 10, 30, 60, 120, 300, 600},
		}),
		added: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    metricsPrefix + "_added_seconds",
			Help:    "Time the gateway adds to a forwarded request's first byte: from its headers to the upstream request written (admission, liveness, dial), plus from the upstream's response headers to their write to the client.",
			Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 2},
		}),
		connectionsRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: metricsPrefix + "_connections_refused_total",
			Help: "Connections closed at once because the gateway's connection limit was reached.",
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.requests, m.upstreamResponses, m.streamsCut, m.inFlight, m.duration, m.added, m.connectionsRefused} {
		if err := reg.Register(c); err != nil {
			var already prometheus.AlreadyRegisteredError
			if errors.As(err, &already) {
				return nil, errors.New("modelgateway: the metrics are already registered: one Gateway per registry")
			}
			return nil, fmt.Errorf("modelgateway: register the metrics: %w", err)
		}
	}
	return m, nil
}

// statusClass is "2xx" for 200, and so on.
func statusClass(status int) string {
	if status < 100 || status > 599 {
		return "other"
	}
	return strconv.Itoa(status/100) + "xx"
}
