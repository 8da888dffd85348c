package connlimit

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// A connection over the cap is closed at once and counted; a place given
// back by a Close (once, even if closed twice) admits the next one.
func TestListenerClosesConnectionsOverTheCap(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var refused atomic.Int32
	capped := Listener(ln, 1, func() { refused.Add(1) })
	defer func() { _ = capped.Close() }()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := capped.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	_ = dial()
	first := <-accepted
	over := dial()
	// The server closes the one over the cap: the client reads its end.
	_ = over.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := over.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("a connection over the cap: read %v, want EOF (closed by the server)", err)
	}
	if n := refused.Load(); n != 1 {
		t.Fatalf("%d refusals counted, want 1", n)
	}
	_ = first.Close()
	_ = first.Close() // a second Close gives nothing back twice
	_ = dial()
	select {
	case <-accepted:
	case <-time.After(10 * time.Second):
		t.Fatal("the place the first connection gave back admitted no other")
	}
	again := dial()
	_ = again.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := again.Read(make([]byte, 1)); !errors.Is(err, io.EOF) || refused.Load() != 2 {
		t.Fatalf("over the cap again after a double Close: read %v, %d refusals; want EOF and 2", err, refused.Load())
	}
}
