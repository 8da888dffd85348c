//go:build postgres

package pgstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/pgstore"
	"github.com/openclaw/harness-operator/internal/testutil/pgtest"
)

// TestAWriterRefusesToGoOnWhenTheServerLostItsLatestEvents: an Append
// returns before its event is flushed, so a server that crashes can come
// back without a run's latest events. The run's writer must then not number
// a new event (or the run's end) with a sequence number a reader may have
// seen on a lost one: its Append and Finish are refused, and nothing is
// written. The crash is played by removing the run's last event as the
// server's recovery would leave it.
func TestAWriterRefusesToGoOnWhenTheServerLostItsLatestEvents(t *testing.T) {
	db := pgtest.Shared(t).NewDatabase(t)
	ctx := context.Background()
	st, err := pgstore.Open(ctx, db, pgstore.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	const session, runID = "team-a/0c6f3b0e-7a51-4a4e-9d3b-2f1a9e0c1d2e", "run-1"
	lease, err := st.Acquire(ctx, session, "dispatcher-a", time.Minute)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	run, outcome, err := st.Claim(lease, runID, sha256.Sum256([]byte(runID)), store.Requester{User: "gateway"})
	if err != nil || outcome != store.BeginNew {
		t.Fatalf("Claim: %v, %v", outcome, err)
	}
	for range 3 {
		if _, err := run.Append("partial", json.RawMessage(`{"delta":"x"}`)); err != nil {
			t.Fatalf("Append: %v", err)
		}
	}

	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close(ctx) })
	if _, err := conn.Exec(ctx, `WITH d AS (DELETE FROM events WHERE run = (SELECT id FROM runs WHERE run_id = $1) AND seq = 3)
		UPDATE runs SET last_seq = 2 WHERE run_id = $1`, runID); err != nil {
		t.Fatalf("lose the last event: %v", err)
	}

	if seq, err := run.Append("partial", json.RawMessage(`{"delta":"y"}`)); err == nil || !strings.Contains(err.Error(), "lost the latest") {
		t.Fatalf("Append after the loss: seq %d, %v; want it refused, saying the server lost the latest events", seq, err)
	}
	if err := run.Finish(store.StateFinished, json.RawMessage(`{}`)); err == nil || !strings.Contains(err.Error(), "lost the latest") {
		t.Fatalf("Finish after the loss: %v; want it refused, saying the server lost the latest events", err)
	}
	var lastSeq, events int64
	var state string
	if err := conn.QueryRow(ctx, "SELECT last_seq, state, (SELECT count(*) FROM events WHERE run = runs.id) FROM runs WHERE run_id = $1", runID).
		Scan(&lastSeq, &state, &events); err != nil {
		t.Fatalf("read the run: %v", err)
	}
	if lastSeq != 2 || events != 2 || state != string(store.StateRunning) {
		t.Fatalf("the run after the refused writes: last_seq %d, %d events, %s; want 2, 2, running (Sweep or Recover ends it)", lastSeq, events, state)
	}
}
