package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/testutil"
)

const (
	// floorWrites is how many plain status writes the API server's CPU per
	// write is measured over (fewer when there are fewer sessions).
	floorWrites = 1000
	// floorWriters is how many of them are in flight at once: the manager's
	// default --agentsession-concurrency.
	floorWriters = 8
	// floorFieldManager owns the counters the floor's writes set: a field
	// of the dispatcher's part of the status, so the manager reads each
	// write and writes nothing back.
	floorFieldManager = "bench-floor"
)

// scalePoint is one size of BenchmarkOperatorScale, an element of the JSON
// array in $BENCH_OUT/operator-scale.json: seconds, MiB, and writes as the
// benchmark's watch counted them.
type scalePoint struct {
	Sessions int `json:"sessions"`
	// CreateSeconds: the 50 parallel creates; ReadySeconds: from the first
	// create to every session Ready; FinalizedSeconds: to every session
	// carrying the dispatcher's finalizer.
	CreateSeconds    float64 `json:"createSeconds"`
	ReadySeconds     float64 `json:"readySeconds"`
	FinalizedSeconds float64 `json:"finalizedSeconds"`
	// Change10Seconds, Change100Seconds: from a policy update to the last
	// affected session's new runtime, for 10 % and 100 % of the sessions.
	Change10Seconds  float64 `json:"change10Seconds"`
	Change100Seconds float64 `json:"change100Seconds"`
	// Floor10Seconds, Floor100Seconds: affected sessions ×
	// APIServerCPUPerWriteMs ÷ the machine's cores.
	Floor10Seconds         float64 `json:"floor10Seconds"`
	Floor100Seconds        float64 `json:"floor100Seconds"`
	APIServerCPUPerWriteMs float64 `json:"apiServerCPUPerWriteMs"`
	// Change100CPUSeconds: the CPU time of each process ("apiserver+etcd",
	// "manager", "dispatcher", "benchmark") from the 100 % change's update
	// until its writes settled: where the fan-out's time goes.
	Change100CPUSeconds map[string]float64 `json:"change100CPUSeconds"`
	// Change100ReconcilesPerSession: the manager's AgentSession
	// reconciles during the 100 % change ÷ the sessions.
	Change100ReconcilesPerSession float64 `json:"change100ReconcilesPerSession"`
	// PlainApplyCPUMs, PlainMergeCPUMs: the API server's CPU per write of
	// a session's manager part (policy, observedGeneration, two
	// conditions) made by the benchmark, by server-side apply under the
	// manager's field manager and by JSON merge patch.
	PlainApplyCPUMs float64 `json:"plainApplyCPUMs"`
	PlainMergeCPUMs float64 `json:"plainMergeCPUMs"`
	// ManagerReadyRSSMiB: the manager's VmRSS once all are Ready and the
	// writes settled. ManagerRSSMiB, DispatcherRSSMiB: VmRSS at the end,
	// after the changes; ManagerPeakRSSMiB: the manager's VmHWM.
	ManagerReadyRSSMiB float64 `json:"managerReadyRSSMiB"`
	// ManagerReadyPeakMiB: the manager's VmHWM at that point, before any
	// policy change.
	ManagerReadyPeakMiB float64 `json:"managerReadyPeakMiB"`
	ManagerRSSMiB       float64 `json:"managerRSSMiB"`
	ManagerPeakRSSMiB   float64 `json:"managerPeakRSSMiB"`
	DispatcherRSSMiB    float64 `json:"dispatcherRSSMiB"`
	// WritesToSettle: writes per session from its creation until every
	// session is Ready and finalized and nothing is written for 3 s.
	WritesToSettle float64 `json:"writesToSettle"`
	// WritesAtRestPerSession: writes per session in 15 s after that.
	WritesAtRestPerSession float64 `json:"writesAtRestPerSession"`
	// WritesPerAffectedSession: the most writes one affected session got
	// in either change; WritesToUnaffected: the writes to the sessions the
	// 10 % change does not affect, during it.
	WritesPerAffectedSession int `json:"writesPerAffectedSession"`
	WritesToUnaffected       int `json:"writesToUnaffected"`
	// EventsPerAffectedSession: PolicyRuntimeChanged Events per session
	// after the 100 % change (Events are writes to the API server too).
	EventsPerAffectedSession float64 `json:"eventsPerAffectedSession"`
	// Memory: where the manager's memory goes during one more change,
	// measured last.
	Memory managerMemory `json:"managerMemory"`
}

// floors sets the API-server floors of the two changes from the measured
// CPU per write.
func (p *scalePoint) floors(perWrite time.Duration) {
	cores := float64(runtime.NumCPU())
	p.Floor100Seconds = float64(p.Sessions) * perWrite.Seconds() / cores
	p.Floor10Seconds = p.Floor100Seconds / 10
}

// perAffected is the CPU milliseconds a process spent per session in the
// 100 % change.
func (p *scalePoint) perAffected(process string) float64 {
	return p.Change100CPUSeconds[process] * 1000 / float64(p.Sessions)
}

func (p scalePoint) report(b *testing.B) {
	for _, m := range []struct {
		value float64
		unit  string
	}{
		{p.CreateSeconds, "create-s"}, {p.ReadySeconds, "ready-s"}, {p.FinalizedSeconds, "finalized-s"},
		{p.WritesToSettle, "writes-to-settle"}, {p.WritesAtRestPerSession, "writes-at-rest-per-session"},
		{p.Change10Seconds, "change10-s"}, {p.Change100Seconds, "change100-s"},
		{p.Floor10Seconds, "floor10-s"}, {p.Floor100Seconds, "floor100-s"},
		{p.Change10Seconds / p.Floor10Seconds, "change10-per-floor"}, {p.Change100Seconds / p.Floor100Seconds, "change100-per-floor"},
		{p.APIServerCPUPerWriteMs, "apiserver-cpu-per-write-ms"},
		{float64(p.WritesPerAffectedSession), "writes-per-affected"}, {float64(p.WritesToUnaffected), "writes-to-unaffected"},
		{p.EventsPerAffectedSession, "events-per-affected"},
		{p.Change100CPUSeconds["apiserver+etcd"], "change100-apiserver-cpu-s"}, {p.Change100CPUSeconds["manager"], "change100-manager-cpu-s"},
		{p.Change100CPUSeconds["dispatcher"], "change100-dispatcher-cpu-s"}, {p.Change100CPUSeconds["benchmark"], "change100-benchmark-cpu-s"},
		{p.Change100ReconcilesPerSession, "change100-reconciles-per-affected"},
		{p.PlainApplyCPUMs, "plain-apply-apiserver-cpu-ms"}, {p.PlainMergeCPUMs, "plain-merge-apiserver-cpu-ms"},
		{p.perAffected("apiserver+etcd") / p.PlainApplyCPUMs, "fanout-apiserver-cpu-ratio"},
		{p.perAffected("manager") / p.PlainApplyCPUMs, "fanout-operator-cpu-ratio"},
		{p.PlainMergeCPUMs / p.PlainApplyCPUMs, "fanout-merge-apiserver-cpu-ratio"},
		{p.ManagerReadyRSSMiB, "manager-ready-rss-MiB"}, {p.ManagerReadyPeakMiB, "manager-ready-peak-MiB"}, {p.ManagerRSSMiB, "manager-rss-MiB"}, {p.ManagerPeakRSSMiB, "manager-peak-MiB"}, {p.DispatcherRSSMiB, "dispatcher-rss-MiB"},
		{p.Memory.LiveHeap, "manager-live-heap-MiB"}, {p.Memory.RSS, "manager-change-rss-MiB"}, {p.Memory.File, "manager-change-file-MiB"},
		{p.Memory.HeapInuse, "manager-change-heap-inuse-MiB"}, {p.Memory.HeapUnreleased, "manager-change-heap-unreleased-MiB"},
		{p.Memory.Stacks, "manager-change-stacks-MiB"}, {p.Memory.HeapGoal, "manager-change-heap-goal-MiB"},
	} {
		b.ReportMetric(m.value, m.unit)
	}
}

// writeScaleSeries writes the series to $BENCH_OUT/operator-scale.json
// when BENCH_OUT names a directory.
func writeScaleSeries(b *testing.B, series []scalePoint) {
	dir := os.Getenv("BENCH_OUT")
	if dir == "" || len(series) == 0 {
		return
	}
	out, err := json.MarshalIndent(series, "", "  ")
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "operator-scale.json"), append(out, '\n'), 0o644); err != nil {
		b.Fatalf("BENCH_OUT: %v", err)
	}
}

// measureWriteCPU applies a plain status write (status.counters.turns) to
// n sessions, floorWriters at a time, waits until the watch has delivered
// each, and returns the CPU time kube-apiserver and etcd (pids) spent per
// write meanwhile: the write, its storage and its delivery to every
// watcher — the manager's and the dispatcher's caches and this watch.
func measureWriteCPU(ctx context.Context, c client.Client, w *sessionWatch, pids []int, n int) (time.Duration, error) {
	keys := w.keys()[:n]
	before := w.writes()
	cpuBefore, err := cpuOf(pids)
	if err != nil {
		return 0, err
	}
	next := make(chan types.NamespacedName)
	errs := make(chan error, floorWriters)
	var wg sync.WaitGroup
	for range floorWriters {
		wg.Go(func() {
			for key := range next {
				u := &unstructured.Unstructured{}
				u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("AgentSession"))
				u.SetNamespace(key.Namespace)
				u.SetName(key.Name)
				u.Object["status"] = map[string]any{"counters": map[string]any{"turns": int64(1)}}
				if err := c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(floorFieldManager), client.ForceOwnership); err != nil {
					errs <- fmt.Errorf("apply the status of %s: %w", key, err)
					return
				}
			}
		})
	}
	for _, key := range keys {
		next <- key
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return 0, err
	default:
	}
	written := map[types.NamespacedName]bool{}
	for _, key := range keys {
		written[key] = true
	}
	_, err = w.waitAll(ctx, scaleWait, n, func(key types.NamespacedName) bool { return written[key] },
		func(key types.NamespacedName, s *sessionSeen) bool { return s.writes > before[key] })
	if err != nil {
		return 0, err
	}
	cpuAfter, err := cpuOf(pids)
	if err != nil {
		return 0, err
	}
	return (cpuAfter - cpuBefore) / time.Duration(n), nil
}

// cpuOfGroups is the CPU time of each group of processes.
func cpuOfGroups(groups map[string][]int) (map[string]time.Duration, error) {
	out := map[string]time.Duration{}
	for name, pids := range groups {
		t, err := cpuOf(pids)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

// cpuOf sums the CPU time of pids.
func cpuOf(pids []int) (time.Duration, error) {
	var sum time.Duration
	for _, pid := range pids {
		t, err := testutil.CPUTime(pid)
		if err != nil {
			return 0, err
		}
		sum += t
	}
	return sum, nil
}

// memoryMiB is VmRSS and VmHWM of pid in MiB.
func memoryMiB(pid int) (rss, peak float64, err error) {
	r, p, err := testutil.Memory(pid)
	return float64(r) / (1 << 20), float64(p) / (1 << 20), err
}
