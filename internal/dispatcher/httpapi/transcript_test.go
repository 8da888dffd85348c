package httpapi_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// transcriptOf fills the session's transcript with records of 1 MiB.
func (f *apiFixture) transcriptOf(t *testing.T, mib int) []byte {
	t.Helper()
	var want bytes.Buffer
	for i := range mib {
		rec := fmt.Sprintf(`{"type":"message","i":%d,"text":"%s"}`, i, strings.Repeat("t", 1<<20-40))
		if err := f.jrnl.AppendTranscript(f.session, json.RawMessage(rec)); err != nil {
			t.Fatal(err)
		}
		want.WriteString(rec + "\n")
	}
	return want.Bytes()
}

func getTranscript(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url+sessionPath("/transcript"), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer gateway-token")
	return req
}

// TestTheTranscriptIsStreamed: a 32 MiB transcript arrives whole, and the
// handler copies it from the store to the client as the client takes it: a
// client gone after 1 MiB stops the store's copy there (it does not read the
// rest into memory first), and the response is cut, not ended as if complete.
func TestTheTranscriptIsStreamed(t *testing.T) {
	var read atomic.Int64
	f := newAPIFixture(t, 0, func(s store.Store) store.Store { return &countingStore{Store: s, read: &read} })
	want := f.transcriptOf(t, 32)

	srv := httptest.NewServer(f.handler)
	defer srv.Close()
	resp, err := srv.Client().Do(getTranscript(t, srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	_ = resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/x-ndjson" ||
		n != int64(len(want)) || !bytes.Equal(h.Sum(nil), sha256Of(want)) {
		t.Fatalf("GET transcript: %d %q, %d bytes (want %d), %v; or not the transcript",
			resp.StatusCode, resp.Header.Get("Content-Type"), n, len(want), err)
	}

	const clientTakes = 1 << 20
	read.Store(0)
	w := &goneAfter{limit: clientTakes}
	aborted := serveRecovering(f.handler, w, getTranscript(t, ""))
	if got := read.Load(); got > clientTakes+128<<10 {
		t.Fatalf("the store copied %d bytes of the transcript for a client gone after %d: it was read ahead of the client", got, clientTakes)
	}
	if err, _ := aborted.(error); w.status != http.StatusOK || !errors.Is(err, http.ErrAbortHandler) {
		t.Fatalf("status %d, handler ended with %v; want 200 and the response aborted", w.status, aborted)
	}
}

// TestATranscriptErrorBeforeTheFirstByteIsAJSONError: what fails before any
// byte of the transcript was sent is answered with its status and JSON error.
func TestATranscriptErrorBeforeTheFirstByteIsAJSONError(t *testing.T) {
	f := newAPIFixture(t, 0, nil)
	f.transcriptOf(t, 1)
	if err := f.jrnl.Close(); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	aborted := serveRecovering(f.handler, rec, getTranscript(t, ""))
	var e wire.Error
	if aborted != nil || rec.Code != http.StatusInternalServerError || json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Code != wire.CodeInternalError {
		t.Fatalf("GET transcript of a closed store: %d %s (handler ended with %v), want 500 and a JSON InternalError",
			rec.Code, rec.Body.Bytes(), aborted)
	}
}

func sha256Of(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

// countingStore records how many bytes ReadTranscript copied.
type countingStore struct {
	store.Store
	read *atomic.Int64
}

func (c *countingStore) ReadTranscript(session string, w io.Writer) (int64, error) {
	n, err := c.Store.ReadTranscript(session, w)
	c.read.Add(n)
	return n, err
}

// goneAfter is a client that takes limit bytes and then is gone.
type goneAfter struct {
	header http.Header
	status int
	n      int
	limit  int
}

func (g *goneAfter) Header() http.Header {
	if g.header == nil {
		g.header = http.Header{}
	}
	return g.header
}

func (g *goneAfter) WriteHeader(status int) { g.status = status }

func (g *goneAfter) Write(p []byte) (int, error) {
	if g.status == 0 {
		g.status = http.StatusOK
	}
	if g.n+len(p) > g.limit {
		k := g.limit - g.n
		g.n = g.limit
		return k, errors.New("connection reset by peer")
	}
	g.n += len(p)
	return len(p), nil
}

// serveRecovering serves req and returns what the handler panicked with:
// http.ErrAbortHandler is how a handler cuts a response it cannot finish.
func serveRecovering(h http.Handler, w http.ResponseWriter, req *http.Request) (aborted any) {
	defer func() { aborted = recover() }()
	h.ServeHTTP(w, req)
	return nil
}
