package modelgateway

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	promtest "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openclaw/harness-operator/internal/dispatcher/modelcred"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// small is a limit small enough to provoke in a test, and large enough not
// to be hit by chance on a loaded machine where the test means to pass.
const small = 300 * time.Millisecond

// TestBodyLimit: a body over the limit is a 413 naming the limit, told from
// its Content-Length or while it is read; nothing reaches the upstream.
func TestBodyLimit(t *testing.T) {
	f := newFixture(t, withLimits(Limits{MaxBodyBytes: int64(len(testBody))}))
	cred := f.credential("team-a/uid-1")
	over := testBody + " "

	resp, got := f.post(cred, over)
	wantRefusal(t, resp, got, http.StatusRequestEntityTooLarge, CodeBodyTooLarge, fmt.Sprintf("request body limit of %d bytes", len(testBody)))

	chunked := f.request(http.MethodPost, ResponsesPath, cred, "")
	chunked.Body = io.NopCloser(strings.NewReader(over)) // no length: sent chunked
	chunked.ContentLength = -1
	resp, got = f.do(chunked)
	wantRefusal(t, resp, got, http.StatusRequestEntityTooLarge, CodeBodyTooLarge, "request body limit")

	// A length over the limit is refused from the headers: the gateway
	// does not wait for a body it would refuse.
	conn, err := net.Dial("tcp", f.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	if _, err := fmt.Fprintf(conn, "POST /v1/responses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n{", cred, 64<<20); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	raw, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("a Content-Length over the limit, the body not sent: %v, want a 413 at once", err)
	}
	_ = raw.Body.Close()
	if raw.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a Content-Length over the limit: %d, want 413", raw.StatusCode)
	}
	f.nothingUpstream("a body over its limit")

	if resp, got := f.post(cred, testBody); resp.StatusCode != http.StatusOK {
		t.Fatalf("a body at the limit: %d %q, want 200", resp.StatusCode, got)
	}
}

// TestHeaderLimits: the server the gateway is served with refuses headers
// over their size, and ends a connection whose headers do not come in
// time.
func TestHeaderLimits(t *testing.T) {
	f := newFixture(t, withLimits(Limits{MaxHeaderBytes: 1 << 10, HeaderTimeout: small}))
	r := f.request(http.MethodPost, ResponsesPath, f.credential("team-a/uid-1"), testBody)
	r.Header.Set("X-Big", strings.Repeat("x", 8<<10))
	resp, err := f.client.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close() // the server may close before the body is read
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("headers over the limit: %d, want 431", resp.StatusCode)
	}

	conn, err := net.Dial("tcp", f.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	if _, err := io.WriteString(conn, "POST /v1/responses HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	// The server ends the connection: the read returns. A deadline far
	// beyond the limit tells a server that waits forever.
	_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	if _, err := io.ReadAll(conn); err != nil {
		t.Fatalf("a client that never finishes its headers: %v, want the connection ended", err)
	}
	f.nothingUpstream("headers over their limits")
}

// TestConnectionLimit: a connection over the limit is closed as soon as it
// is accepted and counted; its place comes back when a connection ends.
func TestConnectionLimit(t *testing.T) {
	f := newFixture(t, withLimits(Limits{MaxConnections: 1}))
	cred := f.credential("team-a/uid-1")
	// The client's one connection, kept alive, holds the one place.
	if resp, _ := f.post(cred, testBody); resp.StatusCode != http.StatusOK {
		t.Fatalf("the first connection: %d", resp.StatusCode)
	}
	conn, err := net.Dial("tcp", f.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	_, _ = io.WriteString(conn, "POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
	_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	if b, err := io.ReadAll(conn); len(b) != 0 || isTimeout(err) {
		t.Fatalf("a connection over the limit read %q, %v: want it closed at once", b, err)
	}
	if n := promtest.ToFloat64(f.gw.metrics.connectionsRefused); n != 1 {
		t.Fatalf("connections_refused_total = %v, want 1", n)
	}
	f.client.Transport.(*http.Transport).CloseIdleConnections()
	eventually(t, "the closed connection's place to come back", func() bool {
		resp, err := f.client.Do(f.request(http.MethodPost, ResponsesPath, cred, testBody))
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestInFlightPerLease: a lease with its most requests in flight is
// refused 429 before its body is read or anything is sent; another lease
// is not; the place comes back when the request ends.
func TestInFlightPerLease(t *testing.T) {
	f := newFixture(t, withLimits(Limits{MaxInFlightPerLease: 1}))
	gate := stubmodel.NewGate()
	t.Cleanup(gate.Release)
	f.stub.Enqueue(stubmodel.Stall(gate, stubmodel.Text("held")))
	cred := f.credential("team-a/uid-1")

	held := make(chan int, 1)
	go func() {
		resp, err := f.client.Do(f.request(http.MethodPost, ResponsesPath, cred, testBody))
		if err != nil {
			held <- 0
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		held <- resp.StatusCode
	}()
	<-gate.Reached()
	resp, got := f.post(cred, testBody)
	wantRefusal(t, resp, got, http.StatusTooManyRequests, CodeTooManyRequests, "requests in flight per session limit")
	if n := len(f.stub.Requests()); n != 1 {
		t.Fatalf("the stub got %d requests, want only the held one", n)
	}
	if resp, got := f.post(f.credential("team-a/uid-2"), testBody); resp.StatusCode != http.StatusOK {
		t.Fatalf("another session while the first is at its limit: %d %q, want 200", resp.StatusCode, got)
	}
	gate.Release()
	if status := <-held; status != http.StatusOK {
		t.Fatalf("the held request: %d, want 200", status)
	}
	if resp, got := f.post(cred, testBody); resp.StatusCode != http.StatusOK {
		t.Fatalf("the session once its request ended: %d %q, want 200", resp.StatusCode, got)
	}
}

// TestUpstreamHeaderLimit: an upstream that sends no headers in time is a
// 504 naming the limit.
func TestUpstreamHeaderLimit(t *testing.T) {
	done := make(chan struct{})
	rec := newRecorder(t, func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-done:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(done) })
	f := newFixture(t, withLimits(Limits{UpstreamHeaderTimeout: small}))
	f.upstream.BaseURL = rec.base("/v1")
	resp, got := f.post(f.credential("team-a/uid-1"), testBody)
	wantRefusal(t, resp, got, http.StatusGatewayTimeout, CodeUpstreamTimeout, "upstream response header limit of 300ms")
	if strings.Contains(got, rec.url.Host) {
		t.Fatalf("the answer names the upstream's address: %q", got)
	}
}

// streamingUpstream answers with the SSE headers, then runs send.
func streamingUpstream(t *testing.T, send func(w http.ResponseWriter, flush func(), r *http.Request)) *recorder {
	return newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		rc := http.NewResponseController(w)
		send(w, func() { _ = rc.Flush() }, r)
	})
}

// readCut reads an answer that the gateway must cut: it returns the events
// read, and fails unless the body ends with an error, not a proper end.
func readCut(t *testing.T, f *fixture, cred string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := f.client.Do(f.request(http.MethodPost, ResponsesPath, cred, testBody).WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err == nil || ctx.Err() != nil {
		t.Fatalf("the answer ended with %v after %q, want it cut (an unexpected EOF)", err, b)
	}
	return string(b)
}

// TestUpstreamIdleLimit: an upstream that stops sending mid-stream has its
// answer cut once the idle limit passes; the client got what came before.
func TestUpstreamIdleLimit(t *testing.T) {
	stop := make(chan struct{})
	rec := streamingUpstream(t, func(w http.ResponseWriter, flush func(), r *http.Request) {
		_, _ = io.WriteString(w, "event: response.created\ndata: {}\n\n")
		flush()
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(stop) })
	f := newFixture(t, withLimits(Limits{UpstreamIdleTimeout: small}))
	f.upstream.BaseURL = rec.base("/v1")
	if got := readCut(t, f, f.credential("team-a/uid-1")); got != "event: response.created\ndata: {}\n\n" {
		t.Fatalf("the client got %q, want the first event", got)
	}
	wantCut(t, f, cutUpstreamIdle, "upstream idle limit of 300ms")
}

func wantCut(t *testing.T, f *fixture, limit, reason string) {
	t.Helper()
	eventually(t, "the cut's log line", func() bool { return len(f.logs.with("model answer cut", limit, reason)) == 1 })
	if n := promtest.ToFloat64(f.gw.metrics.streamsCut.WithLabelValues(limit)); n != 1 {
		t.Fatalf("streams_cut_total{limit=%s} = %v, want 1", limit, n)
	}
	f.noSecrets()
}

// TestEventLimit: one event over the limit cuts the answer; many events
// under it, more bytes than it in all, pass.
func TestEventLimit(t *testing.T) {
	const limit = 1 << 10
	event := "data: " + strings.Repeat("x", limit-10) + "\r\n\r\n"
	huge := make(chan bool, 1)
	rec := streamingUpstream(t, func(w http.ResponseWriter, flush func(), _ *http.Request) {
		if <-huge {
			_, _ = io.WriteString(w, "data: "+strings.Repeat("y", 2*limit))
			flush()
			return
		}
		for range 20 {
			_, _ = io.WriteString(w, event)
		}
	})
	f := newFixture(t, withLimits(Limits{MaxEventBytes: limit}))
	f.upstream.BaseURL = rec.base("/v1")

	cred := f.credential("team-a/uid-1")
	huge <- false
	resp, got := f.post(cred, testBody)
	if resp.StatusCode != http.StatusOK || got != strings.Repeat(event, 20) {
		t.Fatalf("20 events under the limit: %d, %d bytes, want all %d", resp.StatusCode, len(got), 20*len(event))
	}
	huge <- true
	if got := readCut(t, f, cred); strings.Contains(got, "y") {
		t.Fatalf("the client got %d bytes of the event over the limit", len(got))
	}
	wantCut(t, f, cutEventTooLarge, fmt.Sprintf("event limit of %d bytes", limit))
}

// TestEventScanner: an event is the bytes up to a blank line, whatever the
// line ends.
func TestEventScanner(t *testing.T) {
	for _, tc := range []struct {
		chunks []string
		over   bool
	}{
		{chunks: []string{"data: 12\n\n", "data: 34\n\n"}},
		{chunks: []string{"data: 12\r\n\r\ndata: 34\r\n\r\n"}},
		{chunks: []string{"data: 12\r\rdata: 34\r\r"}},
		{chunks: []string{"data: 12\r", "\n\r", "\ndata: 34\n\n"}},
		{chunks: []string{"data: 123\n"}},
		{chunks: []string{"data: 12345"}, over: true},
		{chunks: []string{"data: 12\n", "data\n"}, over: true},
		{chunks: []string{"data: 12\r\n", "\rdata: 34\r\n"}}, // CR LF CR is a blank line
		{chunks: []string{"data: 123\r\n"}},                  // CR LF counts one
		{chunks: []string{"data: 1234\n"}, over: true},
	} {
		s := eventScanner{max: 10}
		over := false
		for _, c := range tc.chunks {
			over = over || s.feed([]byte(c))
		}
		if over != tc.over {
			t.Errorf("feed(%q) over = %v, want %v", tc.chunks, over, tc.over)
		}
	}
}

// TestWriteLimit: a client that stops reading is cut off once a write
// misses its deadline, and the upstream feels the back-pressure: what it
// could send before its request was cancelled is bounded by the sockets'
// buffers, not by the gateway's memory.
func TestWriteLimit(t *testing.T) {
	const budget = 1 << 30 // what the upstream would send if nothing stopped it
	var sent atomic.Int64
	upstreamDone := make(chan error, 1)
	chunk := "data: " + strings.Repeat("z", 16<<10) + "\n\n"
	rec := streamingUpstream(t, func(w http.ResponseWriter, flush func(), _ *http.Request) {
		for sent.Load() < budget {
			n, err := io.WriteString(w, chunk)
			sent.Add(int64(n))
			if err != nil {
				upstreamDone <- err
				return
			}
			flush()
		}
		upstreamDone <- nil
	})
	f := newFixture(t, withLimits(Limits{WriteTimeout: small}))
	f.upstream.BaseURL = rec.base("/v1")

	// A client with a small receive window that reads the headers and
	// then nothing.
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10) }); err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", f.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	cred := f.credential("team-a/uid-1")
	if _, err := fmt.Fprintf(conn, "POST /v1/responses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s", cred, len(testBody), testBody); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("answer %v, %v: want 200 headers", resp, err)
	}
	// Read nothing now; at the end, once the answer was cut, the rest.
	defer func() { _ = resp.Body.Close() }()

	wantCut(t, f, cutClientWrite, "write limit of 300ms")
	if err := <-upstreamDone; err == nil {
		t.Fatalf("the upstream sent all of %d bytes: nothing pushed back", sent.Load())
	}
	if n := sent.Load(); n > 128<<20 {
		t.Fatalf("the upstream sent %d bytes before the cut: the gateway buffered them", n)
	}
}

// TestWriteLimitIsPerWrite: the write limit bounds each write, not the
// answer: a stream that waits on its upstream for longer than the limit
// goes on once the upstream sends again.
func TestWriteLimitIsPerWrite(t *testing.T) {
	silent := newRecorder(t, func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	f := newFixture(t, withLimits(Limits{WriteTimeout: small, UpstreamHeaderTimeout: small}))
	slowHarness := modelcred.Harness{Namespace: "team-a", Name: "silent", UID: "harness-uid-2"}
	f.others = map[modelcred.Harness]Upstream{slowHarness: {BaseURL: silent.base("/v1"), Credential: harnessKey}}
	gate := stubmodel.NewGate()
	t.Cleanup(gate.Release)
	f.stub.Enqueue(stubmodel.Text("one two", "one ", "two").HoldBefore(1, gate))

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := f.client.Do(f.request(http.MethodPost, ResponsesPath, f.credential("team-a/uid-1"), testBody).WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	events := sseReader{bufio.NewReader(resp.Body)}
	for {
		ev, err := events.next()
		if err != nil {
			t.Fatalf("the stream ended before its first delta: %v", err)
		}
		if strings.Contains(ev, `"delta":"one "`) {
			break
		}
	}
	// The gateway's own clock: a request started now gets its 504 once
	// the same limit has passed since, so the last write's deadline has
	// passed too.
	other := f.claims(f.acquire("team-a/uid-2"))
	other.Harness = slowHarness
	r, got := f.post(f.seal(other), testBody)
	wantRefusal(t, r, got, http.StatusGatewayTimeout, CodeUpstreamTimeout, "upstream response header limit")

	gate.Release()
	var rest strings.Builder
	for {
		ev, err := events.next()
		rest.WriteString(ev)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the stream after a wait longer than the write limit: %v, want it to go on", err)
		}
	}
	if !strings.Contains(rest.String(), "response.completed") {
		t.Fatalf("the rest of the stream is %q, want it completed", rest.String())
	}
}

// TestNoRetry: a POST the upstream drops without an answer is not sent
// again, even with an idempotency key (which lets Go's transport retry a
// request it can rewind).
func TestNoRetry(t *testing.T) {
	var calls atomic.Int32
	rec := newRecorder(t, func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: {}\n\n")
			return
		}
		// Drop the connection without an answer.
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	})
	f := newFixture(t)
	f.upstream.BaseURL = rec.base("/v1")
	cred := f.credential("team-a/uid-1")
	post := func() (answer, string) {
		r := f.request(http.MethodPost, ResponsesPath, cred, testBody)
		r.Header.Set("Idempotency-Key", "key-1")
		return f.do(r)
	}
	if resp, _ := post(); resp.StatusCode != http.StatusOK {
		t.Fatalf("the first request: %d", resp.StatusCode)
	}
	resp, got := post()
	wantRefusal(t, resp, got, http.StatusBadGateway, CodeUpstreamUnavailable, "could not be reached")
	if got := rec.requests(); len(got) != 2 {
		t.Fatalf("the upstream got %d requests, want 2: the dropped one was re-sent", len(got))
	}
}

// TestNoRedirect: the gateway passes a redirect to the client and never
// follows it with the provider's credential.
func TestNoRedirect(t *testing.T) {
	var rec *recorder
	rec = newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/responses" {
			http.Redirect(w, r, rec.url.String()+"/elsewhere", http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	f := newFixture(t)
	f.upstream.BaseURL = rec.base("/v1")
	resp, _ := f.post(f.credential("team-a/uid-1"), testBody)
	if resp.StatusCode != http.StatusFound || !strings.HasSuffix(resp.Header.Get("Location"), "/elsewhere") {
		t.Fatalf("answer %d (Location %q), want the upstream's 302", resp.StatusCode, resp.Header.Get("Location"))
	}
	if got := rec.requests(); len(got) != 1 {
		t.Fatalf("the upstream got %q, want only the first request", got)
	}
}

// TestLimitsDefaults: zero limits take the design's defaults.
func TestLimitsDefaults(t *testing.T) {
	got := Limits{MaxInFlightPerLease: 3}.withDefaults()
	want := DefaultLimits()
	want.MaxInFlightPerLease = 3
	if got != want {
		t.Fatalf("withDefaults = %+v, want %+v", got, want)
	}
	d := DefaultLimits()
	if d.MaxBodyBytes != 64<<20 || d.HeaderTimeout != 10*time.Second || d.MaxHeaderBytes != 64<<10 || d.MaxConnections != 1024 ||
		d.UpstreamHeaderTimeout != 120*time.Second || d.UpstreamIdleTimeout != 300*time.Second || d.MaxEventBytes != 16<<20 ||
		d.WriteTimeout != 30*time.Second || d.MaxInFlightPerLease != 8 {
		t.Fatalf("DefaultLimits = %+v, not the design's", d)
	}
}
