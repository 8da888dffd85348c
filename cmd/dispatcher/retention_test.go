package main

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
)

// gauge returns the value of vec's series for namespace ns, and whether it
// exists (WithLabelValues would create it).
func gauge(t *testing.T, vec *prometheus.GaugeVec, ns string) (float64, bool) {
	t.Helper()
	ch := make(chan prometheus.Metric)
	go func() {
		vec.Collect(ch)
		close(ch)
	}()
	value, found := 0.0, false
	for m := range ch {
		pb := &dto.Metric{}
		if err := m.Write(pb); err != nil {
			t.Error(err)
			continue
		}
		for _, l := range pb.GetLabel() {
			if l.GetName() == "namespace" && l.GetValue() == ns {
				value, found = pb.GetGauge().GetValue(), true
			}
		}
	}
	return value, found
}

// eventually polls cond, a fact the retention loop publishes, for up to 20s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 20*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func TestRetentionPublishesEachNamespacesUsageWhileRunning(t *testing.T) {
	j, err := journal.Open(t.TempDir(), retentionOptions{}.journalOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = j.Close() }()
	session := journal.SessionKey("retention-test", "5b0c1d9e-0d7e-4a55-8a52-0c5c6d1e2f3a")
	run, _, err := j.Begin(session, "run-1", journal.Digest([]byte("body")))
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Finish(journal.StateFinished, nil); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	passes := promtestutil.ToFloat64(retentionPasses.WithLabelValues("ok"))
	go func() { done <- retentionOptions{interval: time.Millisecond}.runnable(j, logr.Discard()).Start(ctx) }()
	eventually(t, "the namespace's runs published", func() bool {
		v, ok := gauge(t, namespaceRuns, "retention-test")
		return ok && v == 1
	})
	if v, ok := gauge(t, namespaceBytes, "retention-test"); !ok || v == 0 {
		t.Fatalf("namespace bytes = %v (published: %v), want the run file's size", v, ok)
	}
	// A namespace that holds nothing any more loses its series.
	if err := j.DeleteSession(session); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the namespace's series removed", func() bool {
		_, ok := gauge(t, namespaceRuns, "retention-test")
		return !ok
	})
	if got := promtestutil.ToFloat64(retentionPasses.WithLabelValues("ok")); got < passes+2 {
		t.Fatalf("%v passes counted, want at least 2", got-passes)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Start returned %v when its context ended", err)
	}
}
