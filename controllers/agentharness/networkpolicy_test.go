package agentharness

import (
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// egressAllows evaluates the rendered policy's egress rules as an enforcing
// CNI would for a TCP connection to addr:port outside the cluster DNS pods.
func egressAllows(np *networkingv1ac.NetworkPolicyApplyConfiguration, addr string, port int32) bool {
	ip := netip.MustParseAddr(addr)
	for _, rule := range np.Spec.Egress {
		portOK := len(rule.Ports) == 0
		for _, p := range rule.Ports {
			if (p.Protocol == nil || *p.Protocol == corev1.ProtocolTCP) && (p.Port == nil || p.Port.IntVal == port) {
				portOK = true
			}
		}
		if !portOK {
			continue
		}
		for _, peer := range rule.To {
			if peer.IPBlock == nil {
				continue
			}
			if !netip.MustParsePrefix(*peer.IPBlock.CIDR).Contains(ip) {
				continue
			}
			excepted := false
			for _, e := range peer.IPBlock.Except {
				excepted = excepted || netip.MustParsePrefix(e).Contains(ip)
			}
			if !excepted {
				return true
			}
		}
	}
	return false
}

// The server pods' egress: the public internet by default, never the
// cluster's own ranges or a cloud metadata service; only the configured
// addresses when the platform narrows it. NetworkPolicies are not enforced
// by the test cluster's CNI: this asserts the rendered policy.
func TestServerPodEgress(t *testing.T) {
	h := &v1alpha1.AgentHarness{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "codex"}}
	byDefault := workload{harness: h, port: 4500, opNamespace: "op"}.networkPolicy()
	narrowed := workload{harness: h, port: 4500, opNamespace: "op", egressCIDRs: []string{"203.0.113.0/24"}}.networkPolicy()
	for _, tc := range []struct {
		what, addr          string
		byDefault, narrowed bool
	}{
		{"a public model provider address", "104.18.33.45", true, false},
		{"the configured provider range", "203.0.113.7", true, true},
		{"a public IPv6 address", "2606:4700::6810:212d", true, false},
		{"the cloud metadata service", "169.254.169.254", false, false},
		{"the AWS IPv6 metadata service", "fd00:ec2::254", false, false},
		{"a Service IP (the API server's)", "10.96.0.1", false, false},
		{"a pod IP", "10.244.1.17", false, false},
		{"a node in 172.16/12", "172.18.0.2", false, false},
		{"a LAN address", "192.168.1.10", false, false},
		{"shared address space (some pod networks, Alibaba metadata)", "100.100.100.200", false, false},
		{"loopback", "127.0.0.1", false, false},
		{"an IPv6 link-local address", "fe80::1", false, false},
	} {
		if got := egressAllows(byDefault, tc.addr, 443); got != tc.byDefault {
			t.Errorf("default egress to %s (%s) allowed = %v, want %v", tc.what, tc.addr, got, tc.byDefault)
		}
		if got := egressAllows(narrowed, tc.addr, 443); got != tc.narrowed {
			t.Errorf("narrowed egress to %s (%s) allowed = %v, want %v", tc.what, tc.addr, got, tc.narrowed)
		}
	}
	for _, np := range []*networkingv1ac.NetworkPolicyApplyConfiguration{byDefault, narrowed} {
		if got := np.Spec.PolicyTypes; len(got) != 2 || got[0] != "Ingress" || got[1] != "Egress" {
			t.Errorf("policyTypes %v, want Ingress and Egress (egress is restricted)", got)
		}
		dns := np.Spec.Egress[0]
		if len(dns.To) != 1 || dns.To[0].PodSelector == nil || dns.To[0].PodSelector.MatchLabels["k8s-app"] != "kube-dns" ||
			len(dns.Ports) != 2 || dns.Ports[0].Port.IntVal != 53 || dns.Ports[1].Port.IntVal != 53 {
			t.Errorf("the first egress rule is not the cluster DNS on port 53: %+v", dns)
		}
	}
}

func TestParseEgressCIDRs(t *testing.T) {
	if err := parseEgressCIDRs([]string{"203.0.113.0/24", "2001:db8::/32"}); err != nil {
		t.Errorf("valid CIDRs refused: %v", err)
	}
	if err := parseEgressCIDRs([]string{"203.0.113.7"}); err == nil {
		t.Error("an address without a prefix length was accepted")
	}
}
