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

	"github.com/jackc/pgx/v5"

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
// transcript records, the run's end, the transcript's sync, the lease's
// release. The postgres serial arm also reports the round trips its
// connections make per turn (round-trips/turn) and the server's WAL
// flushes per turn (wal-flushes/turn, from pg_stat_wal.wal_sync).
// PostgreSQL runs with its default durability (pgtest.StartDurable), as the
// journal fsyncs: a test server's fsync=off would make its commits free.
// "serial" is one session's turns one after another; "parallel" is turns of
// GOMAXPROCS×4 sessions at once. Each iteration is one turn, so ns/op is the
// store's overhead per turn.
func BenchmarkTurnOverhead(b *testing.B) {
	srv := pgtest.StartDurable(b)
	b.Run("files/serial", func(b *testing.B) {
		st := openJournal(b)
		defer func() { _ = st.Close() }()
		serialTurns(b, st)
	})
	b.Run("files/parallel", func(b *testing.B) {
		st := openJournal(b)
		defer func() { _ = st.Close() }()
		parallelTurns(b, st)
	})
	b.Run("postgres/serial", func(b *testing.B) {
		db := srv.NewDatabase(b)
		var trips roundTrips
		st := openPostgres(b, db, &trips)
		// The migrations' flushes are counted before the turns: their
		// connections report their WAL statistics when they end.
		_ = st.Close()
		waitDisconnected(b, srv, db)
		before := walSyncs(b, srv)
		st = openPostgres(b, db, &trips)
		trips.n.Store(0)
		serialTurns(b, st)
		b.StopTimer()
		sent := trips.n.Load()
		_ = st.Close()
		waitDisconnected(b, srv, db)
		b.ReportMetric(float64(sent)/float64(b.N), "round-trips/turn")
		b.ReportMetric(float64(walSyncs(b, srv)-before)/float64(b.N), "wal-flushes/turn")
	})
	b.Run("postgres/parallel", func(b *testing.B) {
		st := openPostgres(b, srv.NewDatabase(b), nil)
		defer func() { _ = st.Close() }()
		parallelTurns(b, st)
	})
}

func openJournal(b *testing.B) store.Store {
	j, err := journal.Open(b.TempDir(), journal.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return j
}

func openPostgres(b *testing.B, db string, trips *roundTrips) store.Store {
	opts := pgstore.Options{}
	if trips != nil {
		opts = pgstore.WithTracer(opts, trips)
	}
	st, err := pgstore.Open(context.Background(), db, opts)
	if err != nil {
		b.Fatal(err)
	}
	return st
}

// serialTurns is one session's turns one after another.
func serialTurns(b *testing.B, st store.Store) {
	var n atomic.Int64
	b.ReportAllocs()
	for b.Loop() {
		oneTurn(b, st, "bench/0a6d3b1c-0000-4000-8000-000000000000", n.Add(1))
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/turn")
}

// parallelTurns is turns of GOMAXPROCS×4 sessions at once.
func parallelTurns(b *testing.B, st store.Store) {
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
}

// roundTrips counts what the Store's connections send and wait for: each
// query (Exec, Query, QueryRow — BEGIN and COMMIT among them), each batch
// (one round trip, however many statements) and each explicit prepare.
// Connections that pgxpool pings before reuse are not counted.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}
func (r *roundTrips) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}

// walSyncs is the server's WAL flushes so far (pg_stat_wal.wal_sync,
// PostgreSQL 14 and later): every backend's that has ended and the WAL
// writer's, which flushes what commits without synchronous_commit left.
func walSyncs(b *testing.B, srv *pgtest.Server) int64 {
	conn, err := pgx.Connect(context.Background(), srv.ConnString("postgres"))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	var n int64
	if err := conn.QueryRow(context.Background(), "SELECT wal_sync FROM pg_stat_wal").Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

// waitDisconnected waits until no backend serves the database of connString:
// a backend reports its WAL statistics when it ends.
func waitDisconnected(b *testing.B, srv *pgtest.Server, connString string) {
	cfg, err := pgx.ParseConfig(connString)
	if err != nil {
		b.Fatal(err)
	}
	conn, err := pgx.Connect(context.Background(), srv.ConnString("postgres"))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	for deadline := time.Now().Add(time.Minute); ; {
		var n int
		if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_stat_activity WHERE datname = $1", cfg.Database).Scan(&n); err != nil {
			b.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d backends still serve database %s", n, cfg.Database)
		}
		time.Sleep(10 * time.Millisecond)
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
	// The engine's order: the run's end, then the transcript's sync.
	if err := run.Finish(store.StateFinished, json.RawMessage(`{"terminal":{"kind":"ok"}}`)); err != nil {
		b.Fatal(err)
	}
	if err := st.SyncTranscript(session); err != nil {
		b.Fatal(err)
	}
	if err := st.Release(ctx, lease); err != nil {
		b.Fatal(err)
	}
}
