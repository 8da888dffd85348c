package scale

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/testutil"
)

// The cluster of BenchmarkOperatorScale (docs/benchmarks/operator-scale.md).
const (
	scaleNamespaces = 50
	// scaleGroupSize namespaces share a group label: one group holds
	// exactly 10 % of the sessions, spread evenly over the namespaces.
	scaleGroupSize = 5
	scaleHarnesses = 20
	// scaleCreators is how many creates are in flight at once.
	scaleCreators = 50
	// scaleGroupLabel labels each session namespace with its group, g0…g9.
	scaleGroupLabel = "bench.harness.openclaw.dev/group"
	// changedGroup is the group whose policy the 10 % change edits.
	changedGroup = 3
	// sessionModel is every session's model; sideModel is the one the group
	// policies name before the 10 % change (no session uses it).
	sessionModel, sideModel = "openai/gpt-5", "openai/gpt-5-mini"

	// restInterval is the quiet interval after all are Ready in which the
	// writes at rest are counted; settleQuiet is how long no session may be
	// written before a change's writes are counted (the watch has delivered
	// them all).
	restInterval = 15 * time.Second
	settleQuiet  = 3 * time.Second
	// scaleWait bounds every wait for the manager.
	scaleWait = 20 * time.Minute
)

// scaleSizes are the session counts the benchmark goals name
// (docs/benchmarks.md).
var scaleSizes = []int{1000, 5000, 10000}

// BenchmarkOperatorScale is the operator at 1,000, 5,000 and 10,000
// AgentSessions (`make bench-scale`): for each size, a new system as
// deployed (testutil.StartOperator: bin/manager and bin/dispatcher against
// envtest's kube-apiserver and etcd), 50 namespaces holding the sessions
// evenly, 20 AgentHarnesses and 10 RuntimePolicies: scale-all (every
// namespace; openai → codex) and scale-g0…g8 (the namespaces of one group
// each, 10 % of the sessions; an entry for a model no session uses). The
// benchmark watches every session from its own connection and reports:
//
//   - create-s, ready-s, finalized-s: from the first of 50 parallel creates
//     (through the admission webhooks) to the last create returning, to
//     every session Ready (the manager's condition, with its policy runtime
//     codex), and to every session carrying the dispatcher's finalizer;
//     writes-to-settle: writes per session until then (the manager's status
//     and the dispatcher's finalizer: 2);
//   - writes-at-rest-per-session: writes in a quiet interval of 15 s after
//     that (must be 0);
//   - change100-s: scale-all's openai runtime codex → openclaw, from the
//     update to the watch delivering the last session's new runtime;
//     change10-s: scale-g3's entry changed to the sessions' model, runtime
//     codex (it wins over scale-all's provider entry) — exactly 10 %;
//   - writes-per-affected (the most any affected session got in either
//     change: must be ≤ 1) and writes-to-unaffected (must be 0);
//     events-per-affected: the PolicyRuntimeChanged Events the 100 % change
//     left per session (each another write to the API server);
//   - apiserver-cpu-per-write-ms: the CPU time of kube-apiserver + etcd
//     (/proc/<pid>/stat) per plain status write, over a batch of up to
//     1,000 the benchmark applies itself (8 in flight, the manager's
//     concurrency) — watchers and all; floor10-s, floor100-s: the goal's
//     API-server floor (docs/benchmarks.md), affected sessions × that ÷ the
//     machine's cores; change10-per-floor, change100-per-floor: the ratios
//     (goal ≤ 1.2); change100-<process>-cpu-s: the CPU time kube-apiserver +
//     etcd, the manager, the dispatcher and the benchmark itself (its watch)
//     spent during the 100 % change, until its writes settled;
//   - fanout-apiserver-cpu-ratio, fanout-operator-cpu-ratio: the CPU
//     kube-apiserver + etcd, and the manager, spent per affected session in
//     the 100 % change ÷ plain-apply-apiserver-cpu-ms, the API server's CPU
//     per plain write of the same status part: the benchmark applies each
//     session's manager part again (the manager's field manager, the same
//     fields and size, only the conditions' lastTransitionTime moved) to up
//     to 1,000 sessions, 8 in flight; fanout-merge-apiserver-cpu-ratio: the
//     same write as a JSON merge patch (plain-merge-apiserver-cpu-ms) ÷ the
//     apply;
//   - change100-reconciles-per-affected: the manager's AgentSession
//     reconciles during the 100 % change, per session
//     (controller_runtime_reconcile_total);
//   - manager-ready-rss-MiB, manager-ready-peak-MiB: the manager's VmRSS
//     and VmHWM once all are Ready and settled (the peak of the creations,
//     before any change); manager-rss-MiB, manager-peak-MiB (VmRSS, VmHWM) and
//     dispatcher-rss-MiB at the end, after the changes;
//   - manager-live-heap-MiB: the manager's Go heap after a forced
//     collection; then, during one more change (scale-all back to codex),
//     at the sample of the highest VmRSS: manager-change-rss-MiB and its
//     parts manager-change-file-MiB (the binary's pages),
//     -heap-inuse-MiB, -heap-unreleased-MiB, -stacks-MiB, and
//     manager-change-heap-goal-MiB (measureManagerMemory; with BENCH_OUT
//     set, the heap profiles around that change).
//
// BENCH_MANAGER_GOMEMLIMIT, when set, is the manager's GOMEMLIMIT (Go's
// soft memory limit, e.g. 48MiB): how the memory goal would be met, at what
// CPU (docs/benchmarks/operator-scale.md). The chart sets none.
//
// One sample session of the changed group and one of another are checked
// to say in their status which runtime applies and why (a failure, not a
// figure). With BENCH_OUT set to a directory the series is also written to
// $BENCH_OUT/operator-scale.json (scalePoint is its shape: a JSON array,
// one object per size).
func BenchmarkOperatorScale(b *testing.B) {
	discardClientLogs()
	var series []scalePoint
	for _, n := range scaleSizes {
		b.Run("sessions="+strconv.Itoa(n), func(b *testing.B) {
			p := runScale(b, n)
			p.report(b)
			series = append(series, p)
		})
	}
	writeScaleSeries(b, series)
}

// runScale measures one size on a new system.
func runScale(b *testing.B, n int) scalePoint {
	var opts testutil.OperatorOptions
	if limit := os.Getenv("BENCH_MANAGER_GOMEMLIMIT"); limit != "" {
		opts.ManagerEnv = []string{"GOMEMLIMIT=" + limit}
	}
	o, err := testutil.StartOperatorWith(b.TempDir(), opts)
	if err != nil {
		b.Fatal(err, o.Logs())
	}
	defer func() {
		if err := o.Stop(); err != nil {
			b.Error(err)
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := o.Env.Client
	fail := func(what string, err error) {
		b.Helper()
		if err != nil {
			b.Fatalf("%s: %v%s", what, err, o.Logs())
		}
	}
	fail("seed the cluster", seedScaleCluster(ctx, c))
	w, err := watchSessions(ctx, o.Env.Config)
	fail("watch", err)
	all := func(types.NamespacedName) bool { return true }

	p := scalePoint{Sessions: n}
	start := time.Now()
	fail("create sessions", createSessions(ctx, b, c, n))
	p.CreateSeconds = time.Since(start).Seconds()
	at, err := w.waitAll(ctx, scaleWait, n, nil, func(_ types.NamespacedName, s *sessionSeen) bool { return s.ready && s.runtime == "codex" })
	fail("wait for Ready", err)
	p.ReadySeconds = at.Sub(start).Seconds()
	at, err = w.waitAll(ctx, scaleWait, n, nil, func(_ types.NamespacedName, s *sessionSeen) bool { return s.finalized })
	fail("wait for the dispatcher's finalizers", err)
	p.FinalizedSeconds = at.Sub(start).Seconds()
	fail("settle", w.quiet(ctx, settleQuiet))
	settled, _, _ := w.writes().split(all)
	p.WritesToSettle = float64(settled) / float64(n)
	p.ManagerReadyRSSMiB, p.ManagerReadyPeakMiB, err = memoryMiB(o.Manager.Pid())
	fail("manager memory", err)

	pids, err := o.Env.ControlPlanePids()
	fail("find the control plane", err)
	cpu, err := measureWriteCPU(ctx, c, w, pids, min(n, floorWrites))
	fail("measure the API server's CPU per write", err)
	p.APIServerCPUPerWriteMs = ms(cpu)
	fail("settle", w.quiet(ctx, settleQuiet))

	rest := w.writes()
	time.Sleep(restInterval) // the interval is the measurement
	atRest, _, _ := w.writes().since(rest).split(all)
	p.WritesAtRestPerSession = float64(atRest) / float64(n)

	procs := map[string][]int{"apiserver+etcd": pids, "manager": {o.Manager.Pid()}, "dispatcher": {o.Dispatcher.Pid()}, "benchmark": {os.Getpid()}}
	reconcilesBefore, err := sessionReconciles(ctx, o.ManagerMetrics)
	fail("read the manager's reconciles", err)
	ch100, err := measureChange(ctx, c, w, procs, "scale-all", func(pol *v1alpha1.RuntimePolicy) {
		pol.Spec.Providers[0].Runtime = "openclaw"
	}, all, n, "openclaw")
	fail("the 100 % change", err)
	reconcilesAfter, err := sessionReconciles(ctx, o.ManagerMetrics)
	fail("read the manager's reconciles", err)
	p.Change100ReconcilesPerSession = (reconcilesAfter - reconcilesBefore) / float64(n)
	events, err := countEvents(ctx, c, "PolicyRuntimeChanged")
	fail("count Events", err)
	p.EventsPerAffectedSession = float64(events) / float64(n)
	inGroup := func(key types.NamespacedName) bool { return namespaceGroup(key.Namespace) == changedGroup }
	ch10, err := measureChange(ctx, c, w, procs, groupPolicy(changedGroup), func(pol *v1alpha1.RuntimePolicy) {
		pol.Spec.Models[0] = v1alpha1.ModelRuntimePolicy{Ref: sessionModel, Runtime: "codex"}
	}, inGroup, n/10, "codex")
	fail("the 10 % change", err)
	p.Change100Seconds, p.Change10Seconds, p.Change100CPUSeconds = ch100.seconds, ch10.seconds, ch100.cpu
	p.WritesPerAffectedSession, p.WritesToUnaffected = max(ch100.perAffected, ch10.perAffected), ch10.toUnaffected
	p.floors(cpu)
	fail("the status says why", checkSamples(w, inGroup))

	p.ManagerRSSMiB, p.ManagerPeakRSSMiB, err = memoryMiB(o.Manager.Pid())
	fail("manager memory", err)
	p.DispatcherRSSMiB, _, err = memoryMiB(o.Dispatcher.Pid())
	fail("dispatcher memory", err)

	// The plain writes the fan-out is compared with come after the memory
	// readings (the manager's cache decodes them too) and after the
	// changes (the merge patch takes the fields' ownership from the
	// manager until its next apply).
	fail("settle", w.quiet(ctx, settleQuiet))
	apply, err := measureManagerWriteCPU(ctx, c, w, pids, min(n, floorWrites), armApply)
	fail("measure the API server's CPU per plain apply", err)
	fail("settle", w.quiet(ctx, settleQuiet))
	merge, err := measureManagerWriteCPU(ctx, c, w, pids, min(n, floorWrites), armMergePatch)
	fail("measure the API server's CPU per plain merge patch", err)
	p.PlainApplyCPUMs, p.PlainMergeCPUMs = ms(apply), ms(merge)
	// Last, since its readings and forced collection cost the manager CPU
	// and its change moves VmHWM.
	fail("settle", w.quiet(ctx, settleQuiet))
	p.Memory, err = measureManagerMemory(ctx, c, w, o, n)
	fail("the manager's memory during a change", err)
	return p
}

// seedScaleCluster creates the namespaces, the harnesses and the policies,
// and waits until the manager has reconciled every policy (so its cache
// holds them before the first session arrives).
func seedScaleCluster(ctx context.Context, c client.Client) error {
	for i := 1; i <= scaleHarnesses; i++ {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testutil.ProcessNamespace(i)}}); err != nil {
			return err
		}
	}
	for i := 1; i <= scaleNamespaces; i++ {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: scaleNamespace(i), Labels: map[string]string{
			scaleGroupLabel: "g" + strconv.Itoa((i-1)/scaleGroupSize),
			// Sessions here may use the harness codex of tenant-1.
			v1alpha1.AcceptHarnessesLabel(testutil.ProcessNamespace(1)): "true",
		}}}
		if err := c.Create(ctx, ns); err != nil {
			return err
		}
	}
	for i := 1; i <= scaleHarnesses; i++ {
		h := externalHarness(testutil.ProcessNamespace(i), "h"+strconv.Itoa(i))
		if i == 1 {
			h.Name, h.Spec.HarnessID, h.Spec.Label = "codex", "codex", "Codex"
			h.Spec.AllowedNamespaces = &v1alpha1.AllowedNamespaces{From: v1alpha1.NamespacesFromAll}
		}
		if err := c.Create(ctx, h); err != nil {
			return err
		}
	}
	policies := []*v1alpha1.RuntimePolicy{testutil.NewPolicy("scale-all", testutil.ProviderRuntime("openai", "codex"))}
	for g := range scaleNamespaces/scaleGroupSize - 1 {
		policies = append(policies, testutil.NewPolicy(groupPolicy(g), testutil.ModelRuntime(sideModel, "openclaw"),
			testutil.Selecting(map[string]string{scaleGroupLabel: "g" + strconv.Itoa(g)})))
	}
	for _, p := range policies {
		if err := c.Create(ctx, p); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(time.Minute)
	for _, p := range policies {
		for p.Status.ObservedGeneration != p.Generation || p.Generation == 0 {
			if time.Now().After(deadline) {
				return fmt.Errorf("RuntimePolicy %s not reconciled within a minute: %+v", p.Name, p.Status)
			}
			time.Sleep(watchPoll) // the poll's interval; observedGeneration is the fact
			if err := c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
				return err
			}
		}
	}
	return nil
}

func scaleNamespace(i int) string { return testutil.SuiteNamespace("scale", i) }

func groupPolicy(g int) string { return "scale-g" + strconv.Itoa(g) }

// namespaceGroup is the group of a session namespace (scale-<i>).
func namespaceGroup(ns string) int {
	i, err := strconv.Atoi(strings.TrimPrefix(ns, "scale-"))
	if err != nil {
		return -1
	}
	return (i - 1) / scaleGroupSize
}

// createSessions creates n sessions, scaleCreators at a time, spread
// evenly over the namespaces; a create refused (a webhook that did not
// answer within its timeout) is tried again.
func createSessions(ctx context.Context, b *testing.B, c client.Client, n int) error {
	next := make(chan int)
	errs := make(chan error, scaleCreators)
	var wg sync.WaitGroup
	for range scaleCreators {
		wg.Go(func() {
			for i := range next {
				name := "s-" + strconv.Itoa(i)
				for attempt := 1; ; attempt++ {
					err := c.Create(ctx, &v1alpha1.AgentSession{
						ObjectMeta: metav1.ObjectMeta{Namespace: scaleNamespace(i%scaleNamespaces + 1), Name: name},
						Spec:       v1alpha1.AgentSessionSpec{AgentID: "main", SessionKey: "agent:main:" + name, SessionID: name, Model: sessionModel},
					})
					if err == nil || apierrors.IsAlreadyExists(err) {
						break
					}
					if attempt == 5 {
						errs <- fmt.Errorf("create %s: %w", name, err)
						return
					}
					b.Logf("create %s again: %v", name, err)
				}
			}
		})
	}
	for i := range n {
		select {
		case next <- i:
		case err := <-errs:
			close(next)
			wg.Wait()
			return err
		}
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// change is what one policy change cost: the time from the update to the
// watch delivering the last affected session's new runtime, the most
// writes one affected session got, the writes to the others, and the CPU
// time each process group spent from the update until the writes settled.
type change struct {
	seconds                   float64
	perAffected, toUnaffected int
	cpu                       map[string]float64
}

// measureChange edits the RuntimePolicy named policy and waits until every
// affected session (nAffected of them) has runtime want, then until the
// writes settle.
func measureChange(ctx context.Context, c client.Client, w *sessionWatch, procs map[string][]int, policy string, edit func(*v1alpha1.RuntimePolicy),
	affected func(types.NamespacedName) bool, nAffected int, want v1alpha1.RuntimeID) (change, error) {
	before := w.writes()
	cpuBefore, err := cpuOfGroups(procs)
	if err != nil {
		return change{}, err
	}
	start := time.Now()
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var p v1alpha1.RuntimePolicy
		if err := c.Get(ctx, client.ObjectKey{Name: policy}, &p); err != nil {
			return err
		}
		edit(&p)
		return c.Update(ctx, &p)
	})
	if err != nil {
		return change{}, fmt.Errorf("update RuntimePolicy %s: %w", policy, err)
	}
	at, err := w.waitAll(ctx, scaleWait, nAffected, affected, func(_ types.NamespacedName, s *sessionSeen) bool { return s.runtime == want })
	if err != nil {
		return change{}, err
	}
	if err := w.quiet(ctx, settleQuiet); err != nil {
		return change{}, err
	}
	cpuAfter, err := cpuOfGroups(procs)
	if err != nil {
		return change{}, err
	}
	ch := change{seconds: at.Sub(start).Seconds(), cpu: map[string]float64{}}
	for group := range procs {
		ch.cpu[group] = (cpuAfter[group] - cpuBefore[group]).Seconds()
	}
	_, ch.perAffected, ch.toUnaffected = w.writes().since(before).split(affected)
	return ch, nil
}

// countEvents counts the Events (events.k8s.io) of reason in every
// namespace: each is one more write to the API server.
func countEvents(ctx context.Context, c client.Client, reason string) (int, error) {
	n := 0
	var list eventsv1.EventList
	for {
		if err := c.List(ctx, &list, client.Limit(1000), client.Continue(list.Continue)); err != nil {
			return 0, err
		}
		for _, e := range list.Items {
			if e.Reason == reason {
				n++
			}
		}
		if list.Continue == "" {
			return n, nil
		}
	}
}

// checkSamples checks that a session of the changed group and one of
// another group say in their status which runtime applies and which
// policy decided it (`kubectl get agentsessions` answers "why").
func checkSamples(w *sessionWatch, inGroup func(types.NamespacedName) bool) error {
	var changed, other *types.NamespacedName
	for _, key := range w.keys() {
		switch {
		case changed == nil && inGroup(key):
			changed = &key
		case other == nil && !inGroup(key):
			other = &key
		}
	}
	if changed == nil || other == nil {
		return fmt.Errorf("no sample sessions")
	}
	for _, want := range []struct {
		key     types.NamespacedName
		runtime v1alpha1.RuntimeID
		source  v1alpha1.PolicySource
		policy  string
	}{
		{*changed, "codex", v1alpha1.PolicySourceModel, groupPolicy(changedGroup)},
		{*other, "openclaw", v1alpha1.PolicySourceProvider, "scale-all"},
	} {
		s, _ := w.seen(want.key)
		if s.runtime != want.runtime || s.source != want.source || !strings.Contains(s.resolvedMessage, "RuntimePolicy "+want.policy+" ") {
			return fmt.Errorf("session %s: runtime %s (source %s), PolicyResolved %q; want runtime %s from a %s entry of RuntimePolicy %s",
				want.key, s.runtime, s.source, s.resolvedMessage, want.runtime, want.source, want.policy)
		}
	}
	return nil
}
