package benchhist

import (
	"math"
	"testing"
)

// TestQuantilesAndTheirIntervals: the quantiles are the upper bounds of the
// buckets holding their ranks, and their 95 % intervals widen outward to
// bucket bounds; a rank in the +Inf bucket is flagged.
func TestQuantilesAndTheirIntervals(t *testing.T) {
	before := Histogram{Bounds: []float64{0.0001, 0.0002, 0.0003, math.Inf(1)}, Counts: []uint64{10, 10, 10, 10}}
	after := Histogram{Bounds: before.Bounds, Counts: []uint64{60, 90, 109, 110}} // 50, 30, 19, 1 in this loop
	got := after.Minus(before).Figures()
	want := Figures{Samples: 100, P50Ms: 0.1, P50LowMs: 0, P50HighMs: 0.2, P99Ms: 0.3, P99LowMs: 0.2, P99HighMs: 0.3, Overflowed: true}
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

// TestBootstrapMedian: the median of the differences, inside an interval
// that holds it; a constant difference has no spread; the interval narrows
// as the pairs grow; the same seed gives the same interval.
func TestBootstrapMedian(t *testing.T) {
	if m, lo, hi := BootstrapMedian([]float64{0.4, 0.4, 0.4}, 200, 1); m != 0.4 || lo != 0.4 || hi != 0.4 {
		t.Errorf("constant differences: %v [%v, %v], want 0.4 [0.4, 0.4]", m, lo, hi)
	}
	spread := func(n int) (float64, float64, float64) {
		diffs := make([]float64, n)
		for i := range diffs {
			diffs[i] = float64(i%21) / 10 // 0 … 2 ms, median 1
		}
		return BootstrapMedian(diffs, 1000, 7)
	}
	m, lo, hi := spread(105)
	if m != 1 || lo > m || hi < m || lo == hi {
		t.Errorf("105 pairs: %v [%v, %v], want 1 inside a non-empty interval", m, lo, hi)
	}
	_, lo2, hi2 := spread(2100)
	if hi2-lo2 >= hi-lo {
		t.Errorf("2100 pairs: interval %v wide, 105 pairs: %v; want narrower with more pairs", hi2-lo2, hi-lo)
	}
	if _, a, b := spread(105); a != lo || b != hi {
		t.Errorf("the same seed gave [%v, %v], then [%v, %v]", lo, hi, a, b)
	}
	if Median([]float64{3, 1, 2, 10}) != 2.5 || Median(nil) != 0 {
		t.Error("Median of an even count is the mean of the middle two, of none 0")
	}
}
