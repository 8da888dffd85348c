package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Probe addresses: documentation ranges (RFC 5737, RFC 3849) that no
// machine routes to. The guard only connect()s a UDP socket to them, which
// picks a route and sends nothing.
var probeAddrs = []string{"198.51.100.7:9", "[2001:db8::7]:9"}

// facts are what the guard reads of the network namespace it runs in.
type facts struct {
	// ownNetNS is /proc/self/ns/net ("net:[4026531840]"); initNetNS is the
	// machine's initial namespace: PID 1's, or where PID 1's cannot be read
	// (a hardened init), kthreadd's (PID 2), a kernel thread that is always
	// in it.
	ownNetNS, initNetNS string
	// defaultRoutes are the IPv4 and IPv6 default routes, by interface.
	defaultRoutes []string
	// probes is the result of a UDP connect() to each probe address.
	probes map[string]error
}

// check decides whether a namespace is isolated: not PID 1's, no default
// route, and every probe address unreachable. It does no I/O.
func check(f facts) error {
	var problems []string
	switch {
	case f.ownNetNS == "" || f.initNetNS == "":
		problems = append(problems, "the network namespaces cannot be compared (is /proc mounted?)")
	case f.ownNetNS == f.initNetNS:
		problems = append(problems, fmt.Sprintf("this process is in the machine's initial network namespace (%s)", f.ownNetNS))
	}
	if len(f.defaultRoutes) > 0 {
		problems = append(problems, "a default route exists: "+strings.Join(f.defaultRoutes, ", "))
	}
	for _, addr := range probeAddrs {
		err, ok := f.probes[addr]
		switch {
		case !ok:
			problems = append(problems, "UDP connect to "+addr+" was not tried")
		case err == nil:
			problems = append(problems, "UDP connect to "+addr+" found a route")
		case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EAFNOSUPPORT), errors.Is(err, syscall.EADDRNOTAVAIL):
			// Unreachable, or no IPv6 at all here: nothing can leave.
		default:
			problems = append(problems, fmt.Sprintf("UDP connect to %s: %v (want network unreachable)", addr, err))
		}
	}
	if len(problems) > 0 {
		return errors.New("not isolated: " + strings.Join(problems, "; "))
	}
	return nil
}

// readFacts reads the facts of the calling process's network namespace.
func readFacts() facts {
	f := facts{probes: map[string]error{}}
	f.ownNetNS, _ = os.Readlink("/proc/self/ns/net")
	f.initNetNS = initNetNS()
	f.defaultRoutes = append(defaultRoutesV4("/proc/net/route"), defaultRoutesV6("/proc/net/ipv6_route")...)
	for _, addr := range probeAddrs {
		c, err := net.Dial("udp", addr)
		if c != nil {
			_ = c.Close()
		}
		f.probes[addr] = err
	}
	return f
}

// initNetNS is the machine's initial network namespace (see facts).
func initNetNS() string {
	for _, pid := range []string{"1", "2"} {
		if ns, err := os.Readlink("/proc/" + pid + "/ns/net"); err == nil {
			return ns
		}
	}
	return ""
}

// defaultRoutesV4 lists the interfaces of /proc/net/route's default routes
// (destination and mask 0).
func defaultRoutesV4(path string) []string {
	var out []string
	eachLine(path, func(fields []string) {
		if len(fields) >= 8 && fields[0] != "Iface" && fields[1] == "00000000" && fields[7] == "00000000" {
			out = append(out, "IPv4 via "+fields[0])
		}
	})
	return out
}

// rtfReject is RTF_REJECT, the flag of the kernel's "unreachable" routes.
const rtfReject = 0x0200

// defaultRoutesV6 lists the interfaces of /proc/net/ipv6_route's default
// routes (::/0), leaving out unreachable ones (the kernel keeps one on lo).
func defaultRoutesV6(path string) []string {
	var out []string
	eachLine(path, func(fields []string) {
		if len(fields) < 10 || fields[0] != strings.Repeat("0", 32) || fields[1] != "00" {
			return
		}
		if flags, err := strconv.ParseUint(fields[8], 16, 32); err == nil && flags&rtfReject != 0 {
			return
		}
		out = append(out, "IPv6 via "+fields[9])
	})
	return out
}

func eachLine(path string, fn func([]string)) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer func() { _ = f.Close() }()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fn(strings.Fields(s.Text()))
	}
}
