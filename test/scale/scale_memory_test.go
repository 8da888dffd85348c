package scale

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/testutil"
)

// memorySampleInterval is how often managerMemory reads the manager's
// memory while its change runs: often enough to catch the peak of a
// change that lasts seconds, seldom enough that the readings (a metrics
// scrape stops the world for runtime.ReadMemStats) cost the manager
// little — and this change's CPU is not one of the benchmark's figures.
const memorySampleInterval = 200 * time.Millisecond

// managerMemory is where the manager's resident memory goes at its peak
// during a policy change that reaches most sessions (MiB, from
// /proc/<pid>/status and the manager's go_memstats_* gauges at the
// sample with the highest VmRSS).
type managerMemory struct {
	// RSS is VmRSS at that sample; File the part of it that is the
	// binary's and the shared libraries' pages (RssFile), Anon the rest.
	RSS  float64 `json:"rssMiB"`
	File float64 `json:"fileMiB"`
	Anon float64 `json:"anonMiB"`
	// HeapInuse is the Go heap's spans in use (live data and garbage not
	// collected yet); HeapUnreleased the free spans the runtime still
	// holds (heap idle less released); Stacks the goroutine stacks;
	// HeapGoal the heap size at which the next collection starts.
	HeapInuse      float64 `json:"heapInuseMiB"`
	HeapUnreleased float64 `json:"heapUnreleasedMiB"`
	Stacks         float64 `json:"stacksMiB"`
	HeapGoal       float64 `json:"heapGoalMiB"`
	// LiveHeap is the heap right after a forced collection, before the
	// change: the data the manager keeps (its caches).
	LiveHeap float64 `json:"liveHeapMiB"`
	// Samples is how many readings were taken during the change.
	Samples int `json:"samples"`
}

// measureManagerMemory forces a collection in the manager, runs one more
// change (scale-all's openai runtime back to codex: 90 % of the sessions,
// since scale-g3's already run codex by its model entry) while sampling
// the manager's memory, and returns the breakdown at its highest VmRSS.
// With BENCH_OUT set it writes the manager's heap profiles to
// $BENCH_OUT/manager-heap-<n>-before.pprof (after the forced collection:
// the live heap by allocation site) and …-after.pprof (at the change's
// end: the bytes allocated during it, as the difference of the two).
func measureManagerMemory(ctx context.Context, c client.Client, w *sessionWatch, o *testutil.Operator, n int) (managerMemory, error) {
	var m managerMemory
	out := os.Getenv("BENCH_OUT")
	profile := func(name string, gc bool) error {
		if out == "" {
			return nil
		}
		return fetchHeapProfile(ctx, o.ManagerPprof, gc, filepath.Join(out, fmt.Sprintf("manager-heap-%d-%s.pprof", n, name)))
	}
	if err := profile("before", true); err != nil {
		return m, err
	}
	live, err := managerValues(ctx, o.ManagerMetrics, "go_memstats_heap_alloc_bytes")
	if err != nil {
		return m, err
	}
	m.LiveHeap = live["go_memstats_heap_alloc_bytes"] / (1 << 20)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var sampleErr error
	wg.Go(func() {
		tick := time.NewTicker(memorySampleInterval)
		defer tick.Stop()
		for {
			s, err := sampleManagerMemory(ctx, o)
			if err != nil {
				sampleErr = err
				return
			}
			m.Samples++
			if s.RSS > m.RSS {
				s.LiveHeap, s.Samples = m.LiveHeap, m.Samples
				m = s
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	_, err = measureChange(ctx, c, w, map[string][]int{"manager": {o.Manager.Pid()}}, "scale-all", func(pol *v1alpha1.RuntimePolicy) {
		pol.Spec.Providers[0].Runtime = "codex"
	}, func(types.NamespacedName) bool { return true }, n, "codex")
	close(stop)
	wg.Wait()
	if err != nil {
		return m, err
	}
	if sampleErr != nil {
		return m, sampleErr
	}
	return m, profile("after", false)
}

// sampleManagerMemory reads the manager's memory once.
func sampleManagerMemory(ctx context.Context, o *testutil.Operator) (managerMemory, error) {
	status, err := testutil.StatusBytes(o.Manager.Pid(), "VmRSS", "RssFile", "RssAnon")
	if err != nil {
		return managerMemory{}, err
	}
	g, err := managerValues(ctx, o.ManagerMetrics, "go_memstats_heap_inuse_bytes", "go_memstats_heap_idle_bytes",
		"go_memstats_heap_released_bytes", "go_memstats_stack_inuse_bytes", "go_memstats_next_gc_bytes")
	if err != nil {
		return managerMemory{}, err
	}
	const mib = 1 << 20
	return managerMemory{
		RSS: float64(status["VmRSS"]) / mib, File: float64(status["RssFile"]) / mib, Anon: float64(status["RssAnon"]) / mib,
		HeapInuse:      g["go_memstats_heap_inuse_bytes"] / mib,
		HeapUnreleased: (g["go_memstats_heap_idle_bytes"] - g["go_memstats_heap_released_bytes"]) / mib,
		Stacks:         g["go_memstats_stack_inuse_bytes"] / mib,
		HeapGoal:       g["go_memstats_next_gc_bytes"] / mib,
	}, nil
}

// fetchHeapProfile saves the manager's heap profile to path; gc runs a
// collection first, so its in-use figures are the live heap.
func fetchHeapProfile(ctx context.Context, pprofURL string, gc bool, path string) error {
	url := pprofURL + "/heap"
	if gc {
		url += "?gc=1"
	}
	return getToFile(ctx, url, path, "the manager's heap profile")
}

// getToFile saves the body of a GET of url (one of the manager's loopback
// endpoints) to path; what names it in an error.
func getToFile(ctx context.Context, url, path, what string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", what, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", what, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
