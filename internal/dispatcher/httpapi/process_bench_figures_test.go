package httpapi_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/openclaw/harness-operator/internal/testutil/benchhist"
)

// What BenchmarkDispatcherProcess reads besides /proc/<pid>: the
// dispatcher's added-latency histogram, the machine's busy time and a CPU
// profile's attribution.

// addedMetric is the dispatcher's histogram of each new turn's time in the
// HTTP layer (turnlatency.go).
const addedMetric = "harness_dispatcher_http_turn_added_seconds"

// addedHistogram is addedMetric's cumulative counts at its upper bounds
// (seconds), in order.
type addedHistogram = benchhist.Histogram

// scrapeAdded reads addedMetric from the dispatcher's /metrics.
func scrapeAdded(c *http.Client, url string) (addedHistogram, error) {
	return benchhist.Scrape(c, url, addedMetric)
}

// histogramOf is m's histogram: its cumulative counts at its upper bounds.
func histogramOf(m *dto.Metric) addedHistogram { return benchhist.Of(m) }

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
	return benchhist.Families(c, url)
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

// addedFigures are the paired added latency's quantiles and their 95 %
// confidence intervals, in ms (benchhist.Histogram.Figures).
type addedFigures = benchhist.Figures

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
