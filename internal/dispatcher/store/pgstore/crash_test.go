//go:build postgres

package pgstore_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/pgstore"
	"github.com/openclaw/harness-operator/internal/testutil/goroutines"
	"github.com/openclaw/harness-operator/internal/testutil/pgtest"
)

// crash crashes the server and starts it again on the same data.
func crash(t *testing.T, srv *pgtest.Server) {
	t.Helper()
	if err := srv.Crash(); err != nil {
		t.Fatalf("Crash: %v", err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatalf("Restart: %v", err)
	}
}

// waitForEvent waits until an Events iterator waits for the next event:
// blocked in its own select, after reading (not in a wait for a
// connection, deeper down, which is a select too).
func waitForEvent(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		for _, g := range goroutines.Stacks() {
			header, frames, _ := strings.Cut(g, "\n")
			if strings.Contains(header, "[select") && strings.HasPrefix(frames, "github.com/openclaw/harness-operator/internal/dispatcher/store/pgstore.(*run).Events") {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no Events iterator waits for the next event")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSyncedTranscriptAppendsSurviveACrash: transcript appends commit
// without waiting for their flush, so SyncTranscript must flush them — no
// other commit does here — before the engine reports the turn.
func TestSyncedTranscriptAppendsSurviveACrash(t *testing.T) {
	srv := pgtest.StartCrashable(t)
	db := srv.NewDatabase(t)
	ctx := context.Background()
	st, err := pgstore.Open(ctx, db, pgstore.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	const session = "team-a/0c6f3b0e-7a51-4a4e-9d3b-2f1a9e0c1d2e"
	var want strings.Builder
	for i := range 3 {
		rec := fmt.Sprintf(`{"type":"message","i":%d}`, i)
		if err := st.AppendTranscript(session, json.RawMessage(rec)); err != nil {
			t.Fatalf("AppendTranscript: %v", err)
		}
		want.WriteString(rec + "\n")
	}
	if err := st.SyncTranscript(session); err != nil {
		t.Fatalf("SyncTranscript: %v", err)
	}
	_ = st.Close()
	crash(t, srv)

	st, err = pgstore.Open(ctx, db, pgstore.Options{})
	if err != nil {
		t.Fatalf("Open after the crash: %v", err)
	}
	defer func() { _ = st.Close() }()
	var got bytes.Buffer
	if _, err := st.ReadTranscript(session, &got); err != nil {
		t.Fatalf("ReadTranscript: %v", err)
	}
	if got.String() != want.String() {
		t.Fatalf("the synced transcript after a crash:\n%s\nwant\n%s", got.String(), want.String())
	}
}

// TestReadersResumeExactlyOnceAcrossAServerCrash: the server crashes in
// the middle of a turn, losing the events appended since the last group
// commit. A reader was never shown those, so none it saw is lost; the
// writer appends them again under their numbers once the server is back,
// and a reader that reconnects after the last event it saw gets every
// later event once, in order, as appended.
func TestReadersResumeExactlyOnceAcrossAServerCrash(t *testing.T) {
	srv := pgtest.StartCrashable(t)
	db := srv.NewDatabase(t)
	ctx := context.Background()
	openStore := func() *pgstore.Store {
		t.Helper()
		st, err := pgstore.Open(ctx, db, pgstore.Options{})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	writer, reader := openStore(), openStore()
	const session, runID = "team-a/0c6f3b0e-7a51-4a4e-9d3b-2f1a9e0c1d2e", "run-1"
	lease, err := writer.Acquire(ctx, session, "dispatcher-a", time.Minute)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	run, _, err := writer.Claim(lease, runID, sha256.Sum256([]byte(runID)), store.Requester{User: "gateway"})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	event := func(i int64) json.RawMessage { return json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)) }
	appendEvents := func(from, to int64) {
		t.Helper()
		for i := from; i <= to; i++ {
			if seq, err := run.Append("partial", event(i)); err != nil || seq != i {
				t.Fatalf("Append %d: seq %d, %v", i, seq, err)
			}
		}
	}
	appendEvents(1, 3)
	// A reader follows the run and is shown 1–3 once a group commit
	// flushed them.
	found, err := reader.FindRun(session, runID)
	if err != nil {
		t.Fatalf("FindRun: %v", err)
	}
	followCtx, stopFollowing := context.WithCancel(ctx)
	shown := make(chan store.Event, 16)
	followed := make(chan error, 1)
	go func() {
		for ev, err := range found.Events(followCtx, 0) {
			if err != nil {
				followed <- err
				return
			}
			shown <- ev
		}
		followed <- nil
	}()
	var lastSeen int64
	for lastSeen < 3 {
		select {
		case ev := <-shown:
			lastSeen = ev.Seq
		case err := <-followed:
			t.Fatalf("the reader stopped after %d: %v", lastSeen, err)
		case <-time.After(30 * time.Second):
			t.Fatalf("the reader was shown up to %d, want 3", lastSeen)
		}
	}
	stopFollowing()
	<-followed
	// 4 and 5 commit, but no group commit flushes them: a reader reading
	// on after 3 is not shown them, and waits.
	resume := pgstore.PauseGroupCommit(writer)
	appendEvents(4, 5)
	followCtx, stopFollowing = context.WithCancel(ctx)
	go func() {
		for ev, err := range found.Events(followCtx, lastSeen) {
			if err != nil {
				followed <- err
				return
			}
			shown <- ev
		}
		followed <- nil
	}()
	waitForEvent(t)
	select {
	case ev := <-shown:
		t.Fatalf("the reader was shown event %d, which no flush has made durable", ev.Seq)
	default:
	}
	stopFollowing()
	<-followed

	crash(t, srv)
	resume()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatalf("connect after the crash: %v", err)
	}
	var held int64
	err = conn.QueryRow(ctx, "SELECT last_seq FROM runs WHERE run_id = $1", runID).Scan(&held)
	_ = conn.Close(ctx)
	if err != nil || held != 3 {
		t.Fatalf("the run after the crash holds events up to %d (%v), want 3: the crash must lose the unflushed 4 and 5", held, err)
	}
	// The writer's dispatcher finds the server back (its readiness check
	// drops the connections the crash broke) and goes on with its turn.
	for deadline := time.Now().Add(30 * time.Second); writer.Ping(ctx) != nil; {
		if time.Now().After(deadline) {
			t.Fatal("the writer's Store did not reach the restarted server")
		}
	}
	appendEvents(6, 8)
	if err := run.Finish(store.StateFinished, json.RawMessage(`{"ok":true}`)); err != nil {
		t.Fatalf("Finish: %v", err)
	}

	// The reader reconnects, to another dispatcher, after the last event it
	// was shown.
	again, err := openStore().FindRun(session, runID)
	if err != nil {
		t.Fatalf("FindRun after the crash: %v", err)
	}
	readCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	want := lastSeen + 1
	for ev, err := range again.Events(readCtx, lastSeen) {
		if err != nil {
			t.Fatalf("Events after %d: %v", lastSeen, err)
		}
		if ev.Seq != want || string(ev.Payload) != string(event(want)) {
			t.Fatalf("after reconnecting the reader got seq %d %s, want seq %d %s", ev.Seq, ev.Payload, want, event(want))
		}
		want++
	}
	if want != 9 {
		t.Fatalf("after reconnecting the reader got events up to %d, want every one up to 8", want-1)
	}
}
