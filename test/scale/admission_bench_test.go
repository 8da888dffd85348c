package scale

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/testutil"
)

// admissionConcurrency is the goal's load (docs/benchmarks.md): creates in
// flight at once.
const admissionConcurrency = 50

// BenchmarkAdmission is what the manager's admission webhooks cost a
// create (`make bench-admission`): the manager process as deployed
// (testutil.StartOperator: webhooks reached by URL over TLS, envtest's
// kube-apiserver), 50 creates in flight at once, of AgentSessions and of
// AgentHarnesses, with 0, 100 and 1,000 RuntimePolicies (that select no
// namespace) and AgentHarnesses already there — the objects the webhooks'
// cross-object checks read. Reported: the creates' end-to-end latency, and
// the webhooks' own latency from the API server's
// apiserver_admission_webhook_admission_duration_seconds (its buckets are
// 5, 25, 100 ms…: the quantiles are interpolated within them) and from
// its spans, each call timed (admission_trace_test.go), and the
// handlers' own from the manager's controller_runtime_webhook_latency_seconds,
// the manager's CPU per create (manager-cpu-ms/create, its
// process_cpu_seconds_total) and its webhook server's TLS handshakes per
// create (tls-handshakes/create). Then the same number of creates again,
// paced to use pacedUtilisation of the machine, reports the
// same figures prefixed "paced-" and the utilisation they ran at
// (measurePaced): the latencies a webhook has when it is not queueing for
// a saturated machine. With BENCH_OUT set, the paced runs at the largest
// size also profile the CPU of kube-apiserver and the manager
// (profileAdmission).
func BenchmarkAdmission(b *testing.B) {
	discardClientLogs()
	spans, err := startWebhookSpans()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(spans.stop)
	tracing, err := spans.tracingConfig(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	o, err := testutil.StartOperatorWith(b.TempDir(), testutil.OperatorOptions{APIServerArgs: map[string]string{"tracing-config-file": tracing}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = o.Stop() })
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(o.Env.Config)
	if err != nil {
		b.Fatal(err)
	}
	for n := 1; n <= testutil.ProcessSuiteNamespaces; n++ {
		if err := o.Env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testutil.ProcessNamespace(n)}}); err != nil {
			b.Fatal(err)
		}
	}
	existing := 0
	var created atomic.Int64 // names stay unique across the rounds Go runs a benchmark in
	sizes := []int{0, 100, 1000}
	if testing.Short() {
		sizes = sizes[:2] // a quick look: the seeding of 1,000 takes minutes
	}
	for _, grow := range sizes {
		seedCrossObjects(ctx, b, o.Env.Client, existing, grow)
		existing = grow
		b.Run("AgentSession/existing="+strconv.Itoa(grow), func(b *testing.B) {
			ns := testutil.ProcessNamespace(1)
			newSession := func() client.Object {
				name := "bench-" + strconv.FormatInt(created.Add(1), 10)
				return &v1alpha1.AgentSession{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: armLabel},
					Spec:       v1alpha1.AgentSessionSpec{AgentID: "main", SessionKey: "agent:main:" + name, SessionID: name, Model: "openai/gpt-5"},
				}
			}
			rate := measureCreates(ctx, b, o, cs, spans, "agentsessions", newSession)
			measurePaced(ctx, b, o, cs, spans, "agentsessions", b.N, rate, newSession, grow == sizes[len(sizes)-1])
			deleteArm(ctx, b, o.Env.Client, &v1alpha1.AgentSession{}, ns)
		})
		b.Run("AgentHarness/existing="+strconv.Itoa(grow), func(b *testing.B) {
			ns := testutil.ProcessNamespace(2)
			newHarness := func() client.Object {
				h := externalHarness(ns, "bench-"+strconv.FormatInt(created.Add(1), 10))
				h.Labels = armLabel
				return h
			}
			rate := measureCreates(ctx, b, o, cs, spans, "agentharnesses", newHarness)
			measurePaced(ctx, b, o, cs, spans, "agentharnesses", b.N, rate, newHarness, grow == sizes[len(sizes)-1])
			deleteArm(ctx, b, o.Env.Client, &v1alpha1.AgentHarness{}, ns)
		})
	}
}

// armLabel marks the objects an arm creates, so that deleteArm removes
// them and only the seeded objects stay for the next arms.
var armLabel = map[string]string{"bench-admission": "arm"}

// deleteArm deletes the objects of kind obj an arm created in namespace
// ns. Left behind, thousands of external AgentHarnesses at an address
// nothing serves would keep the manager probing them every 30 s: a
// background that grows with every arm and keeps the next paced arm from
// running at half the machine. The objects seeded for existing=n stay.
func deleteArm(ctx context.Context, b *testing.B, c client.Client, obj client.Object, ns string) {
	b.Helper()
	if err := c.DeleteAllOf(ctx, obj, client.InNamespace(ns), client.MatchingLabels(armLabel)); err != nil {
		b.Fatal(err)
	}
}

// seedCrossObjects creates RuntimePolicies from (selecting a label no
// namespace has, so they change no session) and AgentHarnesses (ids of
// their own, spread over the suite's namespaces) until there are to of
// each, a few at a time: a seed refused by a slow webhook is created again.
func seedCrossObjects(ctx context.Context, b *testing.B, c client.Client, from, to int) {
	b.Helper()
	next := make(chan int)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range next {
				name := "seed-" + strconv.Itoa(i)
				p := testutil.NewPolicy(name, testutil.ProviderRuntime("openai", "codex"), testutil.Selecting(map[string]string{"bench-never": "true"}))
				h := externalHarness(testutil.ProcessNamespace(3+i%(testutil.ProcessSuiteNamespaces-2)), name)
				for _, obj := range []client.Object{p, h} {
					for err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err); err = c.Create(ctx, obj) {
						b.Logf("seed %s again: %v", name, err)
					}
				}
			}
		})
	}
	for i := from; i < to; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}

// externalHarness is an external AgentHarness with a harness id of its own,
// at a loopback address nothing serves (its controller's verdict does not
// matter here).
func externalHarness(ns, name string) *v1alpha1.AgentHarness {
	return &v1alpha1.AgentHarness{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.AgentHarnessSpec{
			HarnessID: name, Label: name, Adapter: v1alpha1.AdapterCodexAppServer,
			External: &v1alpha1.ExternalServer{URL: "ws://127.0.0.1:9", TokenSecretRef: v1alpha1.SecretKeyReference{Name: "absent", Key: "token"}},
		},
	}
}

// measureCreates creates b.N objects (newObject), admissionConcurrency at
// a time, and reports the creates' p50/p99, how many were refused (a
// webhook that did not answer within its 5 s is one), the webhooks' p50/p99
// for resource as the API server measured them during the run (the round
// trip: connection, TLS, the manager's queueing for CPU, the handler), the
// handlers' own p50/p99 as the manager measured them
// (controller_runtime_webhook_latency_seconds, from reading the request to
// writing the answer), and the manager's CPU and its webhook server's TLS
// handshakes per create. It starts on a settled system (settle) and
// returns the creates per second it reached.
func measureCreates(ctx context.Context, b *testing.B, o *testutil.Operator, cs kubernetes.Interface, spans *webhookSpans, resource string, newObject func() client.Object) float64 {
	c := o.Env.Client
	settle(ctx, b, o.ManagerMetrics)
	before := readAdmission(ctx, b, o, cs, spans, resource)
	latencies := make([]time.Duration, b.N)
	next := make(chan int)
	var wg sync.WaitGroup
	var refused atomic.Int64
	var firstErr atomic.Value
	b.ResetTimer()
	for range admissionConcurrency {
		wg.Go(func() {
			for i := range next {
				start := time.Now()
				err := c.Create(ctx, newObject())
				latencies[i] = time.Since(start)
				if err != nil {
					refused.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		})
	}
	for i := range b.N {
		next <- i
	}
	close(next)
	wg.Wait()
	b.StopTimer()
	after := readAdmission(ctx, b, o, cs, spans, resource)
	if e := firstErr.Load(); e != nil {
		b.Logf("%d of %d creates of %s refused, the first: %s", refused.Load(), b.N, resource, e)
	}
	slices.Sort(latencies)
	b.ReportMetric(ms(latencies[len(latencies)/2]), "create-p50-ms")
	b.ReportMetric(ms(latencies[len(latencies)*99/100]), "create-p99-ms")
	b.ReportMetric(float64(refused.Load()), "refused")
	reportAdmission(ctx, b, spans, resource, "", before, after, b.N)
	return float64(b.N) / after.counters.at.Sub(before.counters.at).Seconds()
}

// admissionReading is what a run of creates is measured by, read before
// and after it: the manager's counters, the API server's webhook
// durations and the manager's handler durations of the resource.
type admissionReading struct {
	counters admissionCounters
	webhooks histogram
	handlers nativeHistogram
	// spans is where the webhook spans that arrive later start.
	spans int
}

func readAdmission(ctx context.Context, b *testing.B, o *testutil.Operator, cs kubernetes.Interface, spans *webhookSpans, resource string) admissionReading {
	b.Helper()
	r := admissionReading{spans: spans.mark()}
	var err error
	if r.counters, err = readAdmissionCounters(ctx, o.ManagerMetrics); err != nil {
		b.Fatal(err)
	}
	if r.webhooks, err = webhookDurations(ctx, cs, resource); err != nil {
		b.Fatal(err)
	}
	if r.handlers, err = handlerDurations(ctx, o.ManagerMetrics, resource); err != nil {
		b.Fatal(err)
	}
	return r
}

// reportAdmission reports the webhook and handler p50/p99 and the
// per-create figures of the n creates between before and after, each
// unit prefixed with prefix: the webhooks' from the API server's histogram
// (webhook-…) and from its spans, each call timed (webhook-span-…).
func reportAdmission(ctx context.Context, b *testing.B, spans *webhookSpans, resource, prefix string, before, after admissionReading, n int) {
	webhooks := after.webhooks.minus(before.webhooks)
	b.ReportMetric(webhooks.quantile(0.5)*1000, prefix+"webhook-p50-ms")
	b.ReportMetric(webhooks.quantile(0.99)*1000, prefix+"webhook-p99-ms")
	calls, err := spans.durations(ctx, before.spans, resource, int(webhooks.total))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(quantileMs(calls, 0.5), prefix+"webhook-span-p50-ms")
	b.ReportMetric(quantileMs(calls, 0.99), prefix+"webhook-span-p99-ms")
	handlers := after.handlers.minus(before.handlers).cumulative()
	b.ReportMetric(handlers.quantile(0.5)*1000, prefix+"handler-p50-ms")
	b.ReportMetric(handlers.quantile(0.99)*1000, prefix+"handler-p99-ms")
	reportPerCreate(b, prefix, before.counters, after.counters, n)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// histogram is a cumulative histogram: counts[i] observations ≤ bounds[i].
type histogram struct {
	bounds []float64
	counts []float64
	total  float64
}

// webhookDurations sums the API server's webhook-duration histograms of
// CREATE on resource (validating and mutating webhooks alike: a create
// passes both).
func webhookDurations(ctx context.Context, cs kubernetes.Interface, resource string) (histogram, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return histogram{}, fmt.Errorf("GET /metrics of the API server: %w", err)
	}
	return sumHistograms(raw, "apiserver_admission_webhook_admission_duration_seconds", func(labels map[string]string) bool {
		return labels["operation"] == "CREATE" && resourceWebhook(labels["name"], resource)
	})
}

// handlerDurations sums the manager's histograms of its webhook handlers
// for resource (served at /mutate-…-<kind> and /validate-…-<kind>, kind the
// resource's singular). They are read as native histograms (the protobuf
// exposition): their buckets grow by a factor of about 1.09, where the
// classic ones grow tenfold.
func handlerDurations(ctx context.Context, metricsURL, resource string) (nativeHistogram, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL, nil)
	if err != nil {
		return nativeHistogram{}, err
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeProtoDelim)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nativeHistogram{}, fmt.Errorf("GET the manager's metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	h := nativeHistogram{counts: map[int]float64{}}
	dec := expfmt.NewDecoder(resp.Body, expfmt.NewFormat(expfmt.TypeProtoDelim))
	for {
		var family dto.MetricFamily
		if err := dec.Decode(&family); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nativeHistogram{}, fmt.Errorf("decode the manager's metrics: %w", err)
		}
		if family.GetName() != "controller_runtime_webhook_latency_seconds" {
			continue
		}
		for _, m := range family.GetMetric() {
			for _, l := range m.GetLabel() {
				path := l.GetValue()
				kind := path[strings.LastIndex(path, "-")+1:] // agentsession of agentsessions
				if l.GetName() == "webhook" && kind != "" && strings.HasPrefix(resource, kind) {
					if err := h.add(m.GetHistogram()); err != nil {
						return nativeHistogram{}, err
					}
				}
			}
		}
	}
	return h, nil
}

// nativeHistogram is a Prometheus native histogram's observations: bucket
// i holds those in (base^(i-1), base^i], base = 2^(2^-schema); zero those
// at or below the zero threshold.
type nativeHistogram struct {
	schema int32
	zero   float64
	counts map[int]float64
}

func (h *nativeHistogram) add(m *dto.Histogram) error {
	if len(m.GetPositiveSpan()) == 0 && m.GetSampleCount() > 0 && m.GetZeroCount() != m.GetSampleCount() {
		return fmt.Errorf("the manager's webhook latency histogram has no native buckets")
	}
	h.schema = m.GetSchema()
	h.zero += float64(m.GetZeroCount())
	index, count := 0, int64(0)
	deltas := m.GetPositiveDelta()
	for _, span := range m.GetPositiveSpan() {
		index += int(span.GetOffset())
		for range span.GetLength() {
			count += deltas[0]
			deltas = deltas[1:]
			h.counts[index] += float64(count)
			index++
		}
	}
	return nil
}

func (h nativeHistogram) minus(o nativeHistogram) nativeHistogram {
	out := nativeHistogram{schema: h.schema, zero: h.zero - o.zero, counts: maps.Clone(h.counts)}
	for i, c := range o.counts {
		out.counts[i] -= c
	}
	return out
}

// cumulative is the histogram as upper bounds and cumulative counts, from
// the lower bound of its first bucket.
func (h nativeHistogram) cumulative() histogram {
	indices := slices.Sorted(maps.Keys(h.counts))
	if len(indices) == 0 {
		return histogram{total: h.zero}
	}
	base := math.Exp2(math.Exp2(-float64(h.schema)))
	out := histogram{bounds: []float64{math.Pow(base, float64(indices[0]-1))}, counts: []float64{h.zero}, total: h.zero}
	for i := indices[0]; i <= indices[len(indices)-1]; i++ {
		out.total += h.counts[i]
		out.bounds = append(out.bounds, math.Pow(base, float64(i)))
		out.counts = append(out.counts, out.total)
	}
	return out
}

// sumHistograms sums the histograms of family in a metrics page whose
// labels match.
func sumHistograms(raw []byte, family string, match func(labels map[string]string) bool) (histogram, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return histogram{}, err
	}
	var h histogram
	for _, m := range families[family].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if !match(labels) {
			continue
		}
		hist := m.GetHistogram()
		if h.bounds == nil {
			for _, bk := range hist.GetBucket() {
				h.bounds = append(h.bounds, bk.GetUpperBound())
			}
			h.counts = make([]float64, len(h.bounds))
		}
		for i, bk := range hist.GetBucket() {
			h.counts[i] += float64(bk.GetCumulativeCount())
		}
		h.total += float64(hist.GetSampleCount())
	}
	return h, nil
}

// resourceWebhook reports whether the webhook named name admits resource
// (the manager's webhooks are named <verb>.<resource>.harness.openclaw.dev).
func resourceWebhook(name, resource string) bool {
	return strings.Contains(name, "."+resource+".")
}

func (h histogram) minus(o histogram) histogram {
	out := histogram{bounds: h.bounds, counts: slices.Clone(h.counts), total: h.total - o.total}
	for i := range out.counts {
		if i < len(o.counts) {
			out.counts[i] -= o.counts[i]
		}
	}
	return out
}

// quantile interpolates the q-quantile linearly within its bucket (from 0
// for the first); past the last bound it is +Inf.
func (h histogram) quantile(q float64) float64 {
	if h.total == 0 {
		return math.NaN()
	}
	rank := q * h.total
	lower, below := 0.0, 0.0
	for i, bound := range h.bounds {
		if h.counts[i] >= rank {
			return lower + (bound-lower)*(rank-below)/math.Max(h.counts[i]-below, 1)
		}
		lower, below = bound, h.counts[i]
	}
	return math.Inf(1)
}
