package httpapi_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkDispatcherConcurrency's figures: its JSON file (the shape is in
// the benchmark's doc comment), its metrics and its log.

// concurrencyReport is $BENCH_OUT/dispatcher-concurrency.json.
type concurrencyReport struct {
	Date          string          `json:"date"`
	CPUs          int             `json:"cpus"`
	IdleCPUPerSec cpuMs           `json:"idleCpuPerSec"` // CPU ms per second without turns
	Double        []levelFigures  `json:"double"`
	Real          []levelFigures  `json:"realCodex"`
	Max           maxFigures      `json:"max"`
	OpenLoop      openFigures     `json:"openLoop"`
	Profile       *profileFigures `json:"profile,omitempty"`
}

// levelFigures are both arms' figures at one load.
type levelFigures struct {
	Concurrency       int     `json:"concurrency"`
	Turns             int     `json:"turns"` // per arm
	DirectP50Ms       float64 `json:"directP50Ms"`
	DirectP99Ms       float64 `json:"directP99Ms"`
	HTTPP50Ms         float64 `json:"httpP50Ms"`
	HTTPP99Ms         float64 `json:"httpP99Ms"`
	AddedP50Ms        float64 `json:"addedP50Ms"`
	AddedP99Ms        float64 `json:"addedP99Ms"`
	RatioP50          float64 `json:"ratioP50"`
	TurnsPerSec       float64 `json:"turnsPerSec"` // the HTTP arm's
	DirectTurnsPerSec float64 `json:"directTurnsPerSec"`
	DirectCPUPerTurn  cpuMs   `json:"directCpuPerTurn"`
	HTTPCPUPerTurn    cpuMs   `json:"httpCpuPerTurn"`
}

// openFigures are the open loop's.
type openFigures struct {
	levelFigures
	RatePerSec float64 `json:"ratePerSec"`
}

// maxFigures are each arm's maximum sustained turns per second.
type maxFigures struct {
	DirectTurnsPerSec float64 `json:"directTurnsPerSec"`
	DirectConcurrency int     `json:"directConcurrency"`
	HTTPTurnsPerSec   float64 `json:"httpTurnsPerSec"`
	HTTPConcurrency   int     `json:"httpConcurrency"`
}

// profileFigures describe the profiled HTTP closed loop.
type profileFigures struct {
	Concurrency int     `json:"concurrency"`
	Turns       int     `json:"turns"`
	TurnsPerSec float64 `json:"turnsPerSec"`
	CPUPerTurn  cpuMs   `json:"cpuPerTurn"`
}

// figures are the percentiles, differences and throughputs of what the
// arms measured at concurrency c.
func figures(c int, arms [2]armSample) levelFigures {
	d, h := arms[directArm], arms[httpArm]
	f := levelFigures{
		Concurrency: c, Turns: len(d.ms),
		DirectP50Ms: percentile(d.ms, 50), DirectP99Ms: percentile(d.ms, 99),
		HTTPP50Ms: percentile(h.ms, 50), HTTPP99Ms: percentile(h.ms, 99),
		TurnsPerSec: h.turnsPerSec(), DirectTurnsPerSec: d.turnsPerSec(),
		DirectCPUPerTurn: d.cpuMsPerTurn(), HTTPCPUPerTurn: h.cpuMsPerTurn(),
	}
	f.AddedP50Ms, f.AddedP99Ms = f.HTTPP50Ms-f.DirectP50Ms, f.HTTPP99Ms-f.DirectP99Ms
	f.RatioP50 = f.HTTPP50Ms / f.DirectP50Ms
	return f
}

// write writes the report to dir/dispatcher-concurrency.json.
func (r concurrencyReport) write(dir string) error {
	out, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "dispatcher-concurrency.json"), append(out, '\n'), 0o644)
}

// report gives the figures to b as metrics and as a table in its log.
func (r concurrencyReport) report(b *testing.B) {
	b.Logf("%-14s %7s %21s %21s %21s %17s %19s", "", "turns", "direct p50/p99 ms", "http p50/p99 ms",
		"added p50/p99 ms", "direct/http t/s", "CPU ms/turn d/h")
	row := func(name string, f levelFigures) {
		b.Logf("%-14s %7d %10.2f/%10.2f %10.2f/%10.2f %10.2f/%10.2f %8.1f/%8.1f %9.2f/%9.2f", name, f.Turns,
			f.DirectP50Ms, f.DirectP99Ms, f.HTTPP50Ms, f.HTTPP99Ms, f.AddedP50Ms, f.AddedP99Ms,
			f.DirectTurnsPerSec, f.TurnsPerSec, f.DirectCPUPerTurn.Self, f.HTTPCPUPerTurn.Self)
	}
	for _, f := range r.Double {
		row(fmt.Sprintf("double c=%d", f.Concurrency), f)
		reportLevel(b, fmt.Sprintf("c%d-", f.Concurrency), f)
	}
	row(fmt.Sprintf("open %.0f t/s", r.OpenLoop.RatePerSec), r.OpenLoop.levelFigures)
	reportLevel(b, "open-", r.OpenLoop.levelFigures)
	b.ReportMetric(r.OpenLoop.RatePerSec, "open-rate-turns/s")
	for _, f := range r.Real {
		row(fmt.Sprintf("codex c=%d", f.Concurrency), f)
		p := fmt.Sprintf("real-c%d-", f.Concurrency)
		b.ReportMetric(f.DirectP50Ms, p+"direct-p50-ms")
		b.ReportMetric(f.HTTPP50Ms, p+"http-p50-ms")
		b.ReportMetric(f.AddedP50Ms, p+"added-p50-ms")
		b.ReportMetric(f.RatioP50, p+"ratio-p50")
	}
	b.ReportMetric(r.Max.DirectTurnsPerSec, "direct-max-turns/s")
	b.ReportMetric(r.Max.HTTPTurnsPerSec, "http-max-turns/s")
	b.Logf("maximum sustained: direct %.1f turns/s (at %d sessions), http %.1f turns/s (at %d sessions)",
		r.Max.DirectTurnsPerSec, r.Max.DirectConcurrency, r.Max.HTTPTurnsPerSec, r.Max.HTTPConcurrency)
	if p := r.Profile; p != nil {
		b.Logf("profiled HTTP loop: %d sessions, %d turns, %.1f turns/s, CPU ms/turn %.2f / %.2f / %.2f",
			p.Concurrency, p.Turns, p.TurnsPerSec, p.CPUPerTurn.Self, p.CPUPerTurn.APIServer, p.CPUPerTurn.Etcd)
	}
	b.Logf("CPU ms per turn (this process / kube-apiserver / etcd); without turns, per second: %.1f / %.1f / %.1f",
		r.IdleCPUPerSec.Self, r.IdleCPUPerSec.APIServer, r.IdleCPUPerSec.Etcd)
	for _, f := range r.Double {
		b.Logf("  double c=%-3d direct %5.2f / %5.2f / %5.2f   http %5.2f / %5.2f / %5.2f", f.Concurrency,
			f.DirectCPUPerTurn.Self, f.DirectCPUPerTurn.APIServer, f.DirectCPUPerTurn.Etcd,
			f.HTTPCPUPerTurn.Self, f.HTTPCPUPerTurn.APIServer, f.HTTPCPUPerTurn.Etcd)
	}
}

// reportLevel reports one level's figures under units prefixed with p.
func reportLevel(b *testing.B, p string, f levelFigures) {
	for _, m := range []struct {
		v    float64
		unit string
	}{
		{f.DirectP50Ms, "direct-p50-ms"}, {f.DirectP99Ms, "direct-p99-ms"},
		{f.HTTPP50Ms, "http-p50-ms"}, {f.HTTPP99Ms, "http-p99-ms"},
		{f.AddedP50Ms, "added-p50-ms"}, {f.AddedP99Ms, "added-p99-ms"},
		{f.DirectTurnsPerSec, "direct-turns/s"}, {f.TurnsPerSec, "http-turns/s"},
		{f.DirectCPUPerTurn.Self, "direct-cpu-ms/turn"}, {f.HTTPCPUPerTurn.Self, "http-cpu-ms/turn"},
	} {
		b.ReportMetric(m.v, p+m.unit)
	}
}
