package main

import (
	"fmt"
	"strings"
)

// goal is one of the benchmark goals as a figure of one benchmark result:
// the figure must be at most Max. Beside names figures of the same result
// printed next to it (a confidence interval, the load it was measured at).
// Page is the page, relative to docs/, with the method, the profile and,
// for a goal not met, the change that would meet it: the report links it,
// so a verdict never stands without its explanation.
type goal struct {
	Text      string
	Benchmark string
	Unit      string
	Max       float64
	Beside    []string
	Page      string
	// Section, when set, reads the benchmark only from that section: a
	// benchmark re-run beside another section's (the dispatcher's CPU per
	// turn beside the model gateway) is reported apart from its own.
	Section string
}

// The benchmarks the dispatcher's goals read.
const (
	dispatcherProcess = "BenchmarkDispatcherProcess"
	postgresSerial    = "BenchmarkTurnOverhead/postgres/serial"
	admissionSession  = "BenchmarkAdmission/AgentSession/existing=1000"
	admissionHarness  = "BenchmarkAdmission/AgentHarness/existing=1000"
	turnSelection     = "BenchmarkTurnSelection/visible=64/total=1000"
	// The gateway with the chart's RBAC (get only: the harness and its
	// Secret are read on every request); rbac=get-watch is beside it in its
	// section and on its page.
	modelGateway = "BenchmarkModelGateway/rbac=get"
)

// goals are the project's performance goals, in the report's order.
var goals = []goal{
	{Text: "dispatcher CPU per turn ≤ 2 ms: HTTP + engine, zero-latency app-server double, the dispatcher in its own process, 10 sessions at once",
		Benchmark: dispatcherProcess, Unit: "dispatcher-cpu-ms/turn", Max: 2, Page: "benchmarks/dispatcher.md"},
	{Text: "of which the HTTP layer (TLS, decoding, authn/z cache hit, SSE) ≤ 0.25 ms CPU per turn (CPU profile's attribution)",
		Benchmark: dispatcherProcess, Unit: "http-cpu-ms/turn", Max: 0.25, Page: "benchmarks/dispatcher.md"},
	{Text: "added latency p50 ≤ 0.3 ms, measured on each turn, open loop at a measured 50 % utilisation (95 % CI beside)",
		Benchmark: dispatcherProcess, Unit: "paired-added-p50-ms", Max: 0.3,
		Beside: []string{"paired-added-p50-ci-low-ms", "paired-added-p50-ci-ms", "open-utilisation"}, Page: "benchmarks/dispatcher.md"},
	{Text: "added latency p99 ≤ 2 ms, same run (95 % CI beside)",
		Benchmark: dispatcherProcess, Unit: "paired-added-p99-ms", Max: 2,
		Beside: []string{"paired-added-p99-ci-low-ms", "paired-added-p99-ci-ms"}, Page: "benchmarks/dispatcher.md"},
	{Text: "dispatcher CPU per turn with 1,000 AgentHarnesses and 1,000 RuntimePolicies (64 visible, 10 selecting) ÷ with only those 64 and 10 ≤ 1.1",
		Benchmark: dispatcherProcess, Unit: "size-cpu-ratio", Max: 1.1, Page: "benchmarks/dispatcher.md"},
	{Text: "model gateway: added latency per model request p50 ≤ 1 ms, timestamps inside the gateway, the gateway in its own process with the chart's RBAC (95 % CI and p99 beside)",
		Benchmark: modelGateway, Unit: "added-p50-ms", Max: 1,
		Beside: []string{"added-p50-ci-low-ms", "added-p50-ci-ms", "added-p99-ms"}, Page: "benchmarks/gateway.md"},
	{Text: "model gateway: CPU per model request ≤ 0.5 ms (the gateway's process; the API server's beside)",
		Benchmark: modelGateway, Unit: "gateway-cpu-ms/request", Max: 0.5, Beside: []string{"apiserver-cpu-ms/request"}, Page: "benchmarks/gateway.md"},
	{Text: "model gateway: time to first token through the gateway − direct, p50 of paired requests ≤ 1 ms (95 % bootstrap CI and the spread of its blocks beside)",
		Benchmark: modelGateway, Unit: "ttft-diff-p50-ms", Max: 1,
		Beside: []string{"ttft-diff-p50-ci-low-ms", "ttft-diff-p50-ci-ms", "ttft-diff-p50-block-spread-ms"}, Page: "benchmarks/gateway.md"},
	{Text: "dispatcher CPU per turn ≤ 2 ms, re-measured beside the model gateway (the campaign measured 4.47 ms)",
		Section: "gateway", Benchmark: dispatcherProcess, Unit: "dispatcher-cpu-ms/turn", Max: 2, Page: "benchmarks/gateway.md"},
	{Text: "API writes per turn shorter than the activeTurn delay ≤ 1",
		Benchmark: "BenchmarkTurnStatusWrites", Unit: "api-writes/turn", Max: 1, Page: "benchmarks/dispatcher.md"},
	{Text: "fsyncs per turn, file journal ≤ 4 (a session's later turns; its first also creates its files: `BenchmarkTurnFsyncs/new-session`)",
		Benchmark: "BenchmarkTurnFsyncs/same-session", Unit: "fsyncs/turn", Max: 4, Page: "dispatcher-store.md"},
	{Text: "PostgreSQL: ≤ 5 ms per serial turn",
		Benchmark: postgresSerial, Unit: "µs/turn", Max: 5000, Page: "dispatcher-store.md"},
	{Text: "PostgreSQL: ≤ 15 round trips per turn",
		Benchmark: postgresSerial, Unit: "round-trips/turn", Max: 15, Page: "dispatcher-store.md"},
	{Text: "`Select` with 64 harnesses ≤ 5 µs (instructions/op beside: the figure to compare on a noisy machine)",
		Benchmark: "BenchmarkSelect", Unit: "ns/op", Max: 5000, Beside: []string{"instr/op"}, Page: "benchmarks/selection.md"},
	{Text: "`Select` with 64 harnesses ≤ 8 allocations",
		Benchmark: "BenchmarkSelect", Unit: "allocs/op", Max: 8, Page: "benchmarks/selection.md"},
	{Text: "a turn's whole selection, 64 visible of 1,000 harnesses ≤ 20 µs",
		Benchmark: turnSelection, Unit: "ns/op", Max: 20_000, Page: "benchmarks/selection.md"},
	{Text: "admission handler p99 ≤ 2 ms, AgentSession creates, 1,000 policies and harnesses exist",
		Benchmark: admissionSession, Unit: "handler-p99-ms", Max: 2, Beside: []string{"paced-handler-p99-ms", "paced-machine-utilisation"}, Page: "benchmarks/admission.md"},
	{Text: "admission handler p99 ≤ 5 ms, AgentHarness creates, 1,000 policies and harnesses exist",
		Benchmark: admissionHarness, Unit: "handler-p99-ms", Max: 5, Beside: []string{"paced-handler-p99-ms", "paced-machine-utilisation"}, Page: "benchmarks/admission.md"},
	{Text: "admission webhook p99 ≤ 10 ms at ≤ 50 % utilisation, AgentSession creates",
		Benchmark: admissionSession, Unit: "paced-webhook-span-p99-ms", Max: 10, Beside: []string{"paced-webhook-p99-ms", "paced-machine-utilisation", "paced-background-utilisation"}, Page: "benchmarks/admission.md"},
	{Text: "admission webhook p99 ≤ 10 ms at ≤ 50 % utilisation, AgentHarness creates",
		Benchmark: admissionHarness, Unit: "paced-webhook-span-p99-ms", Max: 10, Beside: []string{"paced-webhook-p99-ms", "paced-machine-utilisation", "paced-background-utilisation"}, Page: "benchmarks/admission.md"},
	scaleGoal("a policy change's fan-out: API-server CPU per affected session ÷ a plain write ≤ 1.1 (1,000 sessions)", 1000, "fanout-apiserver-cpu-ratio", 1.1),
	scaleGoal("a policy change's fan-out: operator CPU per affected session ÷ a plain write ≤ 0.25 (1,000 sessions)", 1000, "fanout-operator-cpu-ratio", 0.25),
	scaleGoal("manager RSS ≤ 100 MiB at 10,000 sessions (peak)", 10000, "manager-peak-MiB", 100),
}

// evaluate returns the measured figure (with the figures beside it) and
// whether the goal holds.
func (g goal) evaluate(sections []section) (figure, met string) {
	in := sections
	if g.Section != "" {
		in = nil
		for _, s := range sections {
			if s.Name == g.Section {
				in = append(in, s)
			}
		}
	}
	r, ok := find(in, g.Benchmark)
	if !ok {
		return "not measured", "—"
	}
	v, ok := r.value(g.Unit)
	if !ok {
		return "not reported", "—"
	}
	figure = formatValue(v)
	var beside []string
	for _, unit := range g.Beside {
		if w, ok := r.value(unit); ok {
			beside = append(beside, formatValue(w)+" "+unit)
		}
	}
	if len(beside) > 0 {
		figure += " (" + strings.Join(beside, " · ") + ")"
	}
	if v <= g.Max {
		return figure, "yes"
	}
	return figure, fmt.Sprintf("**no** (goal ≤ %s)", formatValue(g.Max))
}

// scaleGoal is a goal on BenchmarkOperatorScale at one size.
func scaleGoal(text string, sessions int, unit string, maxValue float64) goal {
	return goal{Text: text, Benchmark: fmt.Sprintf("BenchmarkOperatorScale/sessions=%d", sessions), Unit: unit, Max: maxValue,
		Page: "benchmarks/operator-scale.md"}
}
