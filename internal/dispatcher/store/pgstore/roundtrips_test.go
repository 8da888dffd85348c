//go:build postgres

package pgstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
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
