package httpapi_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/dispatcher/engine"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
)

const concurrencyUsage = "KUBEBUILDER_ASSETS=... CODEX_BIN=$(hack/setup-codex.sh) go test -run '^$' " +
	"-bench BenchmarkDispatcherConcurrency -benchtime 1x -timeout 30m ./internal/dispatcher/httpapi/ (make bench-dispatcher)"

var (
	// doubleLevels are the concurrent sessions of the closed loop on the
	// double; realLevels on the real Codex.
	doubleLevels = []int{1, 10, 50, 100, 200}
	realLevels   = []int{1, 10}
)

const (
	// openSessions and openTurns are the open loop's sessions and timed
	// turns per arm.
	openSessions = 100
	openTurns    = 400
)

// perBlock is how many turns each of c sessions runs in one of an arm's two
// closed-loop blocks: at least 200 turns per arm and level on the double
// (at least 4 per session), at least 40 on the real Codex (at least 10 per
// session).
func perBlock(c int, real bool) int {
	atLeast, perSession := 200, 4
	if real {
		atLeast, perSession = 40, 10
	}
	turns := max(atLeast, perSession*c)
	return (turns + 2*c - 1) / (2 * c)
}

// BenchmarkDispatcherConcurrency measures what the dispatcher's API adds to
// a turn as concurrent sessions grow (docs/benchmarks/dispatcher.md): the
// same turns through HTTPS + SSE + authn/z + journal vs. a direct engine
// call, at 1, 10, 50, 100 and 200 concurrent sessions; once against a
// zero-latency app-server double and once against real Codex + the stub
// model.
//
// One run has the dispatcher benchmarks' setup (startBenchEnv: envtest's
// kube-apiserver and etcd, the real agentharness controller, a real `codex
// app-server` with the stub model as the harness of namespace benchNS, a
// gateway ServiceAccount) plus internal/testutil/appserverdouble as the harness of
// doubleNS (startDouble), one file journal in a temporary directory, and
// one arm (newArm): one engine.Engine reading through the informer cache
// (Secrets from the API server) and writing status to the API server, and
// its Handler. Both arms use that same engine, store and app-servers:
//
//   - direct: Engine.Turn in this process — the session's read, the
//     session lease, selection and placement, the journal (the run's
//     begin, every event, its end, fsynced as always), the transcript
//     mirror, the two status applies of every turn (activeTurn, then the
//     turn's end) to the kube-apiserver, the pooled WebSocket to the
//     app-server and its JSON-RPC — timed from the call to the `result`
//     event reaching the Sink;
//   - http: all of that, plus a POST …/turns over TLS (HTTP/1.1,
//     kept-alive connections) with the gateway's real ServiceAccount
//     token — TokenReview and SubjectAccessReview at the kube-apiserver,
//     through the Handler's verdict cache (10 s), so a review every 10 s
//     per session — the body's decoding, the run's events read back from
//     the journal and written as SSE, and the client's reading of them —
//     timed from before the POST to the `result` event read by the client.
//
// After each timed turn (untimed) the stream or Turn runs to the run's
// end; a session's next turn then waits in Start for the session's lease
// if the engine has not released it yet, as a gateway's next turn does.
// Each arm has its own sessions (200 on the double, 10 on Codex), each
// warmed up by one untimed turn (its thread, its first verdict); a level of
// c uses the first c.
//
// Closed loop: c sessions at once, each running its turns back to back;
// each arm runs two blocks, in the order direct, http, http, direct (a
// drift in the machine's load hits both alike); perBlock says how many
// turns. Throughput is an arm's turns over the wall time of its blocks
// (each block's ramp-up and tail included). Added latency is the difference
// of the arms' percentiles (http p50 − direct p50, and the same at p99):
// the arms' turns are not paired. The maximum sustained turns/s of an arm
// is its highest closed-loop throughput on the double, over the levels.
// Open loop: Poisson arrivals at half the direct arm's maximum turns/s in
// all, alternately to each arm (both arms at once, under the same load,
// each on its own openSessions sessions in turn), openTurns per arm (goal,
// reported and never asserted: added p50 ≤ 0.5 ms, p99 ≤ 2 ms). On the real Codex: the closed
// loop at 1 and 10 sessions and the ratio http p50 / direct p50 (goal
// ≤ 1.02).
//
// CPU by process (benchcpu_test.go: this process — engine, Handler, the
// client and the double —, kube-apiserver, etcd) is measured over each
// arm's blocks, and for idleWindow without turns before the first level
// (what does not grow with the turns). When the environment variable BENCH_OUT names a directory,
// an HTTP closed loop at the level of the HTTP arm's maximum runs once more
// (profileBlocks blocks long) with Go's CPU profiler on and the allocation profile taken before and
// after (dispatcher-cpu.pprof, dispatcher-alloc-base.pprof,
// dispatcher-alloc.pprof: `go tool pprof -base` of the two is its
// allocations), and the figures are written to
// $BENCH_OUT/dispatcher-concurrency.json (concurrencyReport):
//
//	{"date": RFC 3339, "cpus": n, "idleCpuPerSec": {"selfMs", "kubeAPIServerMs", "etcdMs"},
//	 "double":   [level, …],      // doubleLevels, in order
//	 "realCodex": [level, …],     // realLevels
//	 "max": {"directTurnsPerSec", "directConcurrency", "httpTurnsPerSec", "httpConcurrency"},
//	 "openLoop": level + {"ratePerSec"},   // concurrency: openSessions per arm; rate: both arms'; CPU: both arms' average
//	 "profile": {"concurrency", "turns", "turnsPerSec", "cpuPerTurn"}}  // the profiled loop
//	level = {"concurrency", "turns" (per arm), "directP50Ms", "directP99Ms", "httpP50Ms",
//	         "httpP99Ms", "addedP50Ms", "addedP99Ms", "ratioP50" (http p50 / direct p50),
//	         "turnsPerSec" (the HTTP arm's), "directTurnsPerSec",
//	         "directCpuPerTurn", "httpCpuPerTurn": {"selfMs", "kubeAPIServerMs", "etcdMs"}}
//
// The benchmark's metrics (one line; units c<n>-… per double level,
// open-…, real-c<n>-…, direct-max-turns/s, http-max-turns/s) are the same
// figures. Run it with -benchtime 1x (make bench-dispatcher): one run takes
// minutes.
func BenchmarkDispatcherConcurrency(b *testing.B) {
	realTurns := 0
	for _, c := range realLevels {
		realTurns += 2 * 2 * c * perBlock(c, true) // two arms, two blocks each
	}
	env := startBenchEnv(b, realTurns+2*slices.Max(realLevels), concurrencyUsage)
	double := env.startDouble(b)
	jrnl, err := journal.Open(b.TempDir(), journal.Options{})
	benchMust(b, err)
	b.Cleanup(func() { _ = jrnl.Close() })
	arm := env.newArm(b, jrnl, engine.Options{})
	lt := loadTest{arm: arm, turns: [2]timedTurn{arm.directTurn, arm.httpTurn}}
	onDouble := lt.sessions(b, doubleNS, "d", slices.Max(doubleLevels))
	onCodex := lt.sessions(b, benchNS, "r", slices.Max(realLevels))
	rep := concurrencyReport{Date: time.Now().UTC().Format(time.RFC3339), CPUs: runtime.NumCPU(), IdleCPUPerSec: idleCPU()}
	b.ResetTimer()

	for _, c := range doubleLevels {
		rep.Double = append(rep.Double, lt.closed(b, onDouble, c, false))
	}
	rep.Max = maxThroughput(rep.Double)
	rep.OpenLoop = lt.open(b, onDouble, rep.Max.DirectTurnsPerSec/2)
	for _, c := range realLevels {
		rep.Real = append(rep.Real, lt.closed(b, onCodex, c, true))
	}
	b.StopTimer()
	if n := double.Turns(); n == 0 {
		b.Fatal("the double ran no turn: the double's sessions ran elsewhere")
	}
	if dir := os.Getenv("BENCH_OUT"); dir != "" {
		rep.Profile = lt.profile(b, dir, onDouble, rep.Max.HTTPConcurrency)
		benchMust(b, rep.write(dir))
	}
	rep.report(b)
}

// idleWindow is how long idleCPU watches the processes without turns.
const idleWindow = 5 * time.Second

// idleCPU is the CPU the processes use per second without turns (informers,
// controllers, lease renewals, the API server's own loops): a part of every
// level's CPU per turn that does not grow with the turns.
func idleCPU() cpuMs {
	before := sampleCPU()
	time.Sleep(idleWindow)
	return sampleCPU().minus(before).per(int(idleWindow / time.Second))
}

// loadTest is BenchmarkDispatcherConcurrency's arm and its two ways to run a
// turn.
type loadTest struct {
	arm   *benchArm
	turns [2]timedTurn // directArm, httpArm
}

// sessions creates n sessions per arm in ns (<prefix>d-<i> for the direct
// arm, <prefix>h-<i> for the HTTP arm) and warms each up with one untimed
// turn, all at once.
func (lt loadTest) sessions(b *testing.B, ns, prefix string, n int) [2][]benchSession {
	var out [2][]benchSession
	for a, name := range []string{prefix + "d", prefix + "h"} {
		for i := range n {
			out[a] = append(out[a], lt.arm.env.newSession(b, ns, fmt.Sprintf("%s-%03d", name, i)))
		}
		_, _, err := closedLoop(out[a], 1, "warm", lt.turns[a])
		benchMust(b, err)
	}
	return out
}

// closed runs the closed loop at c sessions per arm.
func (lt loadTest) closed(b *testing.B, sessions [2][]benchSession, c int, real bool) levelFigures {
	n := perBlock(c, real)
	got, err := sideBySide(func(arm, k int) ([]float64, time.Duration, error) {
		return closedLoop(sessions[arm][:c], n, fmt.Sprintf("c%d-%d", c, k), lt.turns[arm])
	})
	benchMust(b, err)
	return figures(c, got)
}

// open runs the open loop: openTurns turns per arm, both arms at once, at
// rate turns per second in all.
func (lt loadTest) open(b *testing.B, sessions [2][]benchSession, rate float64) openFigures {
	rng := rand.New(rand.NewPCG(18, 2)) // the same arrivals in every run
	only := [2][]benchSession{sessions[directArm][:openSessions], sessions[httpArm][:openSessions]}
	got, err := openLoop(only, lt.turns, 2*openTurns, rate, rng)
	benchMust(b, err)
	return openFigures{levelFigures: figures(openSessions, got), RatePerSec: rate}
}

// maxThroughput is each arm's highest closed-loop throughput and the level
// it was reached at.
func maxThroughput(levels []levelFigures) maxFigures {
	var m maxFigures
	for _, l := range levels {
		if l.DirectTurnsPerSec > m.DirectTurnsPerSec {
			m.DirectTurnsPerSec, m.DirectConcurrency = l.DirectTurnsPerSec, l.Concurrency
		}
		if l.TurnsPerSec > m.HTTPTurnsPerSec {
			m.HTTPTurnsPerSec, m.HTTPConcurrency = l.TurnsPerSec, l.Concurrency
		}
	}
	return m
}
