package engine

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/openclaw/harness-operator/internal/platform/netguard"
)

// An MCP server URL passes the same address rules as an external
// app-server, on every address its host resolves to (localhost through the
// resolver, literals as they are), and plain http only to loopback on a
// development dispatcher. Nothing is dialed.
func TestMCPServerAddressRules(t *testing.T) {
	strict := netguard.Policy{ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}
	dev := netguard.Policy{ClusterCIDRs: strict.ClusterCIDRs, AllowLoopback: true}
	excepted := netguard.Policy{ClusterCIDRs: strict.ClusterCIDRs, Allow: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}}
	for _, tc := range []struct {
		name   string
		policy netguard.Policy
		url    string
		want   string // "" admitted, else a part of the refusal
	}{
		{"a public address over https", strict, "https://203.0.113.7/mcp", ""},
		{"plain http to a public address", dev, "http://203.0.113.7/mcp", "must be https"},
		{"a metadata address", dev, "https://169.254.169.254/mcp", "metadata address"},
		{"a link-local address", dev, "https://[fe80::1]/mcp", "link-local address"},
		{"a cluster address", strict, "https://10.2.3.4/mcp", "cluster address"},
		{"a cluster address the operator excepted", excepted, "https://10.1.3.4/mcp", ""},
		{"loopback on a production dispatcher", strict, "https://127.0.0.1:9/mcp", "loopback address"},
		{"a name resolving to loopback on a production dispatcher", strict, "https://localhost:9/mcp", "loopback address"},
		{"plain http to loopback on a development dispatcher", dev, "http://127.0.0.1:9/mcp", ""},
		{"plain http to localhost on a development dispatcher", dev, "http://localhost:9/mcp", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &Engine{opts: Options{ExternalDial: tc.policy}}
			got := e.checkMCPAddress(context.Background(), tc.url)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("checkMCPAddress(%s) = %q, want %q", tc.url, got, tc.want)
			}
		})
	}
}
