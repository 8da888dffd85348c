package httpapi_test

import (
	"math"
	"testing"
)

// TestAddedQuantilesAndTheirIntervals: BenchmarkDispatcherProcess's
// quantiles are the upper bounds of the buckets holding their ranks, and
// their 95 % intervals widen outward to bucket bounds; a rank in the +Inf
// bucket is flagged.
func TestAddedQuantilesAndTheirIntervals(t *testing.T) {
	before := addedHistogram{bounds: []float64{0.0001, 0.0002, 0.0003, math.Inf(1)}, counts: []uint64{10, 10, 10, 10}}
	after := addedHistogram{bounds: before.bounds, counts: []uint64{60, 90, 109, 110}} // 50, 30, 19, 1 in this loop
	got := after.minus(before).figures()
	want := addedFigures{Samples: 100, P50Ms: 0.1, P50LowMs: 0, P50HighMs: 0.2, P99Ms: 0.3, P99LowMs: 0.2, P99HighMs: 0.3, Overflowed: true}
	const eps = 1e-9
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"p50", got.P50Ms, want.P50Ms}, {"p50 low", got.P50LowMs, want.P50LowMs}, {"p50 high", got.P50HighMs, want.P50HighMs},
		{"p99", got.P99Ms, want.P99Ms}, {"p99 low", got.P99LowMs, want.P99LowMs}, {"p99 high", got.P99HighMs, want.P99HighMs},
	} {
		if math.Abs(c.got-c.want) > eps {
			t.Errorf("%s = %v ms, want %v", c.name, c.got, c.want)
		}
	}
	if got.Samples != want.Samples || got.Overflowed != want.Overflowed {
		t.Errorf("samples %d, overflowed %v; want %d, %v", got.Samples, got.Overflowed, want.Samples, want.Overflowed)
	}
}

// TestSumTraces adds up the values of `go tool pprof -traces` output.
func TestSumTraces(t *testing.T) {
	out := `File: httpapi.test
Type: cpu
-----------+-------------------------------------------------------
      60ms   runtime.nanotime
             main.main
-----------+-------------------------------------------------------
     1.20s   syscall.Syscall6
-----------+-------------------------------------------------------
`
	got, err := sumTraces([]byte(out))
	if err != nil || got != 1260 {
		t.Fatalf("sumTraces = %v ms, %v; want 1260", got, err)
	}
}
