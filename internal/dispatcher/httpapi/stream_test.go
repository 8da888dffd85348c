package httpapi_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/sse"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/testutil/goroutines"
)

// reconnect is the request that streams run-1 from its first event.
func reconnect(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+sessionPath("/turns"), strings.NewReader(turnBody))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer gateway-token")
	req.Header.Set("Last-Event-ID", "0")
	return req
}

// replay serves h, reconnects to its run (reconnect) and returns the
// stream; the server and the response end with the test.
func replay(t *testing.T, h http.Handler) io.Reader {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	resp, err := srv.Client().Do(reconnect(t, srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp.Body
}

// handlerWriting counts handler goroutines blocked writing to the network.
func handlerWriting(fn string) int {
	n := 0
	for _, g := range goroutines.Running(handlerFrame + fn) {
		header, _, _ := strings.Cut(g, "\n")
		if strings.Contains(header, "[IO wait") {
			n++
		}
	}
	return n
}

// smallBuffers makes the server's side of every connection hold little
// unsent data, so a client that stops reading blocks the server's writes
// after a few KiB instead of megabytes.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// dialSmallWindow connects with a small receive buffer (set before the
// connection is made, so the TCP window stays small).
func dialSmallWindow(t *testing.T, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		}); err != nil {
			return err
		}
		return serr
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestAStreamToAClientThatStopsReadingIsCutAtTheWriteDeadline: a client that
// reads the response head and then nothing fills the connection's buffers;
// the handler's next write fails at the write deadline and the handler ends,
// with its journal reader.
func TestAStreamToAClientThatStopsReadingIsCutAtTheWriteDeadline(t *testing.T) {
	const wait = 500 * time.Millisecond
	f := newAPIFixture(t, wait, nil)
	f.run(t, 64, 64<<10, true) // 4 MiB of events
	srv := httptest.NewUnstartedServer(f.handler)
	srv.Listener = smallBuffers{srv.Listener}
	srv.Start()
	defer srv.Close()

	conn := dialSmallWindow(t, srv.Listener.Addr().String())
	defer func() { _ = conn.Close() }()
	if err := reconnect(t, "http://"+srv.Listener.Addr().String()).Write(conn); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 4096), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The connection first: closing the body of an open one would read it.
	defer func() { _ = conn.Close(); _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("response head: %s", resp.Status)
	}
	// The client reads nothing more.
	waitUntil(t, 10*time.Second, "the stream handler never blocked writing to the client",
		func() bool { return handlerWriting("stream") == 1 })
	blocked := time.Now()
	waitUntil(t, wait+10*time.Second, "the stream handler still waits to write to a client that stopped reading",
		func() bool { return len(goroutines.Running(handlerFrame+"stream")) == 0 })
	if took := time.Since(blocked); took > wait+3*time.Second {
		t.Fatalf("the handler ended %v after it blocked writing; the write deadline is %v", took, wait)
	}
}

// TestAStreamIdleLongerThanTheWriteDeadlineIsNotCut: the deadline bounds
// each write, not the stream: a turn that sends nothing for longer than the
// deadline keeps its stream.
func TestAStreamIdleLongerThanTheWriteDeadlineIsNotCut(t *testing.T) {
	const wait = 200 * time.Millisecond
	f := newAPIFixture(t, wait, nil)
	w := f.run(t, 1, 10, false)
	stream := replay(t, f.handler)
	sc := sse.NewScanner(stream)
	if !sc.Next() || sc.Event().ID != "1" {
		t.Fatalf("first event: %+v, %v", sc.Event(), sc.Err())
	}
	goroutines.WaitBlocked(t, "(*Run).Events", 1) // the handler waits for the next event
	// Idle past the deadline: only time can make a stream idle.
	time.Sleep(3 * wait)
	appendEvent(t, w, 1, 10)
	if !sc.Next() || sc.Event().ID != "2" {
		t.Fatalf("the event after an idle time: %+v, %v", sc.Event(), sc.Err())
	}
	if err := w.Finish(store.StateFinished, nil); err != nil {
		t.Fatal(err)
	}
	if sc.Next() {
		t.Fatalf("an event after the end: %+v", sc.Event())
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("the stream ended with %v, want its end", err)
	}
}

// TestAReplayOfADamagedRunEndsWithAnError: a finished run whose file is
// damaged between its first and last records streams its intact events,
// then an `error` event, not a silent end that a client would reconnect to
// again and again.
func TestAReplayOfADamagedRunEndsWithAnError(t *testing.T) {
	f := newAPIFixture(t, 0, nil)
	f.run(t, 5, 10, true)
	f.damageEvent(t, 3)
	stream := replay(t, f.handler)
	var got []string
	if err := sse.Read(stream, func(ev sse.Event) bool {
		got = append(got, ev.ID+" "+ev.Type)
		if ev.Type == wire.EventError {
			var e wire.Error
			if err := json.Unmarshal(ev.Data, &e); err != nil || e.Code != wire.CodeInternalError {
				t.Errorf("error event %s: %v", ev.Data, err)
			}
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"1 partial", "2 partial", " error"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("stream = %q, want %q", got, want)
	}
}

// damageEvent overwrites event i's record (the file's line i) in place.
func (f *apiFixture) damageEvent(t *testing.T, i int) {
	t.Helper()
	// The journal's layout: by-uid/<namespace>/<uid>/runs/<sha256(runId)>.jsonl.
	ns, uid, _ := strings.Cut(f.session, "/")
	sum := sha256.Sum256([]byte("run-1"))
	path := fmt.Sprintf("%s/by-uid/%s/%s/runs/%x.jsonl", f.dir, ns, uid, sum)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	lines[i] = append(bytes.Repeat([]byte("#"), len(lines[i])-1), '\n')
	if err := os.WriteFile(path, bytes.Join(lines, nil), 0o640); err != nil {
		t.Fatal(err)
	}
}
