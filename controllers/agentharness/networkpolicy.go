package agentharness

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"

	"github.com/openclaw/harness-operator/internal/harness/objects"
)

// The server pods' NetworkPolicy. Ingress: only the operator's manager and
// dispatcher pods, on the app-server port. Egress: what a session's tools
// and the model client need, and nothing cluster-internal — a prompt
// injection that runs `curl` in a session must not reach the cloud metadata
// service, the API server, other tenants' Services or pods. By default the
// pods may reach the public internet (every address except the private,
// shared, link-local and loopback ranges below) and the cluster DNS; a
// platform that knows its model provider's addresses narrows egress to
// them with the manager's --app-server-egress-cidrs
// (Reconciler.AppServerEgressCIDRs). A harness with spec.modelGateway
// holds no provider credential and reaches its model through the gateway:
// its pods may reach only the cluster DNS and the gateway's pods on the
// gateway's port, and the allowed egress above only when spec.mcp lists URL
// prefixes (an MCP server is named by host, a policy matches addresses).
// NetworkPolicies need a CNI that enforces them.

// publicIPv4Except and publicIPv6Except are the ranges the default egress
// leaves out: RFC 1918 and shared address space (where pod, Service and node
// networks live), link-local (169.254.169.254 is the clouds' metadata
// service), loopback, IPv6 unique-local (fd00:ec2::254 is AWS's IPv6
// metadata service) and link-local. (The API refuses IPv4-mapped IPv6
// blocks: policies match IPv4 traffic by its IPv4 address.)
var (
	publicIPv4Except = []string{"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
		"172.16.0.0/12", "192.168.0.0/16"}
	publicIPv6Except = []string{"::1/128", "fc00::/7", "fe80::/10"}
)

// clusterDNS selects the cluster DNS pods (the kube-dns label CoreDNS
// keeps) in kube-system: the model provider is reached by name.
var clusterDNS = networkingv1ac.NetworkPolicyPeer().
	WithNamespaceSelector(metav1ac.LabelSelector().
		WithMatchLabels(map[string]string{corev1.LabelMetadataName: "kube-system"})).
	WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{"k8s-app": "kube-dns"}))

// parseEgressCIDRs checks the --app-server-egress-cidrs values.
func parseEgressCIDRs(cidrs []string) error {
	for _, c := range cidrs {
		if _, err := netip.ParsePrefix(c); err != nil {
			return fmt.Errorf("app-server egress CIDR %q: %w", c, err)
		}
	}
	return nil
}

// networkPolicy admits only the operator's manager and dispatcher pods to the
// app-server port, and lets the pods reach only DNS and the allowed egress.
func (w workload) networkPolicy() *networkingv1ac.NetworkPolicyApplyConfiguration {
	h := w.harness
	return networkingv1ac.NetworkPolicy(objects.WorkloadName(h), h.Namespace).
		WithLabels(objects.ObjectLabels(h)).
		WithOwnerReferences(w.ownerRef()).
		WithSpec(networkingv1ac.NetworkPolicySpec().
			WithPodSelector(w.selector()).
			WithPolicyTypes("Ingress", "Egress").
			WithIngress(networkingv1ac.NetworkPolicyIngressRule().
				WithFrom(networkingv1ac.NetworkPolicyPeer().
					WithNamespaceSelector(metav1ac.LabelSelector().
						WithMatchLabels(map[string]string{corev1.LabelMetadataName: w.opNamespace})).
					WithPodSelector(metav1ac.LabelSelector().
						WithMatchLabels(map[string]string{objects.LabelName: "harness-operator"}).
						WithMatchExpressions(metav1ac.LabelSelectorRequirement().
							WithKey(objects.LabelComponent).
							WithOperator("In").
							WithValues("manager", "dispatcher")))).
				WithPorts(networkingv1ac.NetworkPolicyPort().
					WithProtocol(corev1.ProtocolTCP).
					WithPort(intstr.FromInt32(w.port)))).
			WithEgress(w.egressRules()...))
}

// egressRules: the cluster DNS on port 53, then the allowed addresses; with
// spec.modelGateway, the DNS, the gateway and (only for MCP servers) the
// allowed addresses.
func (w workload) egressRules() []*networkingv1ac.NetworkPolicyEgressRuleApplyConfiguration {
	dns := networkingv1ac.NetworkPolicyEgressRule().
		WithTo(clusterDNS).
		WithPorts(
			networkingv1ac.NetworkPolicyPort().WithProtocol(corev1.ProtocolUDP).WithPort(intstr.FromInt32(53)),
			networkingv1ac.NetworkPolicyPort().WithProtocol(corev1.ProtocolTCP).WithPort(intstr.FromInt32(53)))
	h := w.harness
	if h.Spec.ModelGateway == nil {
		return []*networkingv1ac.NetworkPolicyEgressRuleApplyConfiguration{dns, w.allowedEgress()}
	}
	rules := []*networkingv1ac.NetworkPolicyEgressRuleApplyConfiguration{dns}
	if w.gateway == nil {
		// The manager knows no gateway (checkModelGateway stops such a
		// reconcile before this): the narrowest policy.
		return rules
	}
	rules = append(rules, w.gateway.egress())
	if h.Spec.MCP != nil && len(h.Spec.MCP.AllowedURLPrefixes) > 0 {
		rules = append(rules, w.allowedEgress())
	}
	return rules
}

// allowedEgress is the public internet, or --app-server-egress-cidrs.
func (w workload) allowedEgress() *networkingv1ac.NetworkPolicyEgressRuleApplyConfiguration {
	allowed := networkingv1ac.NetworkPolicyEgressRule()
	if len(w.egressCIDRs) > 0 {
		for _, c := range w.egressCIDRs {
			allowed.WithTo(networkingv1ac.NetworkPolicyPeer().WithIPBlock(networkingv1ac.IPBlock().WithCIDR(c)))
		}
	} else {
		allowed.WithTo(
			networkingv1ac.NetworkPolicyPeer().WithIPBlock(networkingv1ac.IPBlock().
				WithCIDR("0.0.0.0/0").WithExcept(publicIPv4Except...)),
			networkingv1ac.NetworkPolicyPeer().WithIPBlock(networkingv1ac.IPBlock().
				WithCIDR("::/0").WithExcept(publicIPv6Except...)))
	}
	return allowed
}
