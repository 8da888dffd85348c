//go:build postgres

package pgstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/pgstore"
	"github.com/openclaw/harness-operator/internal/testutil/pgtest"
)

const secSession = "team-a/5d0f7c1e-2b9a-4c3d-8e6f-1a2b3c4d5e6f"

// openOn opens a Store on db, closed with the test.
func openOn(t *testing.T, db string, opts pgstore.Options) *pgstore.Store {
	t.Helper()
	st, err := pgstore.Open(context.Background(), db, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// dbConn is a plain connection to db, for reading what the Store wrote.
func dbConn(t *testing.T, db string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// claimRun acquires the session for owner and claims runID under it.
func claimRun(t *testing.T, st store.Store, owner, runID string) (store.Lease, store.Run) {
	t.Helper()
	lease, err := st.Acquire(context.Background(), secSession, owner, time.Minute)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	run, outcome, err := st.Claim(lease, runID, sha256.Sum256([]byte(runID)), store.Requester{User: "gateway"})
	if err != nil || outcome != store.BeginNew {
		t.Fatalf("Claim: %v, %v", outcome, err)
	}
	return lease, run
}

// readInbox reads the run's inbox until it has n messages.
func readInbox(t *testing.T, st store.Store, ref store.RunRef, n int) []store.InboxMessage {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []store.InboxMessage
	for m, err := range st.Inbox(ctx, ref, 0) {
		if err != nil {
			t.Fatalf("Inbox: %v", err)
		}
		if got = append(got, m); len(got) == n {
			break
		}
	}
	return got
}

// TestARunsInboxRefusesWhatPassesItsLimits: a poster cannot fill the
// database through one run's inbox. The message over the count limit, and
// the one whose payload would pass the byte limit, are refused with
// ErrInboxFull naming the limit, and nothing of them is written; the
// messages within the limits are kept and delivered.
func TestARunsInboxRefusesWhatPassesItsLimits(t *testing.T) {
	db := pgtest.Shared(t).NewDatabase(t)
	st := openOn(t, db, pgstore.Options{MaxInboxMessages: 3, MaxInboxBytes: 64})
	conn := dbConn(t, db)
	_, run := claimRun(t, st, "dispatcher-a", "run-1")
	ref := run.Ref()

	post := func(key, payload string) error {
		_, err := st.Post(ref.Session, ref.RunID, store.InboxMessage{Kind: store.InboxToolResult, Key: key, Payload: json.RawMessage(payload)})
		return err
	}
	if err := post("call-1", `{"output":"`+strings.Repeat("x", 40)+`"}`); err != nil {
		t.Fatalf("Post within the limits: %v", err)
	}
	// 53 bytes are kept; 20 more would pass 64.
	err := post("call-2", `{"output":"xxxxxxx"}`)
	if !errors.Is(err, pgstore.ErrInboxFull) || !strings.Contains(err.Error(), "MaxInboxBytes") {
		t.Fatalf("Post over the byte limit: %v; want ErrInboxFull naming MaxInboxBytes", err)
	}
	for _, key := range []string{"call-3", "call-4"} {
		if err := post(key, `{}`); err != nil {
			t.Fatalf("Post %s within the limits: %v", key, err)
		}
	}
	err = post("call-5", `{}`)
	if !errors.Is(err, pgstore.ErrInboxFull) || !strings.Contains(err.Error(), "holds 3 messages") || !strings.Contains(err.Error(), "MaxInboxMessages") {
		t.Fatalf("the fourth Post: %v; want ErrInboxFull saying the run holds 3 messages (MaxInboxMessages)", err)
	}

	var keys []string
	rows, err := conn.Query(context.Background(), "SELECT key FROM inbox ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	if keys, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	if strings.Join(keys, ",") != "call-1,call-3,call-4" {
		t.Fatalf("the inbox holds %v, want call-1, call-3 and call-4: a refused Post writes nothing", keys)
	}
	got := readInbox(t, st, ref, 3)
	if got[0].Key != "call-1" || got[2].Key != "call-4" || got[2].Seq != 3 {
		t.Fatalf("delivered %+v, want call-1, call-3, call-4 numbered 1 to 3", got)
	}
}

// TestSecretAnswersLeaveTheDatabaseWithTheRun: a user-input answer may be a
// secret a question asked for. It reaches the turn's owner through the
// database, and when the run ends — finished by its writer, or ended by
// Sweep after its dispatcher died — its value is gone from every table,
// as the file journal never writes it. The tool result posted beside it,
// which the run's events hold anyway, stays.
func TestSecretAnswersLeaveTheDatabaseWithTheRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(t *testing.T, st *pgstore.Store, conn *pgx.Conn, run store.Run)
	}{
		{"finished by its writer", func(t *testing.T, _ *pgstore.Store, _ *pgx.Conn, run store.Run) {
			if err := run.Finish(store.StateFinished, json.RawMessage(`{"status":"completed"}`)); err != nil {
				t.Fatalf("Finish: %v", err)
			}
		}},
		{"ended by Sweep after its dispatcher died", func(t *testing.T, st *pgstore.Store, conn *pgx.Conn, _ store.Run) {
			expireLeases(t, conn)
			ended, err := st.Sweep(context.Background(), "the dispatcher running it died")
			if err != nil || len(ended) != 1 {
				t.Fatalf("Sweep: %v, %v; want the run ended", ended, err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := pgtest.Shared(t).NewDatabase(t)
			st := openOn(t, db, pgstore.Options{})
			conn := dbConn(t, db)
			_, run := claimRun(t, st, "dispatcher-a", "run-1")
			ref := run.Ref()
			const secret, output = "s3cret-pass-4e1f", "tool-output-9a7c"
			answer := `{"requestId":"req-1","answers":{"password":{"text":"` + secret + `"}}}`
			if _, err := st.Post(ref.Session, ref.RunID, store.InboxMessage{Kind: store.InboxUserInput, Key: "req-1", Payload: json.RawMessage(answer)}); err != nil {
				t.Fatalf("Post the answer: %v", err)
			}
			if _, err := st.Post(ref.Session, ref.RunID, store.InboxMessage{Kind: store.InboxToolResult, Key: "call-1",
				Payload: json.RawMessage(`{"output":"` + output + `"}`)}); err != nil {
				t.Fatalf("Post the tool result: %v", err)
			}
			got := readInbox(t, st, ref, 2)
			if string(got[0].Payload) != answer || !strings.Contains(string(got[1].Payload), output) {
				t.Fatalf("delivered %s and %s, want the answer and the tool result as posted", got[0].Payload, got[1].Payload)
			}

			tc.end(t, st, conn, run)

			if where := findInDatabase(t, conn, secret); len(where) != 0 {
				t.Fatalf("the secret answer is still in %v after the run ended", where)
			}
			if where := findInDatabase(t, conn, output); len(where) == 0 {
				t.Fatalf("the tool result is gone from the database: only user-input answers are erased")
			}
		})
	}
}

// findInDatabase names the tables of the public schema with a row whose
// text contains needle.
func findInDatabase(t *testing.T, conn *pgx.Conn, needle string) []string {
	t.Helper()
	ctx := context.Background()
	rows, err := conn.Query(ctx, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, table := range tables {
		// Every column as text; bytea columns with their printable bytes
		// as they are (the payloads are JSON).
		rows, err := conn.Query(ctx, `SELECT column_name, data_type FROM information_schema.columns
			WHERE table_schema = 'public' AND table_name = $1`, table)
		if err != nil {
			t.Fatal(err)
		}
		type column struct{ name, typ string }
		cols, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (column, error) {
			var c column
			return c, r.Scan(&c.name, &c.typ)
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cols {
			expr := pgx.Identifier{c.name}.Sanitize() + "::text"
			if c.typ == "bytea" {
				expr = "encode(" + pgx.Identifier{c.name}.Sanitize() + ", 'escape')"
			}
			var n int
			q := "SELECT count(*) FROM " + pgx.Identifier{table}.Sanitize() + " WHERE strpos(" + expr + ", $1) > 0"
			if err := conn.QueryRow(ctx, q, needle).Scan(&n); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if n > 0 {
				found = append(found, table+"."+c.name)
			}
		}
	}
	return found
}

// expireLeases makes every lease expired on the database's clock.
func expireLeases(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), "UPDATE leases SET expires = now() - interval '1 second'"); err != nil {
		t.Fatal(err)
	}
}

// TestASkewedReplicaCannotTakeALiveLease: dispatchers on one database do
// not compare their own clocks with each other's expiry times. A replica
// whose clock runs an hour ahead waits for a lease that is live on the
// database's clock, and the holder keeps writing; once the lease expired
// on the database's clock, the same replica takes it at once.
func TestASkewedReplicaCannotTakeALiveLease(t *testing.T) {
	db := pgtest.Shared(t).NewDatabase(t)
	a := openOn(t, db, pgstore.Options{})
	ahead := clocktesting.NewFakeClock(time.Now().Add(time.Hour))
	b := openOn(t, db, pgstore.Options{Clock: ahead})
	conn := dbConn(t, db)
	held, run := claimRun(t, a, "dispatcher-a", "run-1")

	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		lease store.Lease
		err   error
	}
	done := make(chan result, 1)
	go func() {
		l, err := b.Acquire(ctx, secSession, "dispatcher-b", time.Minute)
		done <- result{l, err}
	}()
	// A timer on the replica's clock means it found the lease live and
	// waits for the grant's end.
	tick := time.NewTicker(time.Millisecond)
	for !ahead.HasWaiters() {
		select {
		case r := <-done:
			cancel()
			t.Fatalf("the replica whose clock runs an hour ahead took the live lease: %+v, %v", r.lease, r.err)
		case <-tick.C:
		}
	}
	tick.Stop()
	cancel()
	if r := <-done; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("Acquire = %+v, %v; want it waiting until cancelled", r.lease, r.err)
	}
	if _, err := a.Renew(context.Background(), held, time.Minute); err != nil {
		t.Fatalf("the holder's Renew: %v; want its lease still held", err)
	}
	if _, err := run.Append("partial", json.RawMessage(`{"delta":"x"}`)); err != nil {
		t.Fatalf("the holder's Append: %v", err)
	}

	// Control: expired on the database's clock, the lease is taken.
	expireLeases(t, conn)
	taken, err := b.Acquire(context.Background(), secSession, "dispatcher-b", time.Minute)
	if err != nil || taken.Token <= held.Token {
		t.Fatalf("Acquire of the expired lease: %+v, %v; want a newer grant than %d", taken, err, held.Token)
	}
	if _, err := a.Renew(context.Background(), held, time.Minute); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("the old holder's Renew after the takeover: %v, want ErrFenced", err)
	}
}

// TestASkewedReplicaDoesNotEndALiveRun: Sweep on a replica whose clock
// runs an hour ahead leaves the run of a lease that is live on the
// database's clock running; once that lease expired there, Sweep ends it.
func TestASkewedReplicaDoesNotEndALiveRun(t *testing.T) {
	db := pgtest.Shared(t).NewDatabase(t)
	a := openOn(t, db, pgstore.Options{})
	b := openOn(t, db, pgstore.Options{Clock: clocktesting.NewFakeClock(time.Now().Add(time.Hour))})
	conn := dbConn(t, db)
	_, run := claimRun(t, a, "dispatcher-a", "run-1")

	if ended, err := b.Sweep(context.Background(), "its dispatcher died"); err != nil || len(ended) != 0 {
		t.Fatalf("Sweep by the replica whose clock runs ahead: ended %v, %v; want nothing ended (the lease is live)", ended, err)
	}
	if _, err := run.Append("partial", json.RawMessage(`{"delta":"x"}`)); err != nil {
		t.Fatalf("the holder's Append after the Sweep: %v", err)
	}

	// Control: expired on the database's clock, the run is ended.
	expireLeases(t, conn)
	ended, err := b.Sweep(context.Background(), "its dispatcher died")
	if err != nil || len(ended) != 1 || ended[0].RunID != "run-1" {
		t.Fatalf("Sweep after the lease expired: %v, %v; want run-1 ended", ended, err)
	}
}
