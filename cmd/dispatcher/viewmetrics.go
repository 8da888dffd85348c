package main

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/openclaw/harness-operator/internal/policy/snapshot"
)

// registerSelectionViewReads exports how often the selection views were
// read from the informer cache. Each read lists every AgentHarness and
// RuntimePolicy of the cluster; a count that grows with the turns rather
// than with harness, policy and namespace changes says the views do not
// hold and a turn's cost grows with the cluster's size.
func registerSelectionViewReads(views *snapshot.Views) error {
	return metrics.Registry.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "harness_dispatcher_selection_view_reads_total",
		Help: "Selection views read from the informer cache (each lists every AgentHarness and RuntimePolicy); one per namespace per harness, policy or namespace change when the views hold.",
	}, func() float64 { return float64(views.Reads()) }))
}
