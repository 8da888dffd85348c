package testutil

import (
	"net"
	"testing"
)

// TestCutProxyRefusesWhileDownAndUsesTheNextTargetThatAnswers: while Down a
// connection to the proxy is refused, after Up it is accepted again on the
// same address, and a target that does not answer is passed over for the
// next.
func TestCutProxyRefusesWhileDownAndUsesTheNextTargetThatAnswers(t *testing.T) {
	live, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = live.Close() }()
	gone, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	p, err := StartCutProxy(gone, live.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close() }()
	if err := p.Down(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("tcp", p.Addr()); err == nil {
		_ = c.Close()
		t.Fatal("a connection to a proxy that is down was accepted")
	}
	if err := p.Up(); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("a connection after Up: %v", err)
	}
	defer func() { _ = c.Close() }()
	accepted, err := live.Accept()
	if err != nil {
		t.Fatalf("the target that answers got no connection: %v", err)
	}
	_ = accepted.Close()
}
