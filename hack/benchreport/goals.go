package main

import "fmt"

// goal is one of the benchmark goals as a figure of one benchmark result:
// the figure must be at most Max.
type goal struct {
	Text      string
	Benchmark string
	Unit      string
	Max       float64
}

// goals are the project's performance goals, in the report's order.
var goals = []goal{
	{Text: "added latency p50 ≤ 0.5 ms, 100 sessions, open loop at half the direct arm's maximum turns/s (zero-latency double)",
		Benchmark: "BenchmarkDispatcherConcurrency", Unit: "open-added-p50-ms", Max: 0.5},
	{Text: "added latency p99 ≤ 2 ms, same run",
		Benchmark: "BenchmarkDispatcherConcurrency", Unit: "open-added-p99-ms", Max: 2},
	{Text: "dispatched ÷ direct turn time ≤ 1.02 at p50, real Codex, 1 session",
		Benchmark: "BenchmarkDispatcherConcurrency", Unit: "real-c1-ratio-p50", Max: 1.02},
	{Text: "dispatched ÷ direct turn time ≤ 1.02 at p50, real Codex, 10 sessions",
		Benchmark: "BenchmarkDispatcherConcurrency", Unit: "real-c10-ratio-p50", Max: 1.02},
	scaleGoal("a policy change affecting 10 % of 1,000 sessions reaches their status within 1.2× the API-server floor", 1000, "change10-per-floor", 1.2),
	scaleGoal("a policy change affecting 100 % of 1,000 sessions, within 1.2× the floor", 1000, "change100-per-floor", 1.2),
	scaleGoal("10 % of 10,000 sessions, within 1.2× the floor", 10000, "change10-per-floor", 1.2),
	scaleGoal("100 % of 10,000 sessions, within 1.2× the floor", 10000, "change100-per-floor", 1.2),
	scaleGoal("0 writes to unaffected sessions (10,000)", 10000, "writes-to-unaffected", 0),
	scaleGoal("≤ 1 write per affected session per policy change (10,000)", 10000, "writes-per-affected", 1),
	scaleGoal("0 writes per session at rest (10,000)", 10000, "writes-at-rest-per-session", 0),
	scaleGoal("manager RSS ≤ 150 MiB at 10,000 sessions (peak)", 10000, "manager-peak-MiB", 150),
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

// scaleGoal is a goal on BenchmarkOperatorScale at one size.
func scaleGoal(text string, sessions int, unit string, maxValue float64) goal {
	return goal{Text: text, Benchmark: fmt.Sprintf("BenchmarkOperatorScale/sessions=%d", sessions), Unit: unit, Max: maxValue}
}
