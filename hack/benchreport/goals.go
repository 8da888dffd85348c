package main

import "fmt"

// goal is one of issue 18's goals as a figure of one benchmark result: the
// figure must be at most Max.
type goal struct {
	Text      string
	Benchmark string
	Unit      string
	Max       float64
}

// goals are issue 18's, in its order.
var goals = []goal{
	{Text: "admission p99 ≤ 5 ms, 50 concurrent AgentSession creates (1,000 policies and harnesses exist)",
		Benchmark: "BenchmarkAdmission/AgentSession/existing=1000", Unit: "webhook-p99-ms", Max: 5},
	{Text: "admission p99 ≤ 5 ms, 50 concurrent AgentHarness creates (1,000 policies and harnesses exist)",
		Benchmark: "BenchmarkAdmission/AgentHarness/existing=1000", Unit: "webhook-p99-ms", Max: 5},
	{Text: "`BenchmarkSelect` ≤ 10 µs/op with 64 harnesses",
		Benchmark: "BenchmarkSelect", Unit: "ns/op", Max: 10_000},
}

// evaluate returns the measured figure and whether the goal holds.
func (g goal) evaluate(sections []section) (figure, met string) {
	r, ok := find(sections, g.Benchmark)
	if !ok {
		return "not measured", "—"
	}
	v, ok := r.value(g.Unit)
	if !ok {
		return "not reported", "—"
	}
	if v <= g.Max {
		return formatValue(v), "yes"
	}
	return formatValue(v), fmt.Sprintf("**no** (goal ≤ %s)", formatValue(g.Max))
}
