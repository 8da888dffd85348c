package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

var transcriptBehaviours = []behaviour{
	{name: "TranscriptIsAppendedAllOrNothingAndStreamed", test: testTranscriptStream},
	{name: "ASlowTranscriptReaderDoesNotHoldUpAppends", test: testTranscriptSlowReader},
	{name: "AFullTranscriptRefusesAppendsUntilReset", cfg: Config{MaxTranscriptBytes: 64}, test: testTranscriptLimit},
}

func readTranscript(t *testing.T, st store.Store, session string) string {
	t.Helper()
	var b bytes.Buffer
	n, err := st.ReadTranscript(session, &b)
	if err != nil {
		t.Fatalf("ReadTranscript(%s): %v", session, err)
	}
	if n != int64(b.Len()) {
		t.Fatalf("ReadTranscript returned %d, wrote %d bytes", n, b.Len())
	}
	size, err := st.TranscriptSize(session)
	if err != nil || size != n {
		t.Fatalf("TranscriptSize = %d, %v; ReadTranscript read %d bytes", size, err, n)
	}
	return b.String()
}

// testTranscriptStream: records are kept compacted, one line each, in
// order; a call with one bad record appends none; what was synced is there
// after a restart.
func testTranscriptStream(t *testing.T, e *env) {
	s := session("team-a", 1)
	if got := readTranscript(t, e.st, s); got != "" {
		t.Fatalf("transcript of a new session = %q, want empty", got)
	}
	if err := e.st.AppendTranscript(s, json.RawMessage("{\n \"role\": \"user\", \"text\": \"hi <b>\"\n}"), json.RawMessage(`{"role":"assistant"}`)); err != nil {
		t.Fatalf("AppendTranscript: %v", err)
	}
	err := e.st.AppendTranscript(s, json.RawMessage(`{"role":"tool"}`), json.RawMessage(`[1,2]`))
	wantErr(t, "AppendTranscript with a record that is not an object", err, store.ErrInvalidRecord)
	if err := e.st.AppendTranscript(s, json.RawMessage(`{"role":"assistant","n":2}`)); err != nil {
		t.Fatalf("AppendTranscript: %v", err)
	}
	if err := e.st.SyncTranscript(s); err != nil {
		t.Fatalf("SyncTranscript: %v", err)
	}
	want := `{"role":"user","text":"hi <b>"}` + "\n" + `{"role":"assistant"}` + "\n" + `{"role":"assistant","n":2}` + "\n"
	if got := readTranscript(t, e.st, s); got != want {
		t.Fatalf("transcript = %q, want %q", got, want)
	}
	if got := readTranscript(t, e.reopen(t), s); got != want {
		t.Fatalf("transcript after restart = %q, want %q", got, want)
	}
}

// blockingWriter holds the first Write until released.
type blockingWriter struct {
	buf     bytes.Buffer
	writing chan struct{} // closed at the first Write
	release chan struct{}
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	if w.writing != nil {
		close(w.writing)
		w.writing = nil
		<-w.release
	}
	return w.buf.Write(p)
}

// testTranscriptSlowReader: a reader streaming to a slow client does not
// hold up the turn appending to the transcript, and gets what was there when
// it started.
func testTranscriptSlowReader(t *testing.T, e *env) {
	s := session("team-a", 1)
	first := `{"text":"` + strings.Repeat("a", 100) + `"}`
	if err := e.st.AppendTranscript(s, json.RawMessage(first)); err != nil {
		t.Fatalf("AppendTranscript: %v", err)
	}
	writing := make(chan struct{})
	w := &blockingWriter{writing: writing, release: make(chan struct{})}
	var readErr error
	read := make(chan struct{})
	go func() {
		defer close(read)
		_, readErr = e.peer(t).ReadTranscript(s, w)
	}()
	var once sync.Once
	unblock := func() { once.Do(func() { close(w.release) }) }
	t.Cleanup(func() {
		unblock()
		<-read
	})
	<-writing
	appended := make(chan error, 1)
	go func() { appended <- e.st.AppendTranscript(s, json.RawMessage(`{"text":"b"}`)) }()
	select {
	case err := <-appended:
		if err != nil {
			t.Fatalf("AppendTranscript during a read: %v", err)
		}
	case <-time.After(timeout):
		t.Fatal("AppendTranscript waited for a slow reader")
	}
	unblock()
	<-read
	if readErr != nil {
		t.Fatalf("ReadTranscript: %v", readErr)
	}
	if got := w.buf.String(); got != first+"\n" {
		t.Fatalf("the slow reader got %q, want what was appended when it started", got)
	}
	if got := readTranscript(t, e.st, s); got != first+"\n"+`{"text":"b"}`+"\n" {
		t.Fatalf("transcript = %q, want both records", got)
	}
}

// testTranscriptLimit: an append past the size limit is refused whole and
// marks the transcript full; a reset (new native thread) starts it anew.
func testTranscriptLimit(t *testing.T, e *env) {
	s := session("team-a", 1)
	rec := json.RawMessage(`{"text":"` + strings.Repeat("x", 20) + `"}`) // 32 bytes a line
	if err := e.st.AppendTranscript(s, rec); err != nil {
		t.Fatalf("AppendTranscript: %v", err)
	}
	err := e.st.AppendTranscript(s, rec, rec)
	var limit *store.TranscriptLimitError
	if !errors.As(err, &limit) || !errors.Is(err, store.ErrTranscriptLimitExceeded) {
		t.Fatalf("AppendTranscript past the limit: %v, want a *TranscriptLimitError", err)
	}
	if limit.Session != s || limit.Size != 32 || limit.Adding != 64 || limit.Limit != 64 {
		t.Fatalf("limit error = %+v, want size 32 + 64 over the limit of 64", limit)
	}
	if full, err := e.st.TranscriptFull(s); err != nil || !full {
		t.Fatalf("TranscriptFull after a refused append = %v, %v; want true", full, err)
	}
	if got := readTranscript(t, e.st, s); got != string(rec)+"\n" {
		t.Fatalf("transcript after a refused append = %q, want it unchanged", got)
	}
	if err := e.st.ResetTranscript(s, 2); err != nil {
		t.Fatalf("ResetTranscript: %v", err)
	}
	if full, err := e.st.TranscriptFull(s); err != nil || full {
		t.Fatalf("TranscriptFull after a reset = %v, %v; want false", full, err)
	}
	var marker struct {
		Type       string `json:"type"`
		Generation int64  `json:"generation"`
	}
	got := readTranscript(t, e.st, s)
	if err := json.Unmarshal([]byte(got), &marker); err != nil || marker.Type != "reset" || marker.Generation != 2 {
		t.Fatalf("transcript after reset = %q, want only the reset marker of generation 2", got)
	}
}
