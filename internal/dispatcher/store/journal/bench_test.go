package journal

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkAppend measures Append throughput in runs of 100 events of ~200
// bytes: each run is Begin (begin record fsynced), 100 Appends (one write(2)
// each) and Finish (end record fsynced) — and the same without any fsync, to
// show what the syncs at Begin and Finish cost.
func BenchmarkAppend(b *testing.B) {
	const perRun = 100
	ev := json.RawMessage(`{"delta":"` + strings.Repeat("x", 180) + `"}`)
	for _, bc := range []struct {
		name   string
		noSync bool
	}{
		{"fsync-at-begin-and-finish", false},
		{"no-fsync", true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			j := open(b, b.TempDir(), Options{noSync: bc.noSync})
			var (
				r    *Run
				runs int
				i    int
			)
			b.ReportAllocs()
			for b.Loop() {
				if i%perRun == 0 {
					var err error
					r, _, err = j.Begin(sess, "run-"+strconv.Itoa(runs), digestOf("body"))
					if err != nil {
						b.Fatal(err)
					}
					runs++
				}
				if _, err := r.Append("partial", ev); err != nil {
					b.Fatal(err)
				}
				i++
				if i%perRun == 0 {
					if err := r.Finish(StateFinished, json.RawMessage(`{"ok":true}`)); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
