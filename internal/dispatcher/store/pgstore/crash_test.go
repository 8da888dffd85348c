//go:build postgres

package pgstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/openclaw/harness-operator/internal/dispatcher/store/pgstore"
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
