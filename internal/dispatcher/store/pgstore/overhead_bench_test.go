//go:build postgres

package pgstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/pgstore"
	"github.com/openclaw/harness-operator/internal/testutil/pgtest"
)

// eventsPerTurn is a short turn's journal: selected, a few dozen partials,
// a tool call and its terminal, the result.
const eventsPerTurn = 40

// BenchmarkTurnOverhead is what the store adds to one turn, the file journal
// and PostgreSQL side by side in one run (`make bench-store`): the session's
// lease, the claim of a new runId, eventsPerTurn events of ~200 bytes, two
// transcript records and their sync, the run's end, the lease's release.
// PostgreSQL runs with its default durability (pgtest.StartDurable), as the
// journal fsyncs: a test server's fsync=off would make its commits free.
// "serial" is one session's turns one after another; "parallel" is turns of
// GOMAXPROCS×4 sessions at once. Each iteration is one turn, so ns/op is the
// store's overhead per turn.
func BenchmarkTurnOverhead(b *testing.B) {
	srv := pgtest.StartDurable(b)
	stores := []struct {
		name string
		open func(b *testing.B) store.Store
	}{
		{"files", func(b *testing.B) store.Store {
			j, err := journal.Open(b.TempDir(), journal.Options{})
			if err != nil {
				b.Fatal(err)
			}
			return j
		}},
		{"postgres", func(b *testing.B) store.Store {
			st, err := pgstore.Open(context.Background(), srv.NewDatabase(b), pgstore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			return st
		}},
	}
	for _, s := range stores {
		b.Run(s.name+"/serial", func(b *testing.B) {
			st := s.open(b)
			defer func() { _ = st.Close() }()
			var n atomic.Int64
			b.ReportAllocs()
			for b.Loop() {
				oneTurn(b, st, "bench/0a6d3b1c-0000-4000-8000-000000000000", n.Add(1))
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/turn")
		})
		b.Run(s.name+"/parallel", func(b *testing.B) {
			st := s.open(b)
			defer func() { _ = st.Close() }()
			var sessions, n atomic.Int64
			b.SetParallelism(4)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				session := fmt.Sprintf("bench/0a6d3b1c-0000-4000-8000-%012d", sessions.Add(1))
				for pb.Next() {
					oneTurn(b, st, session, n.Add(1))
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "turns/s")
		})
	}
}

var (
	benchEvent  = json.RawMessage(`{"itemId":"msg_1","delta":"` + strings.Repeat("x", 170) + `"}`)
	benchRecord = json.RawMessage(`{"type":"message","role":"assistant","text":"` + strings.Repeat("y", 170) + `"}`)
)

func oneTurn(b *testing.B, st store.Store, session string, n int64) {
	ctx := context.Background()
	lease, err := st.Acquire(ctx, session, "bench", time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	runID := "run-" + strconv.FormatInt(n, 10)
	run, outcome, err := st.Claim(lease, runID, sha256.Sum256([]byte(runID)), store.Requester{User: "bench"})
	if err != nil || outcome != store.BeginNew {
		b.Fatalf("Claim %s: %v, %v", runID, outcome, err)
	}
	for range eventsPerTurn {
		if _, err := run.Append("partial", benchEvent); err != nil {
			b.Fatal(err)
		}
	}
	if err := st.AppendTranscript(session, benchRecord, benchRecord); err != nil {
		b.Fatal(err)
	}
	if err := st.SyncTranscript(session); err != nil {
		b.Fatal(err)
	}
	if err := run.Finish(store.StateFinished, json.RawMessage(`{"terminal":{"kind":"ok"}}`)); err != nil {
		b.Fatal(err)
	}
	if err := st.Release(ctx, lease); err != nil {
		b.Fatal(err)
	}
}
