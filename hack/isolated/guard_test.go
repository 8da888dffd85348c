package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func isolatedFacts() facts {
	return facts{
		ownNetNS: "net:[2]", initNetNS: "net:[1]",
		probes: map[string]error{probeAddrs[0]: syscall.ENETUNREACH, probeAddrs[1]: syscall.ENETUNREACH},
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*facts)
		want   string // "" when isolated
	}{
		{"isolated", func(*facts) {}, ""},
		{"no IPv6 here", func(f *facts) { f.probes[probeAddrs[1]] = syscall.EAFNOSUPPORT }, ""},
		{"the machine's namespace", func(f *facts) { f.ownNetNS = f.initNetNS }, "initial network namespace"},
		{"namespaces unreadable", func(f *facts) { f.initNetNS = "" }, "cannot be compared"},
		{"a default route", func(f *facts) { f.defaultRoutes = []string{"IPv4 via veth0"} }, "default route exists: IPv4 via veth0"},
		{"a probe found a route", func(f *facts) { f.probes[probeAddrs[0]] = nil }, "198.51.100.7:9 found a route"},
		{"a probe failed otherwise", func(f *facts) { f.probes[probeAddrs[0]] = syscall.EPERM }, "want network unreachable"},
		{"a probe not tried", func(f *facts) { delete(f.probes, probeAddrs[1]) }, "was not tried"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := isolatedFacts()
			tc.change(&f)
			err := check(f)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("check: %v, want isolated", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("check: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestDefaultRoutes(t *testing.T) {
	dir := t.TempDir()
	v4 := filepath.Join(dir, "route")
	v6 := filepath.Join(dir, "ipv6_route")
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(v4, "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"+
		"eth0\t00000000\t0100A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"+
		"eth0\t0000A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n")
	write(v6, strings.Repeat("0", 32)+" 00 "+strings.Repeat("0", 32)+" 00 "+strings.Repeat("0", 32)+" ffffffff 00000001 00000000 00200200       lo\n"+
		strings.Repeat("0", 32)+" 00 "+strings.Repeat("0", 32)+" 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003     eth0\n")
	if got := strings.Join(append(defaultRoutesV4(v4), defaultRoutesV6(v6)...), ","); got != "IPv4 via eth0,IPv6 via eth0" {
		t.Fatalf("default routes %q", got)
	}
}

// TestGuardInNamespaces runs the guard for real: in a new network namespace
// it passes; give that namespace a default route and it fails before
// anything could dial.
func TestGuardInNamespaces(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root (make test runs as root)")
	}
	bin := filepath.Join(t.TempDir(), "isolated")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	guard := func(setup string) (string, error) {
		cmd := exec.Command("bash", "-c", setup+` && exec "$0" -guard`, bin)
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := guard("ip link set lo up"); err != nil {
		t.Fatalf("guard in a new namespace: %v\n%s", err, out)
	}
	out, err := guard("ip link set lo up && ip link add hv0 type veth peer name hv1 && ip link set hv0 up && ip link set hv1 up && " +
		"ip addr add 203.0.113.1/24 dev hv0 && ip route add default via 203.0.113.2")
	if err == nil || !strings.Contains(out, "default route exists: IPv4 via hv0") || !strings.Contains(out, "198.51.100.7:9 found a route") {
		t.Fatalf("guard with a default route: %v\n%s", err, out)
	}
}
