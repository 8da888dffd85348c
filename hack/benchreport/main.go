// Command benchreport writes docs/benchmarks.md and its plots from what
// `make bench` (hack/bench.sh) measured: each section's `go test -bench`
// output (<name>.txt) and the series some benchmarks write as JSON when
// BENCH_OUT is set. It measures nothing itself.
//
//	go run ./hack/benchreport -in "$BENCH_OUT" -docs docs
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

func main() {
	in := flag.String("in", "", "the directory hack/bench.sh wrote (required)")
	docs := flag.String("docs", "docs", "where benchmarks.md goes; plots go to its benchmarks/")
	flag.Parse()
	if *in == "" {
		fmt.Fprintln(os.Stderr, "benchreport: -in is required")
		os.Exit(2)
	}
	if err := run(*in, *docs); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

func run(in, docs string) error {
	sections, err := readSections(in)
	if err != nil {
		return err
	}
	if len(sections) == 0 {
		return fmt.Errorf("no <name>.txt in %s", in)
	}
	charts, err := loadCharts(in)
	if err != nil {
		return err
	}
	plotDir := filepath.Join(docs, "benchmarks")
	if err := os.MkdirAll(plotDir, 0o755); err != nil {
		return err
	}
	var images []string
	for _, c := range charts {
		if err := c.chart.save(filepath.Join(plotDir, c.file)); err != nil {
			return err
		}
		images = append(images, c.file)
	}
	var b strings.Builder
	writeReport(&b, sections, images)
	return os.WriteFile(filepath.Join(docs, "benchmarks.md"), []byte(b.String()), 0o644)
}

// writeReport writes the Markdown: the machine, the goals with their
// figures, the plots, then every section's results and command.
func writeReport(b *strings.Builder, sections []section, images []string) {
	fmt.Fprintf(b, "# Benchmarks\n\n")
	fmt.Fprintf(b, "Written by `make bench` (hack/bench.sh, then hack/benchreport); do not edit by hand —\n")
	fmt.Fprintf(b, "the method, profiles and history of each area are in the pages under [benchmarks/](benchmarks/).\n")
	fmt.Fprintf(b, "Every figure below is measured side by side in one run (a ratio or a difference\n")
	fmt.Fprintf(b, "between arms, or a count), so a noisy machine cannot fake it.\n\n")
	var total float64
	for _, s := range sections {
		total += s.Seconds
	}
	fmt.Fprintf(b, "- machine: %s, %d cores (GOMAXPROCS), %s/%s, %s\n", firstCPU(sections), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Fprintf(b, "- date: %s; `make bench` ran %s in all\n\n", sections[0].Started, (time.Duration(total) * time.Second).String())

	fmt.Fprintf(b, "## Goals\n\nEach goal links the page with its method, its profile and, where it is not met,\nthe change that would meet it.\n\n")
	fmt.Fprintf(b, "| goal | figure | measured | met | explained |\n|---|---|---|---|---|\n")
	for _, g := range goals {
		fig, met := g.evaluate(sections)
		fmt.Fprintf(b, "| %s | `%s` %s | %s | %s | [%s](%s) |\n", g.Text, g.Benchmark, g.Unit, fig, met, g.Page, g.Page)
	}
	if len(images) > 0 {
		fmt.Fprintf(b, "\n## Plots\n\n")
		for _, img := range images {
			fmt.Fprintf(b, "![%s](benchmarks/%s)\n\n", strings.TrimSuffix(img, ".png"), img)
		}
	}
	for _, s := range sections {
		status := ""
		if s.Failed {
			status = " — **the command failed** (its output has the reason)"
		}
		fmt.Fprintf(b, "\n## %s%s\n\n`%s` — %.0f s\n\n| benchmark | figures |\n|---|---|\n", s.Name, status, s.Command, s.Seconds)
		for _, r := range s.Results {
			var figs []string
			for _, m := range r.Metrics {
				figs = append(figs, fmt.Sprintf("%s %s", formatValue(m.Value), m.Unit))
			}
			fmt.Fprintf(b, "| `%s` | %s |\n", r.Name, strings.Join(figs, " · "))
		}
	}
}

func firstCPU(sections []section) string {
	for _, s := range sections {
		if s.CPU != "" {
			return s.CPU
		}
	}
	return "unknown CPU"
}

// formatValue prints a figure with the precision it carries.
func formatValue(v float64) string {
	switch {
	case v == float64(int64(v)):
		return fmt.Sprintf("%d", int64(v))
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3g", v)
}
