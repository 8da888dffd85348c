package appserver_test

import (
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
)

// freezer is a TCP proxy whose connections can be frozen: it stops moving
// bytes in both directions but keeps every socket open, as a peer or path
// that vanished without a FIN looks to the client (a half-open connection).
type freezer struct {
	l      net.Listener
	target string
	frozen chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
}

func newFreezer(t *testing.T, target string) *freezer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{l: l, target: target, frozen: make(chan struct{})}
	f.wg.Go(f.accept)
	t.Cleanup(f.close)
	return f
}

func (f *freezer) accept() {
	for {
		in, err := f.l.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", f.target)
		if err != nil {
			_ = in.Close()
			continue
		}
		f.mu.Lock()
		f.conns = append(f.conns, in, out)
		f.mu.Unlock()
		f.wg.Go(func() { f.pipe(out, in) })
		f.wg.Go(func() { f.pipe(in, out) })
	}
}

// pipe copies src to dst until either side ends; once the proxy is frozen it
// keeps reading and drops what it reads, so the sockets stay open and
// nothing arrives.
func (f *freezer) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !f.isFrozen() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (f *freezer) isFrozen() bool {
	select {
	case <-f.frozen:
		return true
	default:
		return false
	}
}

func (f *freezer) freeze() { f.once.Do(func() { close(f.frozen) }) }

func (f *freezer) close() {
	_ = f.l.Close()
	f.mu.Lock()
	for _, c := range f.conns {
		_ = c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// A half-open WebSocket connection is detected by the keepalive ping: once
// the path stops carrying bytes (no FIN, no RST), the client reports the
// connection lost within a ping interval and timeout, instead of waiting for
// a read that never ends.
func TestHalfOpenWebSocketDetectedByPing(t *testing.T) {
	t.Parallel()
	r := startRig(t, codextest.Options{Transport: codextest.WebSocket, WSToken: testToken})
	proxy := newFreezer(t, strings.TrimPrefix(r.srv.URL, "ws://"))
	ctx := testCtx(t, 30*time.Second)
	tr, err := appserver.DialWebSocket(ctx, "ws://"+proxy.l.Addr().String(), appserver.WebSocketOptions{
		Token: testToken, PingInterval: 200 * time.Millisecond, PingTimeout: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := appserver.Connect(ctx, tr, appserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	// Pings answered: the connection stays up across several intervals
	// while bytes flow (a request round trip proves the path works).
	if err := c.Call(ctx, "thread/loaded/list", map[string]any{}, nil); err != nil {
		t.Fatalf("a request through the proxy: %v", err)
	}

	proxy.freeze()
	select {
	case <-c.Done():
	case <-ctx.Done():
		t.Fatal("the client still believes a frozen (half-open) connection is up")
	}
	if err := c.Err(); err == nil || !strings.Contains(err.Error(), "did not answer a ping") {
		t.Fatalf("Err() = %v, want the unanswered ping named", err)
	}
}
