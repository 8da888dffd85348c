// Package netguard keeps the operator's dials to user-named servers (an
// AgentHarness's external.url) away from addresses a tenant must not reach
// through the operator: link-local and cloud metadata addresses, loopback,
// and the cluster's own service and pod ranges.
//
// Metadata and link-local addresses are refused whatever the operator
// allows: they hand out node credentials and never serve an app-server.
// IPv6 addresses that carry an IPv4 address (NAT64's 64:ff9b::/96, 6to4's
// 2002::/16) reach that IPv4 address through a translator or relay, so the
// rules are applied to the embedded address too; the local-use NAT64 prefix
// (64:ff9b:1::/48) places it where the site chose, so it is refused whole.
//
// The check runs in a net.Dialer's Control hook, on the address the dial is
// about to connect to, after name resolution: a name that resolves (or
// re-resolves, DNS rebinding) to a refused address is refused, whatever it
// resolved to when admission looked at it. A refusal happens before the
// connect system call, so nothing is sent to the refused address.
package netguard

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
)

// Rule names a class of refused addresses; it appears in every refusal.
type Rule string

const (
	// RuleMetadata: cloud instance metadata services (169.254.169.254,
	// fd00:ec2::254), which hand out node credentials.
	RuleMetadata Rule = "metadata"
	// RuleLinkLocal: 169.254.0.0/16 and fe80::/10.
	RuleLinkLocal Rule = "link-local"
	// RuleLoopback: 127.0.0.0/8, ::1 and the unspecified addresses (which
	// connect to the local host): the dialing process's own ports.
	RuleLoopback Rule = "loopback"
	// RuleCluster: a configured cluster-internal range (Policy.ClusterCIDRs).
	RuleCluster Rule = "cluster"
	// RuleTranslated: an IPv6 prefix that reaches IPv4 addresses through a
	// translator at a place the prefix does not tell (local-use NAT64,
	// 64:ff9b:1::/48).
	RuleTranslated Rule = "translated"
)

var metadataAddrs = []netip.Addr{netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("fd00:ec2::254")}

// NeverAllowed are the ranges no Policy.Allow entry may reach into: the
// metadata addresses and the link-local ranges (unicast and multicast).
var NeverAllowed = []netip.Prefix{
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("fe80::/10"),
	netip.MustParsePrefix("224.0.0.0/24"),
	netip.MustParsePrefix("ff02::/16"),
	netip.MustParsePrefix("fd00:ec2::254/128"),
}

// Prefixes of IPv6 addresses that lead to an IPv4 address.
var (
	nat64WellKnown = netip.MustParsePrefix("64:ff9b::/96")   // RFC 6052: the IPv4 address is the last 32 bits
	nat64LocalUse  = netip.MustParsePrefix("64:ff9b:1::/48") // RFC 8215: the site picks the embedding
	sixToFour      = netip.MustParsePrefix("2002::/16")      // RFC 3056: the IPv4 address is bits 16 to 47
)

// Policy says which resolved addresses a dial may reach. The zero Policy
// refuses metadata, link-local and loopback addresses.
type Policy struct {
	// ClusterCIDRs are the cluster's service and pod ranges, refused.
	ClusterCIDRs []netip.Prefix
	// Allow are ranges admitted even though a rule refuses them (the
	// operator's explicit exceptions, e.g. an in-cluster external server).
	Allow []netip.Prefix
	// AllowLoopback admits loopback addresses (development, with plain
	// ws:// external servers on the same machine).
	AllowLoopback bool
}

// RefusedError is a dial the policy refused.
type RefusedError struct {
	// Address is the resolved host:port the dial would have connected to.
	Address string
	// Rule is why.
	Rule Rule
}

// Error names the address and the rule.
func (e *RefusedError) Error() string {
	return fmt.Sprintf("refusing to dial %s: %s address (rule %q; allowed only by the operator's configuration)", e.Address, e.Rule, e.Rule)
}

// Refuses returns the rule that refuses addr, or "" when addr may be dialed.
// An IPv6 address that embeds an IPv4 address is refused when either is.
// Allow never admits a metadata or link-local address.
func (p Policy) Refuses(addr netip.Addr) Rule {
	addr = addr.Unmap()
	if v4, ok := embeddedIPv4(addr); ok {
		if rule := p.Refuses(v4); rule != "" {
			return rule
		}
	}
	rule := p.rule(addr)
	switch rule {
	case "", RuleMetadata, RuleLinkLocal:
		return rule
	}
	for _, a := range p.Allow {
		if a.Contains(addr) {
			return ""
		}
	}
	return rule
}

// embeddedIPv4 is the IPv4 address a NAT64 (well-known prefix) or 6to4
// address leads to.
func embeddedIPv4(addr netip.Addr) (netip.Addr, bool) {
	b := addr.As16()
	switch {
	case !addr.Is6():
		return netip.Addr{}, false
	case nat64WellKnown.Contains(addr):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(addr):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

func (p Policy) rule(addr netip.Addr) Rule {
	for _, m := range metadataAddrs {
		if addr == m {
			return RuleMetadata
		}
	}
	if addr.IsLinkLocalUnicast() || addr.IsLinkLocalMulticast() {
		return RuleLinkLocal
	}
	if (addr.IsLoopback() || addr.IsUnspecified()) && !p.AllowLoopback {
		return RuleLoopback
	}
	if nat64LocalUse.Contains(addr) {
		return RuleTranslated
	}
	for _, c := range p.ClusterCIDRs {
		if c.Contains(addr) {
			return RuleCluster
		}
	}
	return ""
}

// Control is a net.Dialer Control hook that refuses, with a *RefusedError,
// a connection to an address the policy refuses. address is the resolved
// ip:port the dialer passes; anything else is refused too (fail closed).
func (p Policy) Control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("refusing to dial %q: not a resolved ip:port: %w", address, err)
	}
	if rule := p.Refuses(ap.Addr()); rule != "" {
		return &RefusedError{Address: address, Rule: rule}
	}
	return nil
}

// Dialer returns a copy of base (nil: a zero net.Dialer) whose control hook
// first applies the policy, then base's own Control or ControlContext.
func (p Policy) Dialer(base *net.Dialer) *net.Dialer {
	d := &net.Dialer{}
	if base != nil {
		*d = *base
	}
	nextCtx, next := d.ControlContext, d.Control
	d.Control = nil
	d.ControlContext = func(ctx context.Context, network, address string, c syscall.RawConn) error {
		if err := p.Control(network, address, c); err != nil {
			return err
		}
		switch {
		case nextCtx != nil:
			return nextCtx(ctx, network, address, c)
		case next != nil:
			return next(network, address, c)
		}
		return nil
	}
	return d
}

// ParseCIDRs parses a comma-separated list of CIDRs (a flag's value), naming
// the flag and the entry in an error.
func ParseCIDRs(flagName, list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		pfx, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a CIDR: %w", flagName, s, err)
		}
		out = append(out, pfx.Masked())
	}
	return out, nil
}
