package testutil

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// A leased port is free to bind, below the kernel's ephemeral range, never
// leased twice — in this process or by another one while this one lives.
func TestFreePortLeases(t *testing.T) {
	if os.Getenv("HARNESS_PORTS_CHILD") == "1" {
		// The other test process: lease the ports it was given, or say
		// which one it could not.
		for _, p := range strings.Fields(os.Getenv("HARNESS_PORTS_TAKEN")) {
			n, _ := strconv.Atoi(p)
			if lease(n) {
				t.Fatalf("port %d leased although the parent holds it", n)
			}
		}
		return
	}
	_, hi, err := leaseRange()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	var taken []string
	for range 20 {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if port >= hi {
			t.Fatalf("port %d is in the ephemeral range (from %d)", port, hi)
		}
		if seen[port] {
			t.Fatalf("port %d leased twice", port)
		}
		seen[port] = true
		taken = append(taken, strconv.Itoa(port))
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("leased port %d: %v", port, err)
		}
		_ = l.Close()
		if lease(port) {
			t.Fatalf("port %d leased again in the same process", port)
		}
	}
	child := exec.Command(os.Args[0], "-test.run=^TestFreePortLeases$", "-test.count=1")
	child.Env = append(os.Environ(), "HARNESS_PORTS_CHILD=1", "HARNESS_PORTS_TAKEN="+strings.Join(taken, " "))
	if out, err := child.CombinedOutput(); err != nil {
		t.Fatalf("another process: %v\n%s", err, out)
	}
}
