package testutil

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Ports for servers a test starts by address — the project's binaries and
// controller-runtime's servers, which cannot be handed an open listener.
// Closing a listener on port 0 and passing its port on races every other
// bind(0) and outgoing connection on the machine, which the kernel serves
// from the ephemeral range. These ports come from just below that range, so
// the kernel never hands them out, and each is leased machine-wide: a file
// per port under leaseDir, locked by the leasing process, so test
// processes running in parallel (go test runs packages at once) never pick
// the same port. A lease ends with its process. The range
// stays clear of the fixed ports of `make run` (4500, 9443, 9444) and of
// hack/local-cluster.sh (16443, 20247–22379).
const (
	leaseRangeFloor = 22400
	leaseRangeWidth = 8000
	leaseTries      = 200
)

var leaseDir = filepath.Join(os.TempDir(), "harness-operator-test-ports")

// FreeAddr is 127.0.0.1:<port> with a port leased to this process for its
// lifetime (see above).
func FreeAddr() (string, error) {
	port, err := FreePort()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
}

// FreePort is a loopback port leased to this process for its lifetime.
func FreePort() (int, error) {
	lo, hi, err := leaseRange()
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(leaseDir, 0o777); err != nil {
		return 0, fmt.Errorf("pick a free port: %w", err)
	}
	for range leaseTries {
		port := lo + rand.IntN(hi-lo)
		if !lease(port) {
			continue
		}
		// Someone outside the leases (not a test of ours) may hold it.
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // keep the lease: the port is busy anyway
		}
		_ = l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("pick a free port: no free port in [%d, %d) after %d tries (leases in %s)", lo, hi, leaseTries, leaseDir)
}

// leaseRange is the range ports are leased from: below the kernel's
// ephemeral range (net.ipv4.ip_local_port_range), above the fixed ports.
func leaseRange() (lo, hi int, err error) {
	hi = 32768 // the kernel's default start of the ephemeral range
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				hi = n
			}
		}
	}
	lo = max(leaseRangeFloor, hi-leaseRangeWidth)
	if hi-lo < 100 {
		return 0, 0, fmt.Errorf("pick a free port: the ephemeral range starts at %d, leaving no room above %d for test ports", hi, leaseRangeFloor)
	}
	return lo, hi, nil
}

// leased holds the lease files open: a lease is an exclusive flock on its
// file, which the kernel drops when this process exits, however it exits.
var (
	leasedMu sync.Mutex
	leased   []*os.File
)

// lease takes port for this process unless another process holds it.
func lease(port int) bool {
	f, err := os.OpenFile(filepath.Join(leaseDir, strconv.Itoa(port)), os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return false
	}
	// flock locks belong to the open file, so a second lease of the same
	// port fails even in this process.
	leasedMu.Lock()
	defer leasedMu.Unlock()
	leased = append(leased, f)
	return true
}
