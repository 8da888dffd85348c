package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sampleOutput = `# command: go test -run '^$' -bench Select ./internal/policy/selection/
# started: 2026-12-02T18:00:00Z
# seconds: 12.5
goos: linux
goarch: amd64
pkg: github.com/openclaw/harness-operator/internal/policy/selection
cpu: Intel(R) Xeon(R) CPU @ 2.20GHz
BenchmarkSelect-2          	  100000	      9500 ns/op	   12152 B/op	      24 allocs/op
BenchmarkSelectNonMatching/harnesses=16-2 	  50000	     20800 ns/op
BenchmarkAdmission/AgentSession/existing=1000-2 	1000	 1.5 webhook-p99-ms	 3.25 create-p99-ms
    bench_test.go:12: Benchmark logs are no results
BenchmarkAdmission/AgentHarness/existing=0-2         	[controller-runtime] log.SetLogger(...) was never called; logs will not be displayed.
	>  goroutine 515 [running]:
	>  runtime/debug.Stack()
    1000	   8421118 ns/op	       402.7 create-p50-ms
PASS
ok  	github.com/openclaw/harness-operator/internal/policy/selection	3.1s
`

func TestReadSection(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "selection.txt"), []byte(sampleOutput), 0o644); err != nil {
		t.Fatal(err)
	}
	sections, err := readSections(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := sections[0]
	if s.Name != "selection" || s.Seconds != 12.5 || s.Failed || s.CPU != "Intel(R) Xeon(R) CPU @ 2.20GHz" || len(s.Results) != 4 {
		t.Fatalf("section read as %+v", s)
	}
	r, ok := find(sections, "BenchmarkSelectNonMatching/harnesses=16")
	if v, _ := r.value("ns/op"); !ok || v != 20800 {
		t.Fatalf("the sub-benchmark without its -2 suffix: %+v", r)
	}
	if v, _ := sections[0].Results[2].value("create-p99-ms"); v != 3.25 {
		t.Fatalf("a custom metric: %+v", sections[0].Results[2])
	}
	if r, ok := find(sections, "BenchmarkAdmission/AgentHarness/existing=0"); !ok {
		t.Fatal("a result whose figures came on a line of their own, after another process's output, is missing")
	} else if v, _ := r.value("create-p50-ms"); v != 402.7 {
		t.Fatalf("a result whose figures came on a line of their own: %+v", r)
	}
}

func TestGoalVerdicts(t *testing.T) {
	sections := []section{{Results: []result{
		{Name: "BenchmarkSelect", Metrics: []metric{{9500, "ns/op"}}},
		{Name: "BenchmarkAdmission/AgentSession/existing=1000", Metrics: []metric{{7.5, "webhook-p99-ms"}}},
	}}}
	for _, tc := range []struct {
		goal         goal
		fig, verdict string
	}{
		{goal{Benchmark: "BenchmarkSelect", Unit: "ns/op", Max: 10_000}, "9500", "yes"},
		{goal{Benchmark: "BenchmarkAdmission/AgentSession/existing=1000", Unit: "webhook-p99-ms", Max: 5}, "7.50", "**no** (goal ≤ 5)"},
		{goal{Benchmark: "BenchmarkSelect", Unit: "B/op", Max: 1}, "not reported", "—"},
		{goal{Benchmark: "BenchmarkAbsent", Unit: "ns/op", Max: 1}, "not measured", "—"},
	} {
		fig, verdict := tc.goal.evaluate(sections)
		if fig != tc.fig || verdict != tc.verdict {
			t.Errorf("%s %s: %q %q, want %q %q", tc.goal.Benchmark, tc.goal.Unit, fig, verdict, tc.fig, tc.verdict)
		}
	}
}

// TestRunWritesReportAndPlots: a bench directory with a section and a
// series file becomes benchmarks.md and PNG plots.
func TestRunWritesReportAndPlots(t *testing.T) {
	in, docs := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(in, "selection.txt"), []byte(sampleOutput), 0o644); err != nil {
		t.Fatal(err)
	}
	series := `[{"sessions":1000,"change100Seconds":12,"floor100Seconds":11,"managerRSSMiB":60},{"sessions":10000,"change100Seconds":120,"floor100Seconds":110,"managerRSSMiB":140}]`
	if err := os.WriteFile(filepath.Join(in, "operator-scale.json"), []byte(series), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(in, docs); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(docs, "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| `BenchmarkSelect` | 9500 ns/op · 12152 B/op · 24 allocs/op |", "![policy-fanout](benchmarks/policy-fanout.png)", "with 64 harnesses ≤ 5 µs (instructions/op beside: the figure to compare on a noisy machine) | `BenchmarkSelect` ns/op | 9500 | **no** (goal ≤ 5000) |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("benchmarks.md lacks %q:\n%s", want, md)
		}
	}
	png, err := os.ReadFile(filepath.Join(docs, "benchmarks", "operator-rss.png"))
	if err != nil || !strings.HasPrefix(string(png), "\x89PNG") {
		t.Fatalf("operator-rss.png: %v, %d bytes", err, len(png))
	}
}

// TestGoalShowsFiguresBesideAndMergesLinesOfOneBenchmark: a goal's figure
// comes with the figures it names beside it, from any line of the same
// benchmark (an instruction count from hack/bench-instructions.sh is a line
// of its own), and the first line's figure wins where a unit repeats.
func TestGoalShowsFiguresBesideAndMergesLinesOfOneBenchmark(t *testing.T) {
	sections := []section{
		{Results: []result{{Name: "BenchmarkSelect", Metrics: []metric{{4200, "ns/op"}, {6, "allocs/op"}}}}},
		{Results: []result{{Name: "BenchmarkSelect", Metrics: []metric{{61234, "instr/op"}, {9999, "ns/op"}}}}},
		{Results: []result{{Name: "BenchmarkDispatcherProcess", Metrics: []metric{
			{0.25, "paired-added-p50-ms"}, {0.2, "paired-added-p50-ci-low-ms"}, {0.3, "paired-added-p50-ci-ms"}, {0.49, "open-utilisation"}}}}},
	}
	for _, tc := range []struct {
		goal         goal
		fig, verdict string
	}{
		{goal{Benchmark: "BenchmarkSelect", Unit: "ns/op", Max: 5000, Beside: []string{"instr/op"}}, "4200 (61234 instr/op)", "yes"},
		{goal{Benchmark: "BenchmarkSelect", Unit: "allocs/op", Max: 8, Beside: []string{"absent/op"}}, "6", "yes"},
		{goal{Benchmark: "BenchmarkDispatcherProcess", Unit: "paired-added-p50-ms", Max: 0.3,
			Beside: []string{"paired-added-p50-ci-low-ms", "paired-added-p50-ci-ms", "open-utilisation"}},
			"0.25 (0.2 paired-added-p50-ci-low-ms · 0.3 paired-added-p50-ci-ms · 0.49 open-utilisation)", "yes"},
	} {
		fig, verdict := tc.goal.evaluate(sections)
		if fig != tc.fig || verdict != tc.verdict {
			t.Errorf("%s %s: %q %q, want %q %q", tc.goal.Benchmark, tc.goal.Unit, fig, verdict, tc.fig, tc.verdict)
		}
	}
}

// TestEveryGoalOfTheTableIsReadFromItsBenchmark: the goals name the
// benchmarks and units the table of goals is measured by, each once.
func TestEveryGoalOfTheTableIsReadFromItsBenchmark(t *testing.T) {
	want := map[string]float64{
		"BenchmarkDispatcherProcess dispatcher-cpu-ms/turn":                       2,
		"BenchmarkDispatcherProcess http-cpu-ms/turn":                             0.25,
		"BenchmarkDispatcherProcess paired-added-p50-ms":                          0.3,
		"BenchmarkDispatcherProcess paired-added-p99-ms":                          2,
		"BenchmarkDispatcherProcess size-cpu-ratio":                               1.1,
		"BenchmarkModelGateway/rbac=get added-p50-ms":                             1,
		"BenchmarkModelGateway/rbac=get gateway-cpu-ms/request":                   0.5,
		"BenchmarkModelGateway/rbac=get ttft-diff-p50-ms":                         1,
		"gateway: BenchmarkDispatcherProcess dispatcher-cpu-ms/turn":              2,
		"BenchmarkTurnStatusWrites api-writes/turn":                               1,
		"BenchmarkTurnFsyncs/same-session fsyncs/turn":                            4,
		"BenchmarkTurnOverhead/postgres/serial µs/turn":                           5000,
		"BenchmarkTurnOverhead/postgres/serial round-trips/turn":                  15,
		"BenchmarkSelect ns/op":                                                   5000,
		"BenchmarkSelect allocs/op":                                               8,
		"BenchmarkTurnSelection/visible=64/total=1000 ns/op":                      20000,
		"BenchmarkAdmission/AgentSession/existing=1000 handler-p99-ms":            2,
		"BenchmarkAdmission/AgentHarness/existing=1000 handler-p99-ms":            5,
		"BenchmarkAdmission/AgentSession/existing=1000 paced-webhook-span-p99-ms": 10,
		"BenchmarkAdmission/AgentHarness/existing=1000 paced-webhook-span-p99-ms": 10,
		"BenchmarkOperatorScale/sessions=1000 fanout-apiserver-cpu-ratio":         1.1,
		"BenchmarkOperatorScale/sessions=1000 fanout-operator-cpu-ratio":          0.25,
		"BenchmarkOperatorScale/sessions=10000 manager-peak-MiB":                  100,
	}
	got := map[string]float64{}
	for _, g := range goals {
		key := g.Benchmark + " " + g.Unit
		if g.Section != "" {
			key = g.Section + ": " + key
		}
		if _, dup := got[key]; dup {
			t.Errorf("two goals on %s", key)
		}
		got[key] = g.Max
	}
	for key, max := range want {
		if v, ok := got[key]; !ok || v != max {
			t.Errorf("goal %s: max %v (present %v), want %v", key, v, ok, max)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d goals, want %d", len(got), len(want))
	}
}

// TestEveryGoalLinksAPageThatExists: a verdict in docs/benchmarks.md links
// the page that explains it, and the link resolves.
func TestEveryGoalLinksAPageThatExists(t *testing.T) {
	for _, g := range goals {
		if g.Page == "" {
			t.Errorf("goal %q links no page", g.Text)
			continue
		}
		if _, err := os.Stat(filepath.Join("..", "..", "docs", g.Page)); err != nil {
			t.Errorf("goal %q links %s: %v", g.Text, g.Page, err)
		}
	}
}

// TestDispatcherProcessPlots: dispatcher-process.json becomes the plots of
// CPU per turn against concurrency and against the cluster's size.
func TestDispatcherProcessPlots(t *testing.T) {
	in := t.TempDir()
	series := `{"levels":[{"concurrency":1,"dispatcherCpuMsPerTurn":4,"othersCpuMsPerTurn":{"kubeAPIServerMs":18}},
	  {"concurrency":10,"dispatcherCpuMsPerTurn":3,"othersCpuMsPerTurn":{"kubeAPIServerMs":16}}],
	 "size":[{"harnesses":64,"policies":10,"dispatcherCpuMsPerTurn":3},{"harnesses":1000,"policies":1000,"dispatcherCpuMsPerTurn":3.3}]}`
	if err := os.WriteFile(filepath.Join(in, "dispatcher-process.json"), []byte(series), 0o644); err != nil {
		t.Fatal(err)
	}
	charts, err := processCharts(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(charts) != 2 || charts[0].file != "dispatcher-cpu-concurrency.png" || charts[1].file != "dispatcher-cpu-size.png" {
		t.Fatalf("charts %+v", charts)
	}
	if p := charts[1].chart.Series[0].Points; len(p) != 2 || p[1].X != 1000 || p[1].Y != 3.3 {
		t.Fatalf("CPU per turn against the cluster's size: %+v", p)
	}
	if p := charts[0].chart.Series[1].Points; len(p) != 2 || p[0].X != 1 || p[0].Y != 18 {
		t.Fatalf("the API server's CPU per turn against concurrency: %+v", p)
	}
	docs := t.TempDir()
	if err := os.WriteFile(filepath.Join(in, "selection.txt"), []byte(sampleOutput), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(in, docs); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(docs, "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range charts {
		if !strings.Contains(string(md), "(benchmarks/"+c.file+")") {
			t.Errorf("benchmarks.md does not show %s", c.file)
		}
		if png, err := os.ReadFile(filepath.Join(docs, "benchmarks", c.file)); err != nil || !strings.HasPrefix(string(png), "\x89PNG") {
			t.Errorf("%s: %v, %d bytes", c.file, err, len(png))
		}
	}
}

// TestGoalOfOneSection: a benchmark re-run in another section (the
// dispatcher's, beside the model gateway) is read from that section alone,
// and the unrestricted goal keeps the first section's figure.
func TestGoalOfOneSection(t *testing.T) {
	sections := []section{
		{Name: "dispatcher", Results: []result{{Name: "BenchmarkDispatcherProcess", Metrics: []metric{{3.5, "dispatcher-cpu-ms/turn"}}}}},
		{Name: "gateway", Results: []result{
			{Name: "BenchmarkModelGateway", Metrics: []metric{{0.25, "added-p50-ms"}}},
			{Name: "BenchmarkDispatcherProcess", Metrics: []metric{{4.1, "dispatcher-cpu-ms/turn"}}},
		}},
	}
	for _, tc := range []struct {
		goal         goal
		fig, verdict string
	}{
		{goal{Benchmark: "BenchmarkDispatcherProcess", Unit: "dispatcher-cpu-ms/turn", Max: 2}, "3.50", "**no** (goal ≤ 2)"},
		{goal{Section: "gateway", Benchmark: "BenchmarkDispatcherProcess", Unit: "dispatcher-cpu-ms/turn", Max: 2}, "4.10", "**no** (goal ≤ 2)"},
		{goal{Section: "absent", Benchmark: "BenchmarkDispatcherProcess", Unit: "dispatcher-cpu-ms/turn", Max: 2}, "not measured", "—"},
		{goal{Section: "gateway", Benchmark: "BenchmarkModelGateway", Unit: "added-p50-ms", Max: 1}, "0.25", "yes"},
	} {
		fig, verdict := tc.goal.evaluate(sections)
		if fig != tc.fig || verdict != tc.verdict {
			t.Errorf("%s %s %s: %q %q, want %q %q", tc.goal.Section, tc.goal.Benchmark, tc.goal.Unit, fig, verdict, tc.fig, tc.verdict)
		}
	}
}
