package httpapi_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/dispatcher/engine"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
	"github.com/openclaw/harness-operator/internal/testutil"
)

const processUsage = "KUBEBUILDER_ASSETS=... go test -run '^$' -bench 'BenchmarkDispatcherProcess$' -benchtime 1x " +
	"-timeout 30m ./internal/dispatcher/httpapi/ (make bench-dispatcher; -short for a quick run at small sizes)"

// processSizes are BenchmarkDispatcherProcess's loads; -short makes them
// small (a check that the benchmark works, not a measurement).
type processSizes struct {
	levels       []int // concurrent sessions of the closed loops
	headline     int   // the level of dispatcher-cpu-ms/turn
	levelTurns   int   // turns per level at least (4 per session at least)
	calibrate    int   // turns of each open loop that looks for the rate
	openTurns    int   // turns of the open loop at the rate found
	sizeTurns    int   // turns of each cluster size's closed loop
	profileTurns int   // turns of the profiled in-process HTTP loop
	// profileSeconds is how long the dispatcher process is profiled at each
	// cluster size (only with BENCH_OUT, where the profiles go).
	profileSeconds int
}

func processSizesFor() processSizes {
	if testing.Short() {
		return processSizes{levels: []int{1, 10}, headline: 10, levelTurns: 40, calibrate: 60, openTurns: 150,
			sizeTurns: 60, profileTurns: 60, profileSeconds: 2}
	}
	return processSizes{levels: []int{1, 10, 50}, headline: 10, levelTurns: 300, calibrate: 300, openTurns: 1500,
		sizeTurns: 400, profileTurns: 1500, profileSeconds: 10}
}

// The cluster of the size ratio: visibleHarnesses AgentHarnesses in the
// sessions' namespace and selectingPolicies RuntimePolicies selecting it;
// then as many more, elsewhere, as make allHarnesses and allPolicies.
const (
	visibleHarnesses  = 64
	selectingPolicies = 10
	allHarnesses      = 1000
	allPolicies       = 1000
)

// Utilisation the open loop aims at, and how far from it it may land.
const (
	targetUtilisation    = 0.50
	utilisationTolerance = 0.05
	openTries            = 4
)

// BenchmarkDispatcherProcess measures the dispatcher as it is deployed: the
// real cmd/dispatcher binary in its own process (file journal, leader
// election off, its logs to a file), its CPU read from /proc/<pid>, in front
// of internal/testutil/appserverdouble (a zero-latency `codex app-server`
// double, in this process) on envtest's kube-apiserver and etcd, with the
// real agentharness controller (in this process) keeping the harnesses
// Ready. Turns are POSTed over HTTPS with a ServiceAccount token (TokenReview
// and SubjectAccessReview through the verdict cache) and their streams read
// to the end, as a gateway does. docs/benchmarks/dispatcher.md has the
// method and the results.
//
// The cluster has visibleHarnesses AgentHarnesses in the sessions' namespace
// (the double's and 63 more at the same URL, all Ready) and
// selectingPolicies RuntimePolicies selecting it. Phases, in order:
//
//  1. Closed loops at each level of concurrent sessions: the dispatcher's
//     CPU per turn (dispatcher-cpu-ms/turn at the headline level, c<n>-… at
//     each), and the API server's, etcd's and this process's as context.
//  2. The open loop: Poisson arrivals at the rate whose measured utilisation
//     is targetUtilisation ± utilisationTolerance. Utilisation is the CPU of
//     every process of the benchmark (the dispatcher, kube-apiserver, etcd,
//     this process: the double, the client, the controller) over the loop's
//     wall time and the machine's cores: the first rate comes from phase 1's
//     CPU per turn, each next try scales it by target ÷ measured (at most
//     ×2 or ×½), never above 0.9 × the highest closed-loop turns/s. The
//     machine's own utilisation (/proc/stat, other work included) is
//     reported beside it. Each turn's added latency is measured by the
//     dispatcher on the turn itself (harness_dispatcher_http_turn_added_seconds,
//     read from its /metrics before and after the loop): the HTTP layer's
//     time before the engine starts the turn, the stream's headers, and the
//     result event's way from its append to the store to its flush. Its
//     p50 and p99 are the upper bounds of the histogram buckets holding
//     those ranks, and their 95 % confidence intervals the buckets of the
//     order statistics that bound the quantile (binomial, normal
//     approximation): paired-added-p50-ms, -p99-ms, -ci-ms (the interval's
//     upper end), -ci-low-ms, open-utilisation; the same turns' time by
//     window (harness_dispatcher_http_turn_window_seconds): paired-added-
//     request-, -headers- and -result-p50-ms and -p99-ms. With BENCH_OUT set
//     each loop also takes a Go execution trace of the dispatcher
//     (dispatcherProcess.trace): where its goroutines waited.
//  3. The cluster size: a closed loop at the headline level with only those
//     harnesses and policies, then allHarnesses and allPolicies in all (the
//     others in namespaces and with selectors the sessions do not have;
//     untimed turns once the informers hold them), the same loop again:
//     size-cpu-ratio is the dispatcher's CPU per turn of the second ÷ the
//     first.
//  4. The HTTP layer's CPU: one Handler and engine in this process on the
//     same double, an HTTP closed loop at the headline level with Go's CPU
//     profiler on; http-cpu-ms/turn is the CPU of the samples under the HTTP
//     server's connection goroutines (net/http's conn.serve: TLS, the
//     request, authn/z, decoding, the SSE stream) less those in the engine's
//     calls and in reading the run's file, per turn (httpProfileShare).
//     Background GC is not attributed.
//
// With BENCH_OUT set the figures are also written to
// $BENCH_OUT/dispatcher-process.json (processReport) and the profile to
// dispatcher-http-cpu.pprof.
func BenchmarkDispatcherProcess(b *testing.B) {
	sizes := processSizesFor()
	env := startControlPlane(b, processUsage)
	double := env.startDouble(b)
	env.addVisibleClutter(b, double.URL)
	proc := env.startDispatcherProcess(b)
	arm := &benchArm{env: env, url: proc.base, client: proc.client}
	sessions := make([]benchSession, slicesMax(sizes.levels))
	for i := range sessions {
		sessions[i] = env.newSession(b, doubleNS, fmt.Sprintf("p-%03d", i))
	}
	benchMust(b, warmUp(arm, sessions))
	rep := processReport{Date: time.Now().UTC().Format(time.RFC3339), CPUs: runtime.NumCPU()}
	b.ResetTimer()

	for _, c := range sizes.levels {
		rep.Levels = append(rep.Levels, proc.closed(b, arm, sessions[:c], max(sizes.levelTurns, 4*c), fmt.Sprintf("c%d", c)))
	}
	head := rep.level(sizes.headline)
	rep.Open = proc.open(b, arm, sessions[:min(len(sessions), 50)], rep.Levels, head, sizes)
	small, smallReads := proc.sized(b, arm, sessions[:sizes.headline], sizes.sizeTurns, "small")
	proc.profile(b, arm, sessions[:sizes.headline], sizes.profileSeconds, "small")
	env.addDistantClutter(b)
	benchMust(b, warmUp(arm, sessions[:sizes.headline]))
	large, largeReads := proc.sized(b, arm, sessions[:sizes.headline], sizes.sizeTurns, "large")
	proc.profile(b, arm, sessions[:sizes.headline], sizes.profileSeconds, "large")
	rep.Size = []sizeFigures{
		{Harnesses: visibleHarnesses, Policies: selectingPolicies, ViewReadsPerTurn: smallReads, levelCPU: small},
		{Harnesses: allHarnesses, Policies: allPolicies, ViewReadsPerTurn: largeReads, levelCPU: large},
	}
	rep.SizeCPURatio = large.DispatcherMs / small.DispatcherMs
	b.StopTimer()
	if double.Turns() == 0 {
		b.Fatal("the double ran no turn")
	}
	rep.HTTPCPUMsPerTurn = env.profileHTTP(b, sessions[:sizes.headline], sizes.profileTurns)
	rep.report(b, sizes.headline)
	if dir := os.Getenv("BENCH_OUT"); dir != "" {
		benchMust(b, rep.write(dir))
	}
}

// warmUp runs one untimed turn of each session at once: its thread, its
// first verdict, and the dispatcher's caches. A session the dispatcher's
// informers do not hold yet is refused (404): the turns run again until
// every session's turn succeeded, for a minute at most.
func warmUp(arm *benchArm, sessions []benchSession) error {
	deadline := time.Now().Add(time.Minute)
	for {
		_, _, err := closedLoop(sessions, 1, fmt.Sprintf("warm%d", time.Now().UnixNano()), arm.httpTurn)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func slicesMax(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// dispatcherProcess is the dispatcher binary running beside the benchmark.
type dispatcherProcess struct {
	proc    *testutil.Process
	base    string // https://<addr> of its API
	metrics string // http://<addr>/metrics
	pprof   string // http://<addr>/debug/pprof/
	client  *http.Client
}

// startDispatcherProcess builds cmd/dispatcher and runs it on the control
// plane with the file journal, as one replica of the chart does (leader
// election off: it serves alone; its turn-token Secret in default), its
// /metrics on plain loopback HTTP.
func (e *benchEnv) startDispatcherProcess(b *testing.B) *dispatcherProcess {
	b.Helper()
	work := b.TempDir()
	binDir := filepath.Join(work, "bin")
	benchMust(b, testutil.BuildBinaries(binDir, "./cmd/dispatcher"))
	kubeconfig, err := e.tenv.AdminKubeconfig(work)
	benchMust(b, err)
	var addrs [4]string
	for i := range addrs {
		addrs[i], err = testutil.FreeAddr()
		benchMust(b, err)
	}
	bind, probe, metrics, pprof := addrs[0], addrs[1], addrs[2], addrs[3]
	caFile := filepath.Join(work, "ca.pem")
	args := append([]string{
		"--kubeconfig=" + kubeconfig, "--bind-address=" + bind, "--probe-bind-address=" + probe,
		"--metrics-bind-address=" + metrics, "--metrics-insecure", "--pprof-bind-address=" + pprof, "--tls-ca-out=" + caFile,
		"--token-audience=" + benchAud, "--leader-elect=false", "--leader-election-namespace=default",
		"--journal-dir=" + filepath.Join(work, "journal"),
		"--shutdown-grace=10s",
	}, testutil.DispatcherProcessArgs()...)
	p, err := testutil.StartProcess("dispatcher", filepath.Join(binDir, "dispatcher"), work, nil, args...)
	benchMust(b, err)
	b.Cleanup(func() { p.Stop(20 * time.Second) })
	if err := p.WaitReady("http://"+probe+"/readyz", 90*time.Second); err != nil {
		b.Fatalf("%v; its log ends:\n%s", err, p.Tail(40))
	}
	tr, err := testutil.TrustingTransport(caFile)
	benchMust(b, err)
	tr.MaxIdleConnsPerHost = maxBenchStreams
	return &dispatcherProcess{proc: p, base: "https://" + bind, metrics: "http://" + metrics + "/metrics",
		pprof: "http://" + pprof + "/debug/pprof/", client: &http.Client{Transport: tr}}
}

// allCPU is the CPU used so far by every process of the benchmark.
type allCPU struct {
	dispatcher time.Duration
	cpuUsage   // this process, kube-apiserver, etcd
}

func (d *dispatcherProcess) sample(b *testing.B) allCPU {
	cpu, err := testutil.CPUTime(d.proc.Pid())
	benchMust(b, err)
	return allCPU{dispatcher: cpu, cpuUsage: sampleCPU()}
}

// levelCPU is one closed loop's figures.
type levelCPU struct {
	Concurrency  int     `json:"concurrency"`
	Turns        int     `json:"turns"`
	TurnsPerSec  float64 `json:"turnsPerSec"`
	DispatcherMs float64 `json:"dispatcherCpuMsPerTurn"`
	Others       cpuMs   `json:"othersCpuMsPerTurn"` // this process, kube-apiserver, etcd
	P50Ms        float64 `json:"p50Ms"`              // the client's time to the result
	P99Ms        float64 `json:"p99Ms"`
}

// totalMs is every process's CPU per turn.
func (l levelCPU) totalMs() float64 {
	return l.DispatcherMs + l.Others.Self + l.Others.APIServer + l.Others.Etcd
}

// closed runs turns turns over sessions, each session's back to back, all at
// once.
func (d *dispatcherProcess) closed(b *testing.B, arm *benchArm, sessions []benchSession, turns int, tag string) levelCPU {
	perSession := (turns + len(sessions) - 1) / len(sessions)
	before := d.sample(b)
	times, wall, err := closedLoop(sessions, perSession, tag, arm.httpTurn)
	after := d.sample(b)
	benchMust(b, err)
	n := len(times)
	return levelCPU{
		Concurrency: len(sessions), Turns: n, TurnsPerSec: float64(n) / wall.Seconds(),
		DispatcherMs: ms(after.dispatcher-before.dispatcher) / float64(n),
		Others:       after.minus(before.cpuUsage).per(n),
		P50Ms:        percentile(times, 50), P99Ms: percentile(times, 99),
	}
}

// openFiguresP are the open loop's figures.
type openFiguresP struct {
	RatePerSec         float64      `json:"ratePerSec"`
	Turns              int          `json:"turns"`
	Utilisation        float64      `json:"utilisation"`        // the benchmark's processes ÷ cores
	MachineUtilisation float64      `json:"machineUtilisation"` // /proc/stat, everything on the machine
	Tries              int          `json:"tries"`
	DispatcherMs       float64      `json:"dispatcherCpuMsPerTurn"`
	Added              addedFigures `json:"added"`
	// Windows splits Added by window (request, headers, result).
	Windows     map[string]addedFigures `json:"windows"`
	ClientP50Ms float64                 `json:"clientP50Ms"`
	ClientP99Ms float64                 `json:"clientP99Ms"`
}

// open looks for the rate of targetUtilisation with short loops, then runs
// the measured loop at it (retrying it while it lands outside the
// tolerance, up to openTries loops in all).
func (d *dispatcherProcess) open(b *testing.B, arm *benchArm, sessions []benchSession, levels []levelCPU, head levelCPU, sizes processSizes) openFiguresP {
	cores := float64(runtime.NumCPU())
	// At half the machine the dispatcher serves below its closed-loop
	// maximum: a rate above it only builds a queue (a machine busy with
	// other work keeps the measured utilisation low at any rate).
	ceiling := 0.0
	for _, l := range levels {
		ceiling = max(ceiling, 0.9*l.TurnsPerSec)
	}
	rate := min(targetUtilisation*cores*1000/head.totalMs(), ceiling)
	rng := rand.New(rand.NewPCG(18, 2)) // the same arrivals in every run
	var f openFiguresP
	for try := 1; try <= openTries; try++ {
		n := sizes.calibrate
		if try > 1 {
			n = sizes.openTurns
		}
		f = d.openLoop(b, arm, sessions, n, rate, rng, fmt.Sprintf("open%d", try))
		f.Tries = try
		if try > 1 && abs(f.Utilisation-targetUtilisation) <= utilisationTolerance {
			break
		}
		if f.Utilisation > 0 {
			// At most double or halve: one noisy loop does not throw the
			// next far off.
			rate = min(rate*min(max(targetUtilisation/f.Utilisation, 0.5), 2), ceiling)
		}
	}
	return f
}

func abs(x float64) float64 { return max(x, -x) }

// openLoop starts n turns at the arrivals of a Poisson process of rate per
// second, whether or not earlier ones ended, each to the next session in
// turn.
func (d *dispatcherProcess) openLoop(b *testing.B, arm *benchArm, sessions []benchSession, n int, rate float64, rng *rand.Rand, tag string) openFiguresP {
	hist0, err := scrapeAdded(d.client, d.metrics)
	benchMust(b, err)
	windows0, err := scrapeWindows(d.client, d.metrics)
	benchMust(b, err)
	traced := d.trace(b, time.Duration(float64(n)/rate*float64(time.Second)))
	machine0 := machineBusy()
	before := d.sample(b)
	start := time.Now()
	times := make([]float64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	next := start
	for i := range n {
		time.Sleep(time.Until(next))
		k := i % len(sessions)
		wg.Go(func() {
			// A session's turn that arrives while its previous one runs
			// waits in the dispatcher for the session, as a gateway's does.
			dur, err := arm.httpTurn(sessions[k], fmt.Sprintf("%s-%s-%d", sessions[k].name, tag, i))
			times[i], errs[i] = float64(dur)/float64(time.Millisecond), err
		})
		next = next.Add(time.Duration(rng.ExpFloat64() / rate * float64(time.Second)))
	}
	wg.Wait()
	wall := time.Since(start)
	after := d.sample(b)
	machine1 := machineBusy()
	hist1, err := scrapeAdded(d.client, d.metrics)
	benchMust(b, err)
	windows1, err := scrapeWindows(d.client, d.metrics)
	benchMust(b, err)
	benchMust(b, traced())
	for _, err := range errs {
		benchMust(b, err)
	}
	used := after.dispatcher - before.dispatcher
	o := after.minus(before.cpuUsage)
	used += o.Self + o.APIServer + o.Etcd
	cores := float64(runtime.NumCPU())
	f := openFiguresP{
		RatePerSec: rate, Turns: n,
		Utilisation:        used.Seconds() / (wall.Seconds() * cores),
		MachineUtilisation: machine1.since(machine0),
		DispatcherMs:       ms(after.dispatcher-before.dispatcher) / float64(n),
		Added:              hist1.Minus(hist0).Figures(),
		Windows:            map[string]addedFigures{},
		ClientP50Ms:        percentile(times, 50), ClientP99Ms: percentile(times, 99),
	}
	for w, h := range windows1 {
		f.Windows[w] = h.Minus(windows0[w]).Figures()
	}
	b.Logf("open loop %s: %d turns at %.1f/s: utilisation %.3f (machine %.3f), added p50 %.3f ms [%.3f, %.3f], p99 %.3f ms [%.3f, %.3f] (%d samples)",
		tag, n, rate, f.Utilisation, f.MachineUtilisation, f.Added.P50Ms, f.Added.P50LowMs, f.Added.P50HighMs,
		f.Added.P99Ms, f.Added.P99LowMs, f.Added.P99HighMs, f.Added.Samples)
	return f
}

// sizeFigures are one cluster size's closed loop. ViewReadsPerTurn is
// the dispatcher's selection views read per turn: near 0 when the views
// hold, so that the turn's selection does not grow with the cluster.
type sizeFigures struct {
	Harnesses        int     `json:"harnesses"`
	Policies         int     `json:"policies"`
	ViewReadsPerTurn float64 `json:"viewReadsPerTurn"`
	levelCPU
}

// sized is closed with the selection views the dispatcher read per turn.
func (d *dispatcherProcess) sized(b *testing.B, arm *benchArm, sessions []benchSession, turns int, tag string) (levelCPU, float64) {
	before, err := scrapeViewReads(d.client, d.metrics)
	benchMust(b, err)
	l := d.closed(b, arm, sessions, turns, tag)
	after, err := scrapeViewReads(d.client, d.metrics)
	benchMust(b, err)
	return l, (after - before) / float64(l.Turns)
}

// processReport is $BENCH_OUT/dispatcher-process.json:
//
//	{"date", "cpus",
//	 "levels": [{"concurrency", "turns", "turnsPerSec", "dispatcherCpuMsPerTurn",
//	             "othersCpuMsPerTurn": {"selfMs", "kubeAPIServerMs", "etcdMs"}, "p50Ms", "p99Ms"}],
//	 "open": {"ratePerSec", "turns", "utilisation", "machineUtilisation", "tries",
//	          "dispatcherCpuMsPerTurn", "added": {"samples", "p50Ms", "p50LowMs", "p50HighMs",
//	          "p99Ms", "p99LowMs", "p99HighMs", "overflowed"}, "clientP50Ms", "clientP99Ms"},
//	 "size": [{"harnesses", "policies", "viewReadsPerTurn", …a level's fields}], "sizeCpuRatio", "httpCpuMsPerTurn"}
type processReport struct {
	Date             string        `json:"date"`
	CPUs             int           `json:"cpus"`
	Levels           []levelCPU    `json:"levels"`
	Open             openFiguresP  `json:"open"`
	Size             []sizeFigures `json:"size"`
	SizeCPURatio     float64       `json:"sizeCpuRatio"`
	HTTPCPUMsPerTurn float64       `json:"httpCpuMsPerTurn"`
}

func (r processReport) level(c int) levelCPU {
	for _, l := range r.Levels {
		if l.Concurrency == c {
			return l
		}
	}
	return r.Levels[len(r.Levels)-1]
}

func (r processReport) write(dir string) error {
	out, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "dispatcher-process.json"), append(out, '\n'), 0o644)
}

// report gives the figures to b as metrics and as a table in its log.
func (r processReport) report(b *testing.B, headline int) {
	b.Logf("%-10s %6s %8s %12s %28s %17s", "level", "turns", "turns/s", "dispatcher", "self / apiserver / etcd", "p50 / p99 ms")
	for _, l := range r.Levels {
		b.Logf("c=%-8d %6d %8.1f %9.2f ms %8.2f / %8.2f / %6.2f %8.1f / %8.1f", l.Concurrency, l.Turns, l.TurnsPerSec,
			l.DispatcherMs, l.Others.Self, l.Others.APIServer, l.Others.Etcd, l.P50Ms, l.P99Ms)
		b.ReportMetric(l.DispatcherMs, fmt.Sprintf("c%d-dispatcher-cpu-ms/turn", l.Concurrency))
		b.ReportMetric(l.Others.APIServer, fmt.Sprintf("c%d-apiserver-cpu-ms/turn", l.Concurrency))
		b.ReportMetric(l.TurnsPerSec, fmt.Sprintf("c%d-turns/s", l.Concurrency))
	}
	b.ReportMetric(r.level(headline).DispatcherMs, "dispatcher-cpu-ms/turn")
	b.ReportMetric(r.HTTPCPUMsPerTurn, "http-cpu-ms/turn")
	o := r.Open
	b.ReportMetric(o.Added.P50Ms, "paired-added-p50-ms")
	b.ReportMetric(o.Added.P99Ms, "paired-added-p99-ms")
	b.ReportMetric(o.Added.P50HighMs, "paired-added-p50-ci-ms")
	b.ReportMetric(o.Added.P99HighMs, "paired-added-p99-ci-ms")
	b.ReportMetric(o.Added.P50LowMs, "paired-added-p50-ci-low-ms")
	b.ReportMetric(o.Added.P99LowMs, "paired-added-p99-ci-low-ms")
	for w, f := range o.Windows {
		b.ReportMetric(f.P50Ms, "paired-added-"+w+"-p50-ms")
		b.ReportMetric(f.P99Ms, "paired-added-"+w+"-p99-ms")
	}
	b.ReportMetric(o.Utilisation, "open-utilisation")
	b.ReportMetric(o.MachineUtilisation, "open-machine-utilisation")
	b.ReportMetric(o.RatePerSec, "open-rate-turns/s")
	b.ReportMetric(o.DispatcherMs, "open-dispatcher-cpu-ms/turn")
	b.ReportMetric(r.SizeCPURatio, "size-cpu-ratio")
	for _, s := range r.Size {
		b.ReportMetric(s.DispatcherMs, fmt.Sprintf("size%d-dispatcher-cpu-ms/turn", s.Harnesses))
		b.ReportMetric(s.ViewReadsPerTurn, fmt.Sprintf("size%d-view-reads/turn", s.Harnesses))
	}
	b.Logf("open loop: %.1f turns/s, utilisation %.3f (machine %.3f) after %d tries; client p50 / p99 %.1f / %.1f ms",
		o.RatePerSec, o.Utilisation, o.MachineUtilisation, o.Tries, o.ClientP50Ms, o.ClientP99Ms)
	b.Logf("cluster size: dispatcher CPU ms/turn %.2f with %d harnesses and %d policies, %.2f with %d and %d: ratio %.3f",
		r.Size[0].DispatcherMs, r.Size[0].Harnesses, r.Size[0].Policies, r.Size[1].DispatcherMs, r.Size[1].Harnesses,
		r.Size[1].Policies, r.SizeCPURatio)
	b.Logf("HTTP layer (in-process profile): %.3f CPU ms/turn", r.HTTPCPUMsPerTurn)
}

// profileHTTP runs an HTTP closed loop on a Handler and engine in this
// process with the CPU profiler on, and returns the HTTP layer's CPU per
// turn (httpProfileShare).
func (e *benchEnv) profileHTTP(b *testing.B, sessions []benchSession, turns int) float64 {
	jrnl, err := journal.Open(b.TempDir(), journal.Options{})
	benchMust(b, err)
	b.Cleanup(func() { _ = jrnl.Close() })
	arm := e.newArm(b, jrnl, engine.Options{})
	own := make([]benchSession, len(sessions))
	for i := range own {
		own[i] = e.newSession(b, doubleNS, fmt.Sprintf("ip-%03d", i))
	}
	benchMust(b, warmUp(arm, own))
	dir := os.Getenv("BENCH_OUT")
	if dir == "" {
		dir = b.TempDir()
	}
	path := filepath.Join(dir, "dispatcher-http-cpu.pprof")
	n, err := profiled(path, func() (int, error) {
		times, _, err := closedLoop(own, (turns+len(own)-1)/len(own), "prof", arm.httpTurn)
		return len(times), err
	})
	benchMust(b, err)
	httpMs, err := httpProfileShare(path)
	benchMust(b, err)
	return httpMs / float64(n)
}
