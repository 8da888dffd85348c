package netguard_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/openclaw/harness-operator/internal/platform/netguard"
)

func TestPolicyRefuses(t *testing.T) {
	cluster := []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12"), netip.MustParsePrefix("10.244.0.0/16"), netip.MustParsePrefix("fd00:10:96::/112")}
	strict := netguard.Policy{ClusterCIDRs: cluster}
	dev := netguard.Policy{ClusterCIDRs: cluster, AllowLoopback: true}
	allowed := netguard.Policy{ClusterCIDRs: cluster, Allow: []netip.Prefix{netip.MustParsePrefix("10.96.0.10/32"), netip.MustParsePrefix("169.254.169.254/32")}}
	// A Policy built in code, not from the flags (which refuse such entries).
	linkLocalAllowed := netguard.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}}
	for _, tc := range []struct {
		name   string
		policy netguard.Policy
		addr   string
		want   netguard.Rule
	}{
		{"a public address is dialed", strict, "203.0.113.10", ""},
		{"a public IPv6 address is dialed", strict, "2001:db8::1", ""},
		{"the IPv4 metadata address is refused", strict, "169.254.169.254", netguard.RuleMetadata},
		{"the IPv6 metadata address is refused", strict, "fd00:ec2::254", netguard.RuleMetadata},
		{"the metadata address written IPv4-mapped is refused", strict, "::ffff:169.254.169.254", netguard.RuleMetadata},
		{"IPv4 link-local is refused", strict, "169.254.1.1", netguard.RuleLinkLocal},
		{"IPv6 link-local is refused", strict, "fe80::1", netguard.RuleLinkLocal},
		{"loopback is refused by default", strict, "127.0.0.1", netguard.RuleLoopback},
		{"all of 127/8 is loopback", strict, "127.1.2.3", netguard.RuleLoopback},
		{"IPv6 loopback is refused by default", strict, "::1", netguard.RuleLoopback},
		{"the unspecified address reaches the local host: refused", strict, "0.0.0.0", netguard.RuleLoopback},
		{"loopback is dialed in development", dev, "127.0.0.1", ""},
		{"development does not open link-local", dev, "169.254.169.254", netguard.RuleMetadata},
		{"a configured service range is refused", strict, "10.96.0.1", netguard.RuleCluster},
		{"a configured pod range is refused", strict, "10.244.3.7", netguard.RuleCluster},
		{"a configured IPv6 service range is refused", strict, "fd00:10:96::a", netguard.RuleCluster},
		{"an address outside the configured ranges is dialed", strict, "10.95.255.255", ""},
		{"an allowed exception in a cluster range is dialed", allowed, "10.96.0.10", ""},
		{"the exception is only that address", allowed, "10.96.0.11", netguard.RuleCluster},
		{"an exception cannot admit the metadata address", allowed, "169.254.169.254", netguard.RuleMetadata},
		{"an exception cannot admit link-local", linkLocalAllowed, "169.254.1.1", netguard.RuleLinkLocal},
		{"an exception cannot admit IPv6 link-local", linkLocalAllowed, "fe80::1", netguard.RuleLinkLocal},
		{"NAT64 of a public address is dialed", strict, "64:ff9b::203.0.113.10", ""},
		{"NAT64 of the metadata address is refused", strict, "64:ff9b::169.254.169.254", netguard.RuleMetadata},
		{"NAT64 of a cluster address is refused", strict, "64:ff9b::10.96.0.1", netguard.RuleCluster},
		{"NAT64 of loopback is refused", strict, "64:ff9b::127.0.0.1", netguard.RuleLoopback},
		{"NAT64 of an excepted cluster address is dialed", allowed, "64:ff9b::10.96.0.10", ""},
		{"NAT64 of the metadata address stays refused under an exception", linkLocalAllowed, "64:ff9b::a9fe:a9fe", netguard.RuleMetadata},
		{"local-use NAT64 is refused", strict, "64:ff9b:1::a9fe:a9fe", netguard.RuleTranslated},
		{"6to4 of a public address is dialed", strict, "2002:cb00:710a::1", ""},
		{"6to4 of the metadata address is refused", strict, "2002:a9fe:a9fe::1", netguard.RuleMetadata},
		{"6to4 of a cluster address is refused", strict, "2002:0a60:0001::1", netguard.RuleCluster},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.policy.Refuses(netip.MustParseAddr(tc.addr)); got != tc.want {
				t.Errorf("Refuses(%s) = %q, want %q", tc.addr, got, tc.want)
			}
		})
	}
}

func TestParseCIDRs(t *testing.T) {
	got, err := netguard.ParseCIDRs("--cluster-cidrs", " 10.96.0.0/12,,fd00::1/64 ")
	if err != nil || len(got) != 2 || got[0].String() != "10.96.0.0/12" || got[1].String() != "fd00::/64" {
		t.Fatalf("got %v, %v", got, err)
	}
	if _, err := netguard.ParseCIDRs("--cluster-cidrs", "10.96.0.0/12,10.0.0.1"); err == nil || !strings.Contains(err.Error(), `--cluster-cidrs: "10.0.0.1" is not a CIDR`) {
		t.Fatalf("err = %v", err)
	}
}

// connectSentinel stands for the connect step: it is the base dialer's
// control hook, which runs after the policy's and before connect. It records
// the address and returns an error, so no test ever connects anywhere.
type connectSentinel struct {
	mu      sync.Mutex
	reached []string
}

var errSentinel = errors.New("connect step reached (the test stops here)")

func (s *connectSentinel) control(_, address string, _ syscall.RawConn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reached = append(s.reached, address)
	return errSentinel
}

func (s *connectSentinel) addresses() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reached...)
}

// TestDialerChecksTheResolvedAddress dials names that an in-process DNS
// server resolves: a refused address fails in the control hook with an
// error naming the address and the rule, and the connect step is never
// reached; an admitted one reaches it (the control).
func TestDialerChecksTheResolvedAddress(t *testing.T) {
	cluster := []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12")}
	for _, tc := range []struct {
		name        string
		answers     []string // A/AAAA records of the name
		wantRule    netguard.Rule
		wantAddr    string
		wantReached []string
	}{
		{name: "a name resolving to the metadata address", answers: []string{"169.254.169.254"}, wantRule: netguard.RuleMetadata, wantAddr: "169.254.169.254:443"},
		{name: "a name resolving to a link-local address", answers: []string{"169.254.10.10"}, wantRule: netguard.RuleLinkLocal, wantAddr: "169.254.10.10:443"},
		{name: "a name resolving to IPv6 metadata", answers: []string{"fd00:ec2::254"}, wantRule: netguard.RuleMetadata, wantAddr: "[fd00:ec2::254]:443"},
		{name: "a name resolving to a cluster service address", answers: []string{"10.96.0.1"}, wantRule: netguard.RuleCluster, wantAddr: "10.96.0.1:443"},
		{name: "a name resolving to loopback", answers: []string{"127.0.0.1"}, wantRule: netguard.RuleLoopback, wantAddr: "127.0.0.1:443"},
		{name: "control: a name resolving to a public address reaches connect", answers: []string{"203.0.113.10"}, wantReached: []string{"203.0.113.10:443"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sentinel := &connectSentinel{}
			d := netguard.Policy{ClusterCIDRs: cluster}.Dialer(&net.Dialer{Resolver: resolverFor(t, func(int) []string { return tc.answers }), Control: sentinel.control})
			_, err := d.DialContext(context.Background(), "tcp", "server.example:443")
			if got := sentinel.addresses(); strings.Join(got, ",") != strings.Join(tc.wantReached, ",") {
				t.Fatalf("connect step reached for %v, want %v", got, tc.wantReached)
			}
			if tc.wantRule == "" {
				if !errors.Is(err, errSentinel) {
					t.Fatalf("err = %v, want the sentinel (the dial reached the connect step)", err)
				}
				return
			}
			expectRefused(t, err, tc.wantAddr, tc.wantRule)
		})
	}
}

// TestDialerRefusesARebindingName: admission or a first dial may have seen a
// harmless address; the next resolution answers the metadata address, and
// that dial is refused, because the check is on the address being dialed.
func TestDialerRefusesARebindingName(t *testing.T) {
	sentinel := &connectSentinel{}
	var mu sync.Mutex
	dials := 0
	answers := func(int) []string {
		mu.Lock()
		defer mu.Unlock()
		if dials == 0 {
			return []string{"203.0.113.10"}
		}
		return []string{"169.254.169.254"}
	}
	d := netguard.Policy{}.Dialer(&net.Dialer{Resolver: resolverFor(t, answers), Control: sentinel.control})
	if _, err := d.DialContext(context.Background(), "tcp", "rebind.example:443"); !errors.Is(err, errSentinel) {
		t.Fatalf("first dial: %v, want the connect step (control)", err)
	}
	mu.Lock()
	dials++
	mu.Unlock()
	_, err := d.DialContext(context.Background(), "tcp", "rebind.example:443")
	expectRefused(t, err, "169.254.169.254:443", netguard.RuleMetadata)
	if got := sentinel.addresses(); len(got) != 1 {
		t.Fatalf("connect step reached for %v, want only the first dial's", got)
	}
}

// TestDialerTriesOnlyAdmittedAddresses: a name with a refused and an admitted
// address reaches connect only for the admitted one.
func TestDialerTriesOnlyAdmittedAddresses(t *testing.T) {
	sentinel := &connectSentinel{}
	d := netguard.Policy{}.Dialer(&net.Dialer{Resolver: resolverFor(t, func(int) []string { return []string{"169.254.169.254", "203.0.113.10"} }), Control: sentinel.control})
	_, _ = d.DialContext(context.Background(), "tcp4", "mixed.example:443")
	if got := sentinel.addresses(); len(got) != 1 || got[0] != "203.0.113.10:443" {
		t.Fatalf("connect step reached for %v, want only 203.0.113.10:443", got)
	}
}

func expectRefused(t *testing.T, err error, addr string, rule netguard.Rule) {
	t.Helper()
	var refused *netguard.RefusedError
	if !errors.As(err, &refused) || refused.Address != addr || refused.Rule != rule {
		t.Fatalf("err = %v, want a refusal of %s by rule %q", err, addr, rule)
	}
	if !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), string(rule)) {
		t.Fatalf("the error %q does not name the address %s and the rule %q", err, addr, rule)
	}
}
