package scale

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/internal/testutil"
)

// pacedUtilisation is the machine utilisation the paced arm aims at: a
// queue only stays short below about half the capacity it serves from.
const pacedUtilisation = 0.4

// pacedStart is the first paced run's rate as a share of the rate the same
// creates reached with 50 in flight; later runs correct it (measurePaced).
const pacedStart = 0.25

// settle waits until the manager's work queues have been empty over two
// half-second windows in a row (at most two minutes), so that one arm's
// backlog is neither measured in the next nor slows it, and returns the
// machine's busy share over the last window: the background the next run
// adds to (the manager's periodic work, such as probing every external
// harness every 30 s, does not stop).
func settle(ctx context.Context, b *testing.B, metricsURL string) float64 {
	b.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	empty := 0
	for {
		busy0, total0, err := machineCPU()
		if err != nil {
			b.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond) // the window the busy share is measured over
		values, err := managerValues(ctx, metricsURL, "workqueue_depth")
		if err != nil {
			b.Fatal(err)
		}
		busy1, total1, err := machineCPU()
		if err != nil {
			b.Fatal(err)
		}
		share := 0.0
		if d := total1 - total0; d > 0 {
			share = (busy1 - busy0) / d
		}
		if values["workqueue_depth"] == 0 {
			empty++
		} else {
			empty = 0
		}
		if empty >= 2 {
			return share
		}
		if time.Now().After(deadline) {
			b.Logf("the manager's work queues did not empty in 2 minutes (%v queued); measuring anyway", values["workqueue_depth"])
			return share
		}
	}
}

// clockTicks is Linux's USER_HZ, the unit of /proc/<pid>/stat's CPU times.
const clockTicks = 100

// admissionCounters are the counters read around a run: the manager's own
// (its CPU, its webhook server's TLS handshakes), the CPU of the processes
// the benchmark runs (itself, etcd, the API server, the manager, the
// dispatcher) and of the whole machine.
type admissionCounters struct {
	at                 time.Time
	managerCPU         float64 // seconds
	handshakes         float64
	treeCPU            float64 // seconds
	machineBusy, total float64 // /proc/stat jiffies
}

func readAdmissionCounters(ctx context.Context, metricsURL string) (admissionCounters, error) {
	c := admissionCounters{at: time.Now()}
	values, err := managerValues(ctx, metricsURL, "process_cpu_seconds_total", "harness_webhook_tls_handshakes_total")
	if err != nil {
		return c, err
	}
	c.managerCPU, c.handshakes = values["process_cpu_seconds_total"], values["harness_webhook_tls_handshakes_total"]
	if c.treeCPU, err = processTreeCPU(os.Getpid()); err != nil {
		return c, err
	}
	c.machineBusy, c.total, err = machineCPU()
	return c, err
}

// utilisation is the share of the machine's cores the benchmark's processes
// used between c and later, and the share the whole machine used.
func (c admissionCounters) utilisation(later admissionCounters) (tree, machine float64) {
	wall := later.at.Sub(c.at).Seconds()
	tree = (later.treeCPU - c.treeCPU) / (wall * float64(runtime.NumCPU()))
	if d := later.total - c.total; d > 0 {
		machine = (later.machineBusy - c.machineBusy) / d
	}
	return tree, machine
}

// managerValues sums the counters and gauges of the named families on the
// manager's metrics page.
func managerValues(ctx context.Context, metricsURL string, names ...string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeProtoDelim)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET the manager's metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	out := map[string]float64{}
	dec := expfmt.NewDecoder(resp.Body, expfmt.NewFormat(expfmt.TypeProtoDelim))
	for {
		var family dto.MetricFamily
		if err := dec.Decode(&family); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("decode the manager's metrics: %w", err)
		}
		if !slices.Contains(names, family.GetName()) {
			continue
		}
		for _, m := range family.GetMetric() {
			out[family.GetName()] += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	for _, n := range names {
		if _, ok := out[n]; !ok {
			return nil, fmt.Errorf("the manager's metrics have no %s", n)
		}
	}
	return out, nil
}

// processTreeCPU is the CPU time, in seconds, of root and every process
// below it (/proc/<pid>/stat: utime and stime).
func processTreeCPU(root int) (float64, error) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return 0, err
	}
	children := map[int][]int{}
	ticks := map[int]float64{}
	for _, path := range stats {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue // the process ended
		}
		// pid (comm) state ppid … utime stime: comm may hold spaces.
		s := string(raw)
		end := strings.LastIndexByte(s, ')')
		pid, err := strconv.Atoi(strings.TrimSpace(s[:strings.IndexByte(s, '(')]))
		if end < 0 || err != nil {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		utime, _ := strconv.ParseFloat(f[11], 64)
		stime, _ := strconv.ParseFloat(f[12], 64)
		children[ppid] = append(children[ppid], pid)
		ticks[pid] = utime + stime
	}
	total := 0.0
	for queue := []int{root}; len(queue) > 0; queue = queue[1:] {
		total += ticks[queue[0]]
		queue = append(queue, children[queue[0]]...)
	}
	return total / clockTicks, nil
}

// machineCPU reads /proc/stat's first line: busy and total jiffies of all
// cores (idle and iowait are not busy).
func machineCPU() (busy, total float64, err error) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := bytes.Cut(raw, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 6 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("unexpected /proc/stat: %q", line)
	}
	for i, v := range f[1:] {
		n, _ := strconv.ParseFloat(v, 64)
		if i == 7 || i == 8 { // guest times are already in user
			continue
		}
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, total, nil
}

// reportPerCreate reports the manager's CPU and its webhook server's TLS
// handshakes per create between before and after, with prefix before the
// units' names.
func reportPerCreate(b *testing.B, prefix string, before, after admissionCounters, creates int) {
	b.ReportMetric((after.managerCPU-before.managerCPU)*1000/float64(creates), prefix+"manager-cpu-ms/create")
	b.ReportMetric((after.handshakes-before.handshakes)/float64(creates), prefix+"tls-handshakes/create")
}

// pacedTries bounds the paced runs of one arm: a run whose machine
// utilisation misses pacedBand is run again at a corrected rate; the last
// run is the one reported.
const pacedTries = 3

// pacedBand is the machine utilisation a paced run must land in to count:
// at most half the cores (the goal's condition), and not so far below it
// that the figure flatters.
var pacedBand = [2]float64{0.3, 0.5}

// measurePaced creates n objects at a paced rate, each on its own schedule
// (an open loop: a slow create does not delay the next), and reports what
// the saturated run reports, prefixed "paced-", with the utilisation it ran
// at: the CPU of the benchmark's processes over both cores
// (paced-utilisation), the machine's (paced-machine-utilisation) and the
// machine's just before, with no create in flight
// (paced-background-utilisation). The first run goes at pacedStart ×
// saturated, the creates per second of the run with 50 in flight; a run
// outside pacedBand is repeated at the rate that, at the CPU per create it
// measured above the background, uses pacedUtilisation, up to pacedTries
// runs (paced-runs).
func measurePaced(ctx context.Context, b *testing.B, o *testutil.Operator, cs kubernetes.Interface, spans *webhookSpans, resource string, n int, saturated float64, newObject func() client.Object, profile bool) {
	rate := pacedStart * saturated
	for run := 1; ; run++ {
		background := settle(ctx, b, o.ManagerMetrics)
		before := readAdmission(ctx, b, o, cs, spans, resource)
		var profiled func() error
		if out := os.Getenv("BENCH_OUT"); profile && out != "" {
			profiled = profileAdmission(ctx, o, cs, out, resource, time.Duration(float64(n)/rate*float64(time.Second)))
		}
		latencies, refused := createPaced(ctx, o, n, rate, newObject)
		if profiled != nil {
			if err := profiled(); err != nil {
				b.Fatal(err)
			}
		}
		after := readAdmission(ctx, b, o, cs, spans, resource)
		tree, machine := before.counters.utilisation(after.counters)
		b.Logf("paced run %d of %s: %.1f creates/s, machine utilisation %.2f (%.2f before it)", run, resource, rate, machine, background)
		inBand := machine >= pacedBand[0] && machine <= pacedBand[1]
		if run < pacedTries && !inBand && background < pacedUtilisation {
			// This run's spans, some still on their way, must not count in
			// the next one's.
			if _, err := spans.durations(ctx, before.spans, resource, int(after.webhooks.minus(before.webhooks).total)); err != nil {
				b.Fatal(err)
			}
			if added := machine - background; added > 0.01 {
				rate *= (pacedUtilisation - background) / added
			} else {
				rate *= 2
			}
			continue
		}
		if len(refused) > 0 {
			b.Logf("%d paced creates of %s refused, the first: %s", len(refused), resource, refused[0])
		}
		b.ReportMetric(float64(run), "paced-runs")
		b.ReportMetric(rate, "paced-creates/s")
		b.ReportMetric(tree, "paced-utilisation")
		b.ReportMetric(machine, "paced-machine-utilisation")
		b.ReportMetric(background, "paced-background-utilisation")
		b.ReportMetric(float64(len(refused)), "paced-refused")
		b.ReportMetric(ms(latencies[len(latencies)*99/100]), "paced-create-p99-ms")
		reportAdmission(ctx, b, spans, resource, "paced-", before, after, n)
		return
	}
}

// createPaced creates n objects at rate per second, each on its own
// schedule, and returns their latencies, sorted, and the refusals' messages.
func createPaced(ctx context.Context, o *testutil.Operator, n int, rate float64, newObject func() client.Object) ([]time.Duration, []string) {
	interval := time.Duration(float64(time.Second) / rate)
	latencies := make([]time.Duration, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var refused []string
	start := time.Now()
	for i := range n {
		time.Sleep(time.Until(start.Add(time.Duration(i) * interval))) // pacing, not an ordering
		obj := newObject()
		wg.Go(func() {
			t := time.Now()
			if err := o.Env.Client.Create(ctx, obj); err != nil {
				mu.Lock()
				refused = append(refused, err.Error())
				mu.Unlock()
			}
			latencies[i] = time.Since(t)
		})
	}
	wg.Wait()
	slices.Sort(latencies)
	return latencies, refused
}

// profileAdmission profiles the CPU of kube-apiserver and of the manager
// for the paced run's expected length d (at least a second), both at
// once, into out/admission-<process>-cpu-<resource>.pprof (a later run of
// the same arm replaces them), and returns a function that waits for both
// and says whether they were written. Go's profiler samples 100 times a
// second, which costs each process about a percent of its CPU.
func profileAdmission(ctx context.Context, o *testutil.Operator, cs kubernetes.Interface, out, resource string, d time.Duration) func() error {
	seconds := strconv.Itoa(max(1, int(d.Round(time.Second)/time.Second)))
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Go(func() {
		raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", seconds).DoRaw(ctx)
		if err != nil {
			errs[0] = fmt.Errorf("profile kube-apiserver: %w", err)
			return
		}
		errs[0] = os.WriteFile(filepath.Join(out, "admission-apiserver-cpu-"+resource+".pprof"), raw, 0o600)
	})
	wg.Go(func() {
		errs[1] = getToFile(ctx, o.ManagerPprof+"/profile?seconds="+seconds,
			filepath.Join(out, "admission-manager-cpu-"+resource+".pprof"), "the manager's CPU profile")
	})
	return func() error {
		wg.Wait()
		return errors.Join(errs...)
	}
}
