//go:build postgres

package pgstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/pgstore"
	"github.com/openclaw/harness-operator/internal/testutil/pgtest"
)

// sentCounter counts the queries and batches a Store's connections send,
// each one round trip, but for the group commit's rounds, which run beside
// the caller's writes.
type sentCounter struct{ n atomic.Int64 }

func (c *sentCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, q pgx.TraceQueryStartData) context.Context {
	if q.SQL != pgstore.GroupCommitStatement {
		c.n.Add(1)
	}
	return ctx
}
func (c *sentCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *sentCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *sentCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (c *sentCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// TestAnAppendAndAFinishAreOneRoundTripEach: the writes of a turn's
// events and of its end each send one statement — the fence check, the
// write and its notification together — not a transaction of several.
func TestAnAppendAndAFinishAreOneRoundTripEach(t *testing.T) {
	ctx := context.Background()
	var sent sentCounter
	st, err := pgstore.Open(ctx, pgtest.Shared(t).NewDatabase(t), pgstore.WithTracer(pgstore.Options{}, &sent))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	const session, runID = "team-a/0c6f3b0e-7a51-4a4e-9d3b-2f1a9e0c1d2e", "run-1"
	lease, err := st.Acquire(ctx, session, "dispatcher-a", time.Minute)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	run, _, err := st.Claim(lease, runID, sha256.Sum256([]byte(runID)), store.Requester{User: "gateway"})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	before := sent.n.Load()
	const appends = 5
	for range appends {
		if _, err := run.Append("partial", json.RawMessage(`{"delta":"x"}`)); err != nil {
			t.Fatalf("Append: %v", err)
		}
	}
	if got := sent.n.Load() - before; got != appends {
		t.Errorf("%d Appends sent %d statements, want one each", appends, got)
	}
	before = sent.n.Load()
	if err := run.Finish(store.StateFinished, json.RawMessage(`{}`)); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	if got := sent.n.Load() - before; got != 1 {
		t.Errorf("Finish sent %d statements, want one", got)
	}
}

// TestHoldsIsOneIndexedRoundTrip: the model gateway asks Holds on every
// model request, so it costs one statement, and the database answers it
// from the leases table's primary key, however many sessions hold a lease.
func TestHoldsIsOneIndexedRoundTrip(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Shared(t).NewDatabase(t)
	var sent sentCounter
	st, err := pgstore.Open(ctx, db, pgstore.WithTracer(pgstore.Options{}, &sent))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	const session = "team-a/0c6f3b0e-7a51-4a4e-9d3b-2f1a9e0c1d2e"
	lease, err := st.Acquire(ctx, session, "dispatcher-a", time.Minute)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	before := sent.n.Load()
	if holds, err := st.Holds(ctx, session, lease.Token); err != nil || !holds {
		t.Fatalf("Holds of the current grant = %v, %v; want true", holds, err)
	}
	if got := sent.n.Load() - before; got != 1 {
		t.Errorf("Holds sent %d statements, want one", got)
	}

	// Many sessions' leases, so that the planner would rather not read them all.
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer func() { _ = conn.Close(ctx) }()
	if _, err := conn.Exec(ctx, `INSERT INTO leases (session, owner, token, expires)
		SELECT 'team-b/' || n, 'dispatcher-b', nextval('lease_tokens'), now() + interval '1 minute'
		FROM generate_series(1, 10000) AS n`); err != nil {
		t.Fatalf("insert leases: %v", err)
	}
	if _, err := conn.Exec(ctx, "ANALYZE leases"); err != nil {
		t.Fatalf("ANALYZE: %v", err)
	}
	// EXPLAIN takes no parameters: it explains the statement prepared as
	// Holds' is, executed with the session's and the token's values.
	if _, err := conn.Exec(ctx, "PREPARE holds (text, bigint) AS "+pgstore.HoldsStatement, pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatalf("PREPARE: %v", err)
	}
	rows, err := conn.Query(ctx, fmt.Sprintf("EXPLAIN EXECUTE holds ('%s', %d)", session, lease.Token), pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatalf("EXPLAIN: %v", err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("EXPLAIN: %v", err)
	}
	if plan := strings.Join(lines, "\n"); !strings.Contains(plan, "leases_pkey") {
		t.Errorf("Holds' plan reads no index of leases' primary key:\n%s", plan)
	}
}
