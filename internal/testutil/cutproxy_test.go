package testutil

import (
	"bufio"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// TestCutProxyCutsOpenConnectionsAndAcceptsNewOnes: through the proxy a
// connection reaches its target; Cut ends it (the client reads EOF) and a
// new connection works again.
func TestCutProxyCutsOpenConnectionsAndAcceptsNewOnes(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = echo.Close() }()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); _ = c.Close() }()
		}
	}()
	p, err := StartCutProxy(echo.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close() }()

	roundTrip := func(c net.Conn, line string) error {
		if _, err := c.Write([]byte(line + "\n")); err != nil {
			return err
		}
		got, err := bufio.NewReader(c).ReadString('\n')
		if err == nil && got != line+"\n" {
			t.Fatalf("echo %q, want %q", got, line)
		}
		return err
	}
	first, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = first.Close() }()
	if err := roundTrip(first, "before"); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	if n := p.Cut(); n != 1 {
		t.Fatalf("Cut cut %d connections, want 1", n)
	}
	_ = first.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := first.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("read after the cut: %v, want EOF", err)
	}
	second, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = second.Close() }()
	if err := roundTrip(second, "after"); err != nil {
		t.Fatalf("a new connection after the cut: %v", err)
	}
}
