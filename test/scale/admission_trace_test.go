package scale

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
)

// The API server's tracing is how BenchmarkAdmission times each webhook
// call on the API server's side: its duration histogram
// (apiserver_admission_webhook_admission_duration_seconds) has buckets at
// 5, 25 and 100 ms, too coarse for a 10 ms goal. kube-apiserver, started
// with --tracing-config-file, exports a span "Call validating webhook" /
// "Call mutating webhook" around each call (the request's encoding, the
// connection, TLS, the manager's answer and its decoding: what the
// histogram measures) over OTLP to webhookSpans, a collector on loopback.
// Every request is sampled, which costs the API server some CPU in every
// arm of the benchmark alike.

// webhookSpan is one webhook call as the API server traced it.
type webhookSpan struct {
	webhook, operation string
	duration           time.Duration
}

// webhookSpans is an OTLP/gRPC trace collector that keeps the API
// server's webhook spans in the order they arrived.
type webhookSpans struct {
	collectortrace.UnimplementedTraceServiceServer
	addr   string
	server *grpc.Server

	mu      sync.Mutex
	spans   []webhookSpan
	arrived chan struct{} // closed and replaced on every export
}

// startWebhookSpans serves a collector on a loopback port.
func startWebhookSpans() (*webhookSpans, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	w := &webhookSpans{addr: lis.Addr().String(), server: grpc.NewServer(), arrived: make(chan struct{})}
	collectortrace.RegisterTraceServiceServer(w.server, w)
	go func() { _ = w.server.Serve(lis) }()
	return w, nil
}

func (w *webhookSpans) stop() { w.server.Stop() }

// tracingConfig writes the API server's tracing configuration, every
// request sampled and exported to w, into dir and returns its path.
func (w *webhookSpans) tracingConfig(dir string) (string, error) {
	path := filepath.Join(dir, "apiserver-tracing.yaml")
	config := fmt.Sprintf("apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: %s\nsamplingRatePerMillion: 1000000\n", w.addr)
	return path, os.WriteFile(path, []byte(config), 0o600)
}

// Export keeps the webhook spans of a batch.
func (w *webhookSpans) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	var batch []webhookSpan
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				if s.GetName() != "Call validating webhook" && s.GetName() != "Call mutating webhook" {
					continue
				}
				span := webhookSpan{duration: time.Duration(s.GetEndTimeUnixNano() - s.GetStartTimeUnixNano())}
				for _, a := range s.GetAttributes() {
					switch a.GetKey() {
					case "webhook":
						span.webhook = a.GetValue().GetStringValue()
					case "operation":
						span.operation = a.GetValue().GetStringValue()
					}
				}
				batch = append(batch, span)
			}
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.spans = append(w.spans, batch...)
	close(w.arrived)
	w.arrived = make(chan struct{})
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// mark is how many spans have arrived: where a run's spans start.
func (w *webhookSpans) mark() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.spans)
}

// durations waits until the spans since mark hold want CREATE calls of
// resource's webhooks (the API server's histogram counted them: its
// exporter sends a batch every few seconds) and returns their durations,
// sorted.
func (w *webhookSpans) durations(ctx context.Context, mark int, resource string, want int) ([]time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		w.mu.Lock()
		var out []time.Duration
		for _, s := range w.spans[mark:] {
			if s.operation == "CREATE" && resourceWebhook(s.webhook, resource) {
				out = append(out, s.duration)
			}
		}
		arrived := w.arrived
		w.mu.Unlock()
		if len(out) >= want {
			slices.Sort(out)
			return out, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("the API server traced %d webhook calls of %s, its histogram counted %d: %w", len(out), resource, want, ctx.Err())
		case <-arrived:
		}
	}
}

// quantileMs is the q-quantile of sorted durations in milliseconds.
func quantileMs(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return ms(sorted[min(len(sorted)-1, int(float64(len(sorted))*q))])
}
