package main

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/openclaw/harness-operator/internal/policy/snapshot"
)

// selectionViews are the views of the running dispatcher, read by the
// selection-view metric. The metric is registered once per process (a test
// runs several dispatchers in one) and reads whichever was set last.
var selectionViews atomic.Pointer[snapshot.Views]

// selectionViewReads exports how often the selection views were read from
// the informer cache. Each read lists every AgentHarness and RuntimePolicy
// of the cluster; a count that grows with the turns rather than with
// harness, policy and namespace changes says the views do not hold and a
// turn's cost grows with the cluster's size.
var selectionViewReads = prometheus.NewCounterFunc(prometheus.CounterOpts{
	Name: "harness_dispatcher_selection_view_reads_total",
	Help: "Selection views read from the informer cache (each lists every AgentHarness and RuntimePolicy); one per namespace per harness, policy or namespace change when the views hold.",
}, func() float64 {
	if v := selectionViews.Load(); v != nil {
		return float64(v.Reads())
	}
	return 0
})

func init() { metrics.Registry.MustRegister(selectionViewReads) }
