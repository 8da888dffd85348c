package httpapi_test

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// What BenchmarkDispatcherProcess reads besides /proc/<pid>: the
// dispatcher's added-latency histogram, the machine's busy time and a CPU
// profile's attribution.

// addedMetric is the dispatcher's histogram of each new turn's time in the
// HTTP layer (turnlatency.go).
const addedMetric = "harness_dispatcher_http_turn_added_seconds"

// addedHistogram is addedMetric's cumulative counts at its upper bounds
// (seconds), in order.
type addedHistogram struct {
	bounds []float64
	counts []uint64
}

// scrapeAdded reads addedMetric from the dispatcher's /metrics.
func scrapeAdded(c *http.Client, url string) (addedHistogram, error) {
	families, err := scrapeFamilies(c, url)
	if err != nil {
		return addedHistogram{}, err
	}
	fam := families[addedMetric]
	if fam == nil || len(fam.GetMetric()) != 1 {
		return addedHistogram{}, fmt.Errorf("%s: no %s", url, addedMetric)
	}
	return histogramOf(fam.GetMetric()[0]), nil
}

// histogramOf is m's histogram: its cumulative counts at its upper bounds.
func histogramOf(m *dto.Metric) addedHistogram {
	var h addedHistogram
	for _, bk := range m.GetHistogram().GetBucket() {
		h.bounds = append(h.bounds, bk.GetUpperBound())
		h.counts = append(h.counts, bk.GetCumulativeCount())
	}
	return h
}

// windowMetric splits addedMetric by window (turnlatency.go).
const windowMetric = "harness_dispatcher_http_turn_window_seconds"

// scrapeWindows reads windowMetric's histogram of each window.
func scrapeWindows(c *http.Client, url string) (map[string]addedHistogram, error) {
	families, err := scrapeFamilies(c, url)
	if err != nil {
		return nil, err
	}
	out := map[string]addedHistogram{}
	if fam := families[windowMetric]; fam != nil {
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "window" {
					out[l.GetValue()] = histogramOf(m)
				}
			}
		}
	}
	return out, nil
}

// scrapeFamilies reads the dispatcher's /metrics page.
func scrapeFamilies(c *http.Client, url string) (map[string]*dto.MetricFamily, error) {
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: status %d", url, resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	return families, nil
}

// viewReadsMetric counts the dispatcher's selection views read from its
// informer cache (cmd/dispatcher).
const viewReadsMetric = "harness_dispatcher_selection_view_reads_total"

// scrapeViewReads reads viewReadsMetric from the dispatcher's /metrics.
func scrapeViewReads(c *http.Client, url string) (float64, error) {
	families, err := scrapeFamilies(c, url)
	if err != nil {
		return 0, err
	}
	fam := families[viewReadsMetric]
	if fam == nil || len(fam.GetMetric()) != 1 {
		return 0, fmt.Errorf("%s: no %s", url, viewReadsMetric)
	}
	return fam.GetMetric()[0].GetCounter().GetValue(), nil
}

// minus is what was counted between two scrapes.
func (h addedHistogram) minus(before addedHistogram) addedHistogram {
	out := addedHistogram{bounds: h.bounds, counts: make([]uint64, len(h.counts))}
	for i := range h.counts {
		out.counts[i] = h.counts[i]
		if i < len(before.counts) {
			out.counts[i] -= before.counts[i]
		}
	}
	return out
}

// addedFigures are the paired added latency's quantiles and their 95 %
// confidence intervals, in ms.
type addedFigures struct {
	Samples    uint64  `json:"samples"`
	P50Ms      float64 `json:"p50Ms"`
	P50LowMs   float64 `json:"p50LowMs"`
	P50HighMs  float64 `json:"p50HighMs"`
	P99Ms      float64 `json:"p99Ms"`
	P99LowMs   float64 `json:"p99LowMs"`
	P99HighMs  float64 `json:"p99HighMs"`
	Overflowed bool    `json:"overflowed"` // a rank fell past the last finite bucket
}

func (h addedHistogram) figures() addedFigures {
	f := addedFigures{}
	if len(h.counts) == 0 {
		return f
	}
	n := h.counts[len(h.counts)-1] // the +Inf bucket holds every sample
	f.Samples = n
	if n == 0 {
		return f
	}
	f.P50Ms, f.P50LowMs, f.P50HighMs = h.quantile(0.50, &f.Overflowed)
	f.P99Ms, f.P99LowMs, f.P99HighMs = h.quantile(0.99, &f.Overflowed)
	return f
}

// quantile is the q-quantile as the upper bound of the bucket holding rank
// ⌈qn⌉, and its 95 % confidence interval: the order statistics of ranks
// qn ∓ 1.96·√(nq(1−q)) (the binomial's normal approximation; the upper one
// a rank further), the lower as its bucket's lower bound, the upper as its
// bucket's upper bound. A bucket boundary widens the interval, never
// narrows it.
func (h addedHistogram) quantile(q float64, overflowed *bool) (value, low, high float64) {
	n := float64(h.counts[len(h.counts)-1])
	half := 1.96 * math.Sqrt(n*q*(1-q))
	rank := func(r float64) uint64 { return uint64(min(max(r, 1), n)) }
	bucket := func(r uint64) int {
		for i, c := range h.counts {
			if c >= r {
				return i
			}
		}
		return len(h.counts) - 1
	}
	upper := func(i int) float64 {
		if math.IsInf(h.bounds[i], 1) {
			*overflowed = true
			return 1000 * h.bounds[i-1]
		}
		return 1000 * h.bounds[i]
	}
	lowerOf := func(i int) float64 {
		if i == 0 {
			return 0
		}
		return 1000 * h.bounds[i-1]
	}
	value = upper(bucket(rank(math.Ceil(q * n))))
	low = lowerOf(bucket(rank(math.Floor(q*n - half))))
	high = upper(bucket(rank(math.Ceil(q*n+half) + 1)))
	return value, low, high
}

// busyTime is the machine's CPU time from /proc/stat: busy and in all.
type busyTime struct{ busy, total uint64 }

func machineBusy() busyTime {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return busyTime{}
	}
	line, _, _ := bytes.Cut(raw, []byte("\n"))
	fields := strings.Fields(string(line))
	var t busyTime
	for i, f := range fields[1:] {
		v, _ := strconv.ParseUint(f, 10, 64)
		if i >= 8 { // guest times are in user and nice already
			break
		}
		t.total += v
		if i != 3 && i != 4 { // idle, iowait
			t.busy += v
		}
	}
	return t
}

// since is the share of the machine's CPU time that was busy since t0.
func (t busyTime) since(t0 busyTime) float64 {
	if t.total <= t0.total {
		return 0
	}
	return float64(t.busy-t0.busy) / float64(t.total-t0.total)
}

// profiled runs fn with Go's CPU profiler writing to path and returns fn's
// turns.
func profiled(path string, fn func() (int, error)) (int, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return 0, err
	}
	n, err := fn()
	pprof.StopCPUProfile()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// The HTTP layer in a CPU profile of this process: the samples under
// net/http's server connection goroutines (TLS, reading the request, the
// Handler: authn/z, decoding, the SSE stream and its writes), less those
// in the engine (Start: selection, the lease, the run's begin) and in
// reading a run's file (the store's side of following a run, which the
// direct engine does too), and less the app-server double's connections
// (an HTTP server of this process too). The HTTP client runs on other
// goroutines and is not counted.
const (
	httpFocus  = `net/http\.\(\*conn\)\.serve`
	httpIgnore = `internal/dispatcher/engine\.|journal\.\(\*runReader\)|journal\.\(\*Journal\)\.openRunFile|testutil/appserverdouble\.`
)

// httpProfileShare is the CPU time (ms) of the profile at path that the
// HTTP layer used (`go tool pprof -traces` with httpFocus and httpIgnore,
// summed).
func httpProfileShare(path string) (float64, error) {
	out, err := exec.Command("go", "tool", "pprof", "-traces", "-focus="+httpFocus, "-ignore="+httpIgnore, path).Output()
	if err != nil {
		return 0, fmt.Errorf("go tool pprof -traces %s: %w", path, err)
	}
	return sumTraces(out)
}

// sumTraces adds up the sample values of `go tool pprof -traces` output:
// each trace starts after a "-----------+---" line with its value.
func sumTraces(out []byte) (float64, error) {
	var total time.Duration
	sc := bufio.NewScanner(bytes.NewReader(out))
	first := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "-----------+") {
			first = true
			continue
		}
		if !first {
			continue
		}
		first = false
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		d, err := time.ParseDuration(fields[0])
		if err != nil {
			return 0, fmt.Errorf("pprof trace value %q: %w", fields[0], err)
		}
		total += d
	}
	return ms(total), sc.Err()
}
