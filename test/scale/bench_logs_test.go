package scale

import (
	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
)

// discardClientLogs gives the benchmarks' controller-runtime clients a
// logger that drops everything: they log nothing worth reading, and without
// a logger controller-runtime prints a warning with a stack trace into the
// benchmark's output, between a result's name and its figures.
func discardClientLogs() { ctrl.SetLogger(logr.Discard()) }
