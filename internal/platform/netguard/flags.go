package netguard

import (
	"flag"
	"fmt"
)

// Flag names of the external-server dial policy; the manager and the
// dispatcher bind the same ones, so the chart renders one list for both.
const (
	RefusedCIDRsFlag          = "external-refused-cidrs"
	AllowedCIDRsFlag          = "external-allowed-cidrs"
	AllowInsecureLoopbackFlag = "allow-insecure-loopback-external"
)

// DefaultRefusedCIDRs are the private and shared address ranges, where a
// cluster's service and pod ranges live: refused unless the operator lists
// an exception (--external-allowed-cidrs) or other ranges.
const DefaultRefusedCIDRs = "10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,100.64.0.0/10,fc00::/7"

// Flags are the command-line settings of a Policy.
type Flags struct {
	refused, allowed string
	// AllowInsecureLoopback is --allow-insecure-loopback-external: plain ws://
	// external servers on a loopback host are admitted and dialed
	// (development only).
	AllowInsecureLoopback bool
}

// Bind registers the flags on fs.
func (f *Flags) Bind(fs *flag.FlagSet) {
	fs.StringVar(&f.refused, RefusedCIDRsFlag, DefaultRefusedCIDRs, "Comma-separated CIDRs an external app-server (spec.external.url) may not be dialed at, checked on every resolved address; they must cover the cluster's service and pod ranges (the default: every private and shared range). Cloud metadata and link-local addresses are always refused, loopback unless --"+AllowInsecureLoopbackFlag+" or an --"+AllowedCIDRsFlag+" entry admits it; an IPv6 address that leads to an IPv4 address (NAT64 64:ff9b::/96, 6to4 2002::/16) is checked on that address too, and local-use NAT64 (64:ff9b:1::/48) is refused.")
	fs.StringVar(&f.allowed, AllowedCIDRsFlag, "", "Comma-separated CIDRs an external app-server may be dialed at although a rule refuses them (e.g. one in-cluster address). An entry that overlaps a metadata or link-local range (169.254.0.0/16, fe80::/10, 224.0.0.0/24, ff02::/16, fd00:ec2::254) is refused at start.")
	fs.BoolVar(&f.AllowInsecureLoopback, AllowInsecureLoopbackFlag, false, "Development only: admit and dial external app-servers at plain ws:// on a loopback host (127.0.0.0/8, [::1], localhost). Without it external.url must be wss:// and loopback addresses are refused.")
}

// Policy is the Policy the flags describe; an error names the flag and the
// entry that is not a CIDR.
func (f *Flags) Policy() (Policy, error) {
	refused, err := ParseCIDRs("--"+RefusedCIDRsFlag, f.refused)
	if err != nil {
		return Policy{}, err
	}
	allowed, err := ParseCIDRs("--"+AllowedCIDRsFlag, f.allowed)
	if err != nil {
		return Policy{}, err
	}
	// Refuses ignores such an entry anyway; refusing to start says so
	// instead of letting the operator believe the address is reachable.
	for _, a := range allowed {
		for _, never := range NeverAllowed {
			if a.Overlaps(never) {
				return Policy{}, fmt.Errorf("--%s: %s reaches into %s: metadata and link-local addresses are always refused, no entry may allow them",
					AllowedCIDRsFlag, a, never)
			}
		}
	}
	return Policy{ClusterCIDRs: refused, Allow: allowed, AllowLoopback: f.AllowInsecureLoopback}, nil
}

// String describes the policy for a start-up log line.
func (f *Flags) String() string {
	return fmt.Sprintf("refused %q, allowed %q, insecure loopback %v", f.refused, f.allowed, f.AllowInsecureLoopback)
}
