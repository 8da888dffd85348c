//go:build postgres

package httpapi_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/dispatcher/engine"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/pgstore"
	"github.com/openclaw/harness-operator/internal/testutil/pgtest"
)

const (
	// storeBenchTurns is the timed turns per arm at each level.
	storeBenchTurns = 200
	storeBenchUsage = "POSTGRES_DIR=$(hack/setup-postgres.sh) KUBEBUILDER_ASSETS=... CODEX_BIN=$(hack/setup-codex.sh) " +
		"go test -tags postgres -run '^$' -bench BenchmarkDispatcherStoreOverhead -benchtime 1x ./internal/dispatcher/httpapi/ (make bench-store)"
)

// storeBenchLevels are the sessions per arm whose turns run at once.
var storeBenchLevels = []int{1, 10}

// storeArmNames name the arms of BenchmarkDispatcherStoreOverhead, in the
// order of its arms.
var storeArmNames = [2]string{"files", "postgres"}

// BenchmarkDispatcherStoreOverhead is a turn as a gateway sees it through the
// dispatcher on each store, the file journal and PostgreSQL side by side in
// one run (`make bench-store` runs it after the store-level
// BenchmarkTurnOverhead of internal/dispatcher/store/pgstore).
//
// One run has the dispatcher benchmarks' setup (startBenchEnv: envtest, one
// real `codex app-server`, the stub model, a gateway ServiceAccount), a
// real PostgreSQL with its default durability (pgtest.StartDurable: every
// commit that waits for it is flushed to the disk, as the journal fsyncs a
// run's begin and end; a server of its own on 127.0.0.1, one database) and
// two arms (newArm), each its own engine, Handler, TLS server and
// sessions, on the same control plane, app-server and stub model:
//
//   - files: the journal in a temporary directory (the default store);
//   - postgres: pgstore.Open on the database, the engine with SharedStore as
//     cmd/dispatcher runs it on PostgreSQL (a turn follows its inbox).
//
// Every turn is a trivial one through the HTTP API (benchArm.viaHTTP): POST
// …/turns with the gateway's token over TLS, the SSE stream read to
// `result` — the time a gateway waits — then to its end (the run's end is in
// the store), then until the session's lease is free again (the engine's
// turn is over: its status writes, the run's end, the transcript's sync and
// the lease's release; observed by a second client of the store, so on
// PostgreSQL it includes a NOTIFY's wake).
//
// The arms take turns by rounds: a round is one turn of each of the level's
// sessions on one arm, at once, then the same on the other arm; the arm that
// goes first alternates (files, postgres, postgres, files, …), so drifts in
// load and whatever a turn leaves behind on the shared app-server hit both
// arms alike. Levels: 1 session per arm (turn after turn) and 10 (ten turns
// at once, each timed on its own). The paired difference is postgres − files
// of the turns of one round and session index. One untimed warm-up turn per
// session first creates its Codex thread, its pool connection and the first
// auth verdict. Timings are reported, never asserted.
//
// Run it (it needs the build tag and -benchtime 1x: the stub model is
// scripted for one iteration):
//
//	POSTGRES_DIR=$(hack/setup-postgres.sh) KUBEBUILDER_ASSETS=… CODEX_BIN=$(hack/setup-codex.sh) \
//	  go test -tags postgres -run '^$' -bench BenchmarkDispatcherStoreOverhead -benchtime 1x ./internal/dispatcher/httpapi/
func BenchmarkDispatcherStoreOverhead(b *testing.B) {
	pg := pgtest.StartDurable(b)
	turns := 0
	for _, c := range storeBenchLevels {
		turns += c + storeBenchTurns // the warm-ups and the timed turns of one arm
	}
	env := startBenchEnv(b, 2*turns*b.N, storeBenchUsage)
	jrnl, err := journal.Open(b.TempDir(), journal.Options{})
	benchMust(b, err)
	b.Cleanup(func() { _ = jrnl.Close() })
	pgs, err := pgstore.Open(env.ctx, pg.NewDatabase(b), pgstore.Options{})
	benchMust(b, err)
	b.Cleanup(func() { _ = pgs.Close() })
	arms := [2]*benchArm{
		env.newArm(b, jrnl, engine.Options{Owner: "bench-files"}),
		env.newArm(b, pgs, engine.Options{Owner: "bench-postgres", SharedStore: true}),
	}
	for _, c := range storeBenchLevels {
		b.Run(fmt.Sprintf("sessions=%d", c), func(b *testing.B) { benchStoreLevel(b, env, arms, c) })
	}
}

// benchStoreLevel times storeBenchTurns turns per arm, c sessions per arm at
// once.
func benchStoreLevel(b *testing.B, env *benchEnv, arms [2]*benchArm, c int) {
	var sessions [2][]benchSession
	for k := range arms {
		for i := range c {
			sessions[k] = append(sessions[k], env.newSession(b, benchNS, fmt.Sprintf("%s-%d-%d", storeArmNames[k], c, i)))
		}
		_, err := arms[k].round(sessions[k], "warm")
		benchMust(b, err)
	}
	var got [2][]httpTiming
	b.ResetTimer()
	for n := range b.N {
		for r := range storeBenchTurns / c {
			for j := range arms {
				k := (r + j) % 2 // files first in even rounds, postgres in odd ones
				ts, err := arms[k].round(sessions[k], fmt.Sprintf("%d-%d", n, r))
				benchMust(b, err)
				got[k] = append(got[k], ts...)
			}
		}
	}
	b.StopTimer()
	reportStores(b, c, got)
}

// round runs one turn of each session at once and returns their timings in
// the sessions' order.
func (a *benchArm) round(sessions []benchSession, id string) ([]httpTiming, error) {
	ts := make([]httpTiming, len(sessions))
	errs := make([]error, len(sessions))
	var wg sync.WaitGroup
	for i, s := range sessions {
		wg.Go(func() { ts[i], errs[i] = a.viaHTTP(s, s.name+"-"+id) })
	}
	wg.Wait()
	return ts, errors.Join(errs...)
}

// reportStores reports each arm's p50 and p99 and the paired difference
// (postgres − files) of each of httpTiming's points.
func reportStores(b *testing.B, c int, got [2][]httpTiming) {
	points := []struct {
		name, metric string
		of           func(httpTiming) time.Duration
	}{
		{"to result", "", func(t httpTiming) time.Duration { return t.result }},
		{"to the stream's end", "end-", func(t httpTiming) time.Duration { return t.end }},
		{"to the lease free", "settled-", func(t httpTiming) time.Duration { return t.settled }},
	}
	b.Logf("%d turns per arm, %d session(s) per arm at once; rounds interleaved, the first arm alternating", len(got[0]), c)
	b.Logf("%-20s %21s %21s %25s", "", "files p50 / p99 ms", "postgres p50 / p99 ms", "paired diff p50 / p99 ms")
	for _, p := range points {
		var arm [2][]float64
		var diffs []float64
		for i := range got[0] {
			f, q := ms(p.of(got[0][i])), ms(p.of(got[1][i]))
			arm[0], arm[1], diffs = append(arm[0], f), append(arm[1], q), append(diffs, q-f)
		}
		fields := []float64{
			percentile(arm[0], 50), percentile(arm[0], 99), percentile(arm[1], 50), percentile(arm[1], 99),
			percentile(diffs, 50), percentile(diffs, 99),
		}
		for i, unit := range []string{"files-p50-ms", "files-p99-ms", "postgres-p50-ms", "postgres-p99-ms", "diff-p50-ms", "diff-p99-ms"} {
			b.ReportMetric(fields[i], p.metric+unit)
		}
		b.Logf("%-20s %10.2f / %8.2f %10.2f / %8.2f %12.2f / %10.2f", p.name, fields[0], fields[1], fields[2], fields[3], fields[4], fields[5])
	}
}
