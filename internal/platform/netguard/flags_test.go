package netguard

import (
	"flag"
	"net/netip"
	"strings"
	"testing"
)

// The flags' defaults refuse the private ranges a cluster's services and pods
// live in; an exception admits one address of them, and a bad entry names
// its flag.
func TestFlagsPolicy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		refused map[string]Rule // address → rule ("" admitted)
		wantErr string
	}{
		{name: "defaults", refused: map[string]Rule{
			"10.96.0.1": RuleCluster, "172.20.0.5": RuleCluster, "192.168.1.1": RuleCluster, "100.64.0.1": RuleCluster,
			"fd12::1": RuleCluster, "127.0.0.1": RuleLoopback, "169.254.169.254": RuleMetadata, "203.0.113.7": "",
		}},
		{name: "an allowed address in a refused range", args: []string{"--external-allowed-cidrs=10.244.0.1/32"}, refused: map[string]Rule{
			"10.244.0.1": "", "10.244.0.2": RuleCluster,
		}},
		{name: "development loopback", args: []string{"--allow-insecure-loopback-external"}, refused: map[string]Rule{
			"127.0.0.1": "", "10.0.0.1": RuleCluster,
		}},
		{name: "an exception beside the metadata range is admitted", args: []string{"--external-allowed-cidrs=169.255.0.0/16,fe00::/9"}, refused: map[string]Rule{
			"169.255.0.1": "", "169.254.169.254": RuleMetadata,
		}},
		{name: "an exception for the metadata address", args: []string{"--external-allowed-cidrs=10.0.0.1/32,169.254.169.254/32"},
			wantErr: "--external-allowed-cidrs: 169.254.169.254/32 reaches into 169.254.0.0/16: metadata and link-local addresses are always refused"},
		{name: "an exception for IPv6 link-local", args: []string{"--external-allowed-cidrs=fe80::/64"},
			wantErr: "--external-allowed-cidrs: fe80::/64 reaches into fe80::/10"},
		{name: "an exception for everything", args: []string{"--external-allowed-cidrs=0.0.0.0/0"},
			wantErr: "--external-allowed-cidrs: 0.0.0.0/0 reaches into 169.254.0.0/16"},
		{name: "an exception for the IPv6 metadata address", args: []string{"--external-allowed-cidrs=fd00:ec2::/64"},
			wantErr: "--external-allowed-cidrs: fd00:ec2::/64 reaches into fd00:ec2::254/128"},
		{name: "not a CIDR", args: []string{"--external-refused-cidrs=10.0.0.0/8,ten"}, wantErr: `--external-refused-cidrs: "ten" is not a CIDR`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			var f Flags
			f.Bind(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			p, err := f.Policy()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for addr, want := range tc.refused {
				if got := p.Refuses(netip.MustParseAddr(addr)); got != want {
					t.Errorf("%s: rule %q, want %q", addr, got, want)
				}
			}
		})
	}
}
