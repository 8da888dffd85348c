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
	for _, want := range []string{"| `BenchmarkSelect` | 9500 ns/op · 12152 B/op · 24 allocs/op |", "![policy-fanout](benchmarks/policy-fanout.png)", "≤ 10 µs/op with 64 harnesses | `BenchmarkSelect` ns/op | 9500 | yes |"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("benchmarks.md lacks %q:\n%s", want, md)
		}
	}
	png, err := os.ReadFile(filepath.Join(docs, "benchmarks", "operator-rss.png"))
	if err != nil || !strings.HasPrefix(string(png), "\x89PNG") {
		t.Fatalf("operator-rss.png: %v, %d bytes", err, len(png))
	}
}
