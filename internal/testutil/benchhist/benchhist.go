// Package benchhist holds what the benchmarks that measure a process from
// outside share: a Prometheus histogram read from its /metrics page, the
// quantiles of what it counted between two scrapes with their 95 %
// confidence intervals, and a bootstrap interval for the median of paired
// differences. BenchmarkDispatcherProcess (internal/dispatcher/httpapi) and
// BenchmarkModelGateway (cmd/dispatcher) report their figures with it.
package benchhist

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Histogram is a Prometheus histogram's cumulative counts at its upper
// bounds (seconds), in order; the last bound is +Inf.
type Histogram struct {
	Bounds []float64
	Counts []uint64
}

// Of is m's histogram.
func Of(m *dto.Metric) Histogram {
	var h Histogram
	for _, bk := range m.GetHistogram().GetBucket() {
		h.Bounds = append(h.Bounds, bk.GetUpperBound())
		h.Counts = append(h.Counts, bk.GetCumulativeCount())
	}
	return h
}

// Families reads a /metrics page.
func Families(c *http.Client, url string) (map[string]*dto.MetricFamily, error) {
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: status %d", url, resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	return families, nil
}

// Scrape reads the unlabelled histogram name from a /metrics page.
func Scrape(c *http.Client, url, name string) (Histogram, error) {
	families, err := Families(c, url)
	if err != nil {
		return Histogram{}, err
	}
	fam := families[name]
	if fam == nil || len(fam.GetMetric()) != 1 {
		return Histogram{}, fmt.Errorf("%s: no %s", url, name)
	}
	return Of(fam.GetMetric()[0]), nil
}

// Minus is what was counted between two scrapes.
func (h Histogram) Minus(before Histogram) Histogram {
	out := Histogram{Bounds: h.Bounds, Counts: make([]uint64, len(h.Counts))}
	for i := range h.Counts {
		out.Counts[i] = h.Counts[i]
		if i < len(before.Counts) {
			out.Counts[i] -= before.Counts[i]
		}
	}
	return out
}

// Figures are a histogram's p50 and p99 and their 95 % confidence
// intervals, in ms.
type Figures struct {
	Samples    uint64  `json:"samples"`
	P50Ms      float64 `json:"p50Ms"`
	P50LowMs   float64 `json:"p50LowMs"`
	P50HighMs  float64 `json:"p50HighMs"`
	P99Ms      float64 `json:"p99Ms"`
	P99LowMs   float64 `json:"p99LowMs"`
	P99HighMs  float64 `json:"p99HighMs"`
	Overflowed bool    `json:"overflowed"` // a rank fell past the last finite bucket
}

// Figures are h's p50 and p99 (Quantile).
func (h Histogram) Figures() Figures {
	f := Figures{}
	if len(h.Counts) == 0 {
		return f
	}
	n := h.Counts[len(h.Counts)-1] // the +Inf bucket holds every sample
	f.Samples = n
	if n == 0 {
		return f
	}
	f.P50Ms, f.P50LowMs, f.P50HighMs = h.Quantile(0.50, &f.Overflowed)
	f.P99Ms, f.P99LowMs, f.P99HighMs = h.Quantile(0.99, &f.Overflowed)
	return f
}

// Quantile is the q-quantile as the upper bound of the bucket holding rank
// ⌈qn⌉, and its 95 % confidence interval: the order statistics of ranks
// qn ∓ 1.96·√(nq(1−q)) (the binomial's normal approximation; the upper one
// a rank further), the lower as its bucket's lower bound, the upper as its
// bucket's upper bound. A bucket boundary widens the interval, never
// narrows it. A rank in the +Inf bucket sets *overflowed and is reported
// at the last finite bound.
func (h Histogram) Quantile(q float64, overflowed *bool) (value, low, high float64) {
	n := float64(h.Counts[len(h.Counts)-1])
	half := 1.96 * math.Sqrt(n*q*(1-q))
	rank := func(r float64) uint64 { return uint64(min(max(r, 1), n)) }
	bucket := func(r uint64) int {
		for i, c := range h.Counts {
			if c >= r {
				return i
			}
		}
		return len(h.Counts) - 1
	}
	upper := func(i int) float64 {
		if math.IsInf(h.Bounds[i], 1) {
			*overflowed = true
			return 1000 * h.Bounds[i-1]
		}
		return 1000 * h.Bounds[i]
	}
	lowerOf := func(i int) float64 {
		if i == 0 {
			return 0
		}
		return 1000 * h.Bounds[i-1]
	}
	value = upper(bucket(rank(math.Ceil(q * n))))
	low = lowerOf(bucket(rank(math.Floor(q*n - half))))
	high = upper(bucket(rank(math.Ceil(q*n+half) + 1)))
	return value, low, high
}

// Median is the median of xs (the mean of the middle two for an even
// count); 0 for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// BootstrapMedian is the median of diffs (one difference per pair of
// requests) and its 95 % percentile-bootstrap interval: the 2.5th and
// 97.5th percentiles of the medians of resamples drawn with replacement.
// seed makes it repeatable.
func BootstrapMedian(diffs []float64, resamples int, seed uint64) (median, low, high float64) {
	if len(diffs) == 0 {
		return 0, 0, 0
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	medians := make([]float64, resamples)
	sample := make([]float64, len(diffs))
	for i := range medians {
		for j := range sample {
			sample[j] = diffs[rng.IntN(len(diffs))]
		}
		medians[i] = Median(sample)
	}
	slices.Sort(medians)
	at := func(p float64) float64 {
		return medians[min(len(medians)-1, max(0, int(math.Round(p*float64(len(medians)-1)))))]
	}
	return Median(diffs), at(0.025), at(0.975)
}
