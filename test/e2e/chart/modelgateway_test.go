//go:build e2e

package chart

import (
	"net/netip"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	harnessobjects "github.com/openclaw/harness-operator/internal/harness/objects"
	"github.com/openclaw/harness-operator/internal/testutil"
)

// gatewayName is the model gateway's Deployment, Service, ServiceAccount,
// PodDisruptionBudget and NetworkPolicy.
const gatewayName = fullname + "-model-gateway"

// gatewaySets are the value sets with modelGateway.enabled, and what each
// sets that the tests check.
var gatewaySets = map[string]struct {
	harnessNamespaces []string
	replicas          int32
	servingSecret     string // the Secret of the dispatcher's certificate
}{
	"model-gateway":         {[]string{"team-a", "team-b"}, 2, fullname + "-dispatcher-tls"},
	"model-gateway-opt-ins": {[]string{releaseNamespace, "team-a"}, 3, "dispatcher-tls"},
}

// harnessNamespacesOf is harnessNamespaces of a value set.
func harnessNamespacesOf(valueSet string) []string {
	if valueSet == "harness-namespaces" {
		return []string{"team-a", "team-b"}
	}
	return gatewaySets[valueSet].harnessNamespaces
}

// TestModelGatewayOffRendersNothingOfIt: with modelGateway.enabled false
// (the default) no value set renders anything of the gateway: no object,
// no flag, no certificate name, no policy peer. Together with the golden
// files of these sets, which predate the gateway and still match, this is
// "off renders what the chart rendered before".
func TestModelGatewayOffRendersNothingOfIt(t *testing.T) {
	for _, valueSet := range valueSets {
		if _, on := gatewaySets[valueSet]; on {
			continue
		}
		t.Run(valueSet, func(t *testing.T) {
			if out := template(t, valuesFile(t, valueSet)); strings.Contains(out, "model-gateway") {
				i := strings.Index(out, "model-gateway")
				t.Errorf("modelGateway is off, but the rendering mentions model-gateway: …%s…", out[max(0, i-200):min(len(out), i+100)])
			}
		})
	}
}

// TestModelGateway checks the gateway's Deployment, PodDisruptionBudget and
// Service, and that every flag pointing at it — the manager's five, the
// dispatcher's --model-gateway-user and certificate names, the gateway's
// own — names the same Service, port, labels, Secrets and identity.
func TestModelGateway(t *testing.T) {
	for valueSet, want := range gatewaySets {
		t.Run(valueSet, func(t *testing.T) {
			objs := objectsOf(t, valueSet)
			d := deployment(t, objs, gatewayName)
			pod := d.Spec.Template
			ctr := pod.Spec.Containers[0]
			args := argMap(ctr.Args[1:])

			if d.Spec.Replicas == nil || *d.Spec.Replicas != want.replicas {
				t.Errorf("gateway replicas = %v, want %d", d.Spec.Replicas, want.replicas)
			}
			if s := d.Spec.Strategy; s.Type != appsv1.RollingUpdateDeploymentStrategyType || s.RollingUpdate == nil ||
				s.RollingUpdate.MaxUnavailable == nil || s.RollingUpdate.MaxUnavailable.String() != "0" {
				t.Errorf("gateway strategy = %+v, want RollingUpdate with maxUnavailable 0", s)
			}
			// Soft anti-affinity: spread over nodes, never unschedulable.
			aff := pod.Spec.Affinity
			if aff == nil || aff.PodAntiAffinity == nil || len(aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 ||
				len(aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 ||
				aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.TopologyKey != corev1.LabelHostname ||
				!selects(aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.LabelSelector.MatchLabels, pod.Labels) {
				t.Errorf("gateway affinity = %+v, want one preferred anti-affinity by hostname on its own pods", aff)
			}
			var pdb policyv1.PodDisruptionBudget
			find(t, objs, "PodDisruptionBudget", releaseNamespace, gatewayName).decode(t, &pdb)
			if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.String() != "1" || pdb.Spec.MinAvailable != nil ||
				!selects(pdb.Spec.Selector.MatchLabels, pod.Labels) {
				t.Errorf("gateway PodDisruptionBudget = %+v, want maxUnavailable 1 over the gateway's pods", pdb.Spec)
			}

			// The dispatcher's image and binary, its subcommand.
			dispatcher := deployment(t, objs, fullname+"-dispatcher")
			dctr := dispatcher.Spec.Template.Spec.Containers[0]
			dargs := argMap(dctr.Args)
			if ctr.Image != dctr.Image || !slices.Equal(ctr.Command, []string{"/dispatcher"}) || ctr.Args[0] != "model-gateway" {
				t.Errorf("gateway runs %s %v %v, want the dispatcher's image %s, /dispatcher model-gateway", ctr.Image, ctr.Command, ctr.Args, dctr.Image)
			}
			if l := pod.Labels; l["app.kubernetes.io/name"] != "harness-operator" || l["app.kubernetes.io/component"] != "model-gateway" {
				t.Errorf("gateway pod labels = %v", l)
			}
			if harnessNetworkPolicyPeer(t).Matches(labels.Set(pod.Labels)) {
				t.Errorf("gateway pod labels %v match the peer the app-server pods admit: the gateway never calls an app-server", pod.Labels)
			}

			// Probes on the probe port; the Service on the serving port.
			probePort := containerPort(ctr, "probes")
			if _, p, _ := strings.Cut(args["--probe-bind-address"], ":"); p != strconv.Itoa(int(probePort)) || probePort == 0 {
				t.Errorf("--probe-bind-address %q, probes port %d", args["--probe-bind-address"], probePort)
			}
			for name, p := range map[string]*corev1.Probe{"liveness": ctr.LivenessProbe, "readiness": ctr.ReadinessProbe} {
				if p == nil || p.HTTPGet == nil || p.HTTPGet.Port.String() != "probes" {
					t.Errorf("gateway %s probe = %+v, want HTTP on port probes", name, p)
				}
			}
			port := containerPort(ctr, "https")
			if args["--bind-address"] != ":"+strconv.Itoa(int(port)) || port == 0 {
				t.Errorf("--bind-address %q, https port %d", args["--bind-address"], port)
			}
			svc := service(t, objs, gatewayName)
			if !selects(svc.Spec.Selector, pod.Labels) || !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool {
				return p.Name == "https" && p.Port == 8443 && p.TargetPort.String() == "https"
			}) {
				t.Errorf("gateway Service selector %v ports %+v: want port https 8443 to the gateway's pods", svc.Spec.Selector, svc.Spec.Ports)
			}

			// The manager sends harnesses to that Service, lets their pods
			// reach these pods on this port, and gives them the CA of the
			// certificate the gateway serves.
			margs := argMap(deployment(t, objs, fullname+"-manager").Spec.Template.Spec.Containers[0].Args)
			u, err := url.Parse(margs["--model-gateway-url"])
			if err != nil || u.Scheme != "https" || u.Hostname() != gatewayName+"."+releaseNamespace+".svc" || u.Port() != "8443" {
				t.Errorf("manager --model-gateway-url = %q, want https://%s.%s.svc:8443", margs["--model-gateway-url"], gatewayName, releaseNamespace)
			}
			if margs["--model-gateway-namespace"] != releaseNamespace || margs["--model-gateway-port"] != strconv.Itoa(int(port)) {
				t.Errorf("manager --model-gateway-namespace=%q --model-gateway-port=%q, want %s and the pods' port %d",
					margs["--model-gateway-namespace"], margs["--model-gateway-port"], releaseNamespace, port)
			}
			sel, err := labels.ConvertSelectorToLabelsMap(margs["--model-gateway-pod-labels"])
			if err != nil || !labels.Equals(sel, d.Spec.Selector.MatchLabels) {
				t.Errorf("manager --model-gateway-pod-labels = %q (%v), want the gateway's selector %v", margs["--model-gateway-pod-labels"], err, d.Spec.Selector.MatchLabels)
			}
			if margs["--model-gateway-ca-secret"] != want.servingSecret {
				t.Errorf("manager --model-gateway-ca-secret = %q, want %s", margs["--model-gateway-ca-secret"], want.servingSecret)
			}

			// The gateway serves the dispatcher's certificate, from a volume
			// of its Secret that leaves the CA's key out; the certificate
			// names the gateway's Service when the dispatcher issues it.
			tls := volume(pod.Spec, "tls")
			if tls == nil || tls.Secret == nil || tls.Secret.SecretName != want.servingSecret {
				t.Fatalf("gateway tls volume = %+v, want the Secret %s", tls, want.servingSecret)
			}
			var keys []string
			for _, it := range tls.Secret.Items {
				keys = append(keys, it.Key)
			}
			if slices.Sort(keys); !slices.Equal(keys, []string{"ca.crt", "tls.crt", "tls.key"}) {
				t.Errorf("gateway tls volume carries %v, want exactly ca.crt, tls.crt and tls.key (never ca.key)", keys)
			}
			for flag, item := range map[string]string{"--tls-cert-file": "tls.crt", "--tls-key-file": "tls.key", "--dispatcher-ca-file": "ca.crt"} {
				if mountedItem(ctr, pod.Spec, args[flag]) != "tls/"+item {
					t.Errorf("gateway %s=%q is not the item %s of its tls volume", flag, args[flag], item)
				}
			}
			if _, ok := args["--tls-secret-name"]; ok {
				t.Errorf("gateway args %v read the certificate Secret through the API: it has no right to", ctr.Args)
			}
			if want.servingSecret == fullname+"-dispatcher-tls" {
				names := strings.Split(dargs["--tls-dns-names"], ",")
				if names[0] != fullname+"-dispatcher."+releaseNamespace+".svc" || !slices.Contains(names, u.Hostname()) {
					t.Errorf("dispatcher --tls-dns-names = %v: want its own Service first and the gateway's %s", names, u.Hostname())
				}
			} else if _, ok := dargs["--tls-dns-names"]; ok {
				t.Errorf("dispatcher --tls-dns-names with an existing certificate Secret")
			}

			// The gateway asks the dispatcher's Service, with a token for
			// the dispatcher's audience, as the one user it answers.
			du, err := url.Parse(args["--dispatcher-url"])
			if err != nil || du.Scheme != "https" || du.Hostname() != fullname+"-dispatcher."+releaseNamespace+".svc" || du.Port() != "8443" {
				t.Errorf("gateway --dispatcher-url = %q, want the dispatcher's Service", args["--dispatcher-url"])
			}
			if mountedItem(ctr, pod.Spec, args["--token-file"]) != "dispatcher-token/token" {
				t.Errorf("gateway --token-file=%q is not its projected token", args["--token-file"])
			}
			tok := volume(pod.Spec, "dispatcher-token")
			if tok == nil || tok.Projected == nil || len(tok.Projected.Sources) != 1 || tok.Projected.Sources[0].ServiceAccountToken == nil {
				t.Fatalf("gateway dispatcher-token volume = %+v, want one projected ServiceAccount token", tok)
			}
			if sat := tok.Projected.Sources[0].ServiceAccountToken; sat.Audience != dargs["--token-audience"] || sat.Audience == "" ||
				sat.ExpirationSeconds == nil || *sat.ExpirationSeconds > 24*3600 || sat.Path != "token" {
				t.Errorf("gateway token %+v: want the dispatcher's --token-audience %q, within its default 24h lifetime bound", sat, dargs["--token-audience"])
			}
			user := "system:serviceaccount:" + releaseNamespace + ":" + pod.Spec.ServiceAccountName
			if dargs["--model-gateway-user"] != user || pod.Spec.ServiceAccountName != gatewayName {
				t.Errorf("dispatcher --model-gateway-user = %q, gateway ServiceAccount %q: want %s", dargs["--model-gateway-user"], pod.Spec.ServiceAccountName, user)
			}
			var sa corev1.ServiceAccount
			find(t, objs, "ServiceAccount", releaseNamespace, gatewayName).decode(t, &sa)
			if sa.AutomountServiceAccountToken == nil || !*sa.AutomountServiceAccountToken {
				t.Errorf("gateway ServiceAccount does not mount its API token (it reads harnesses and Secrets)")
			}
			for _, flag := range []string{"--turn-token-secret-name", "--turn-token-secret-namespace"} {
				if args[flag] != dargs[flag] || args[flag] == "" {
					t.Errorf("gateway %s=%q, dispatcher's %q: want the same", flag, args[flag], dargs[flag])
				}
			}
			wantPrivate := valueSet == "model-gateway-opt-ins"
			if _, ok := args["--allow-private-upstreams"]; ok != wantPrivate {
				t.Errorf("gateway --allow-private-upstreams set %v, want %v", ok, wantPrivate)
			}
		})
	}
}

// mountedItem is "<volume>/<path>" of the file at p in the container, ""
// when no volume is mounted there.
func mountedItem(c corev1.Container, spec corev1.PodSpec, p string) string {
	for _, m := range c.VolumeMounts {
		rest, ok := strings.CutPrefix(p, strings.TrimSuffix(m.MountPath, "/")+"/")
		if !ok || strings.Contains(rest, "/") {
			continue
		}
		v := volume(spec, m.Name)
		if v == nil {
			return ""
		}
		if v.Secret != nil && !slices.ContainsFunc(v.Secret.Items, func(it corev1.KeyToPath) bool { return it.Path == rest }) {
			return ""
		}
		return m.Name + "/" + rest
	}
	return ""
}

// TestModelGatewayRBAC: the gateway gets exactly get on the turn-token
// Secret by name in the release namespace, and get on AgentHarnesses and
// Secrets in each harness namespace; nothing cluster-wide, no list or
// watch, no write, and no right on the dispatcher's certificate Secret
// (its volume carries what it serves).
func TestModelGatewayRBAC(t *testing.T) {
	for valueSet, set := range gatewaySets {
		t.Run(valueSet, func(t *testing.T) {
			r := renderRBAC(t, objectsOf(t, valueSet))
			want := []grant{{resource: "secrets", verb: "get", namespace: releaseNamespace, names: []string{"harness-dispatcher-turn-token"}}}
			for _, ns := range set.harnessNamespaces {
				want = append(want,
					grant{group: v1alpha1.GroupVersion.Group, resource: "agentharnesses", verb: "get", namespace: ns},
					grant{resource: "secrets", verb: "get", namespace: ns})
			}
			got := r.grantsOf(t, gatewayName)
			checkExact(t, "the model gateway", got, want, nil)
			for _, b := range r.clusterRoleBindings {
				if boundTo(b.Subjects, gatewayName) {
					t.Errorf("ClusterRoleBinding %s binds the model gateway", b.Name)
				}
			}
			// The per-namespace grants are Roles of their own, bound to the
			// gateway alone.
			for _, b := range r.roleBindings {
				if boundTo(b.Subjects, gatewayName) && (len(b.Subjects) != 1 || b.RoleRef.Kind != "Role") {
					t.Errorf("RoleBinding %s/%s: subjects %+v, roleRef %+v; want the gateway alone, bound to a Role", b.Namespace, b.Name, b.Subjects, b.RoleRef)
				}
			}
		})
	}
}

// TestModelGatewayNetworkPolicies evaluates the rendered policies: the
// gateway admits the app-server pods of the harness namespaces (the labels
// the manager gives them) on its port and nothing else there; it may reach
// the dispatcher, the cluster DNS, the API server and the upstreams, not
// the cloud metadata service or the cluster's other addresses; the
// dispatcher admits the gateway's pods on its API port.
func TestModelGatewayNetworkPolicies(t *testing.T) {
	type dial struct {
		to   string // an address, or "dispatcher", "dns" (the peers by label)
		port int32
		want bool
	}
	cases := map[string][]dial{
		// Defaults: the public internet for upstreams, any address on the
		// API server's ports.
		"model-gateway": {
			{"dispatcher", 8443, true}, {"dispatcher", 8083, false}, {"dns", 53, true},
			{"203.0.113.7", 443, true}, {"2001:db8::7", 443, true}, {"10.96.0.1", 443, true}, {"10.0.0.5", 6443, true},
			{"169.254.169.254", 80, false}, {"10.0.0.5", 8080, false}, {"192.168.1.1", 80, false}, {"127.0.0.1", 8080, false},
		},
		// Narrowed: upstreams in egressCIDRs, the API server at its address.
		"model-gateway-opt-ins": {
			{"dispatcher", 8443, true}, {"dns", 53, true},
			{"10.40.3.4", 8000, true}, {"203.0.113.7", 443, true}, {"192.0.2.10", 6443, true},
			{"198.51.100.7", 443, false}, {"10.96.0.1", 443, false}, {"192.0.2.10", 443, false}, {"169.254.169.254", 80, false},
		},
	}
	for valueSet, dials := range cases {
		t.Run(valueSet, func(t *testing.T) {
			objs := objectsOf(t, valueSet)
			gw := deployment(t, objs, gatewayName)
			dispatcherPods := deployment(t, objs, fullname+"-dispatcher").Spec.Template.Labels
			var np networkingv1.NetworkPolicy
			find(t, objs, "NetworkPolicy", releaseNamespace, gatewayName).decode(t, &np)
			if !labels.Equals(np.Spec.PodSelector.MatchLabels, gw.Spec.Selector.MatchLabels) || len(np.Spec.PodSelector.MatchExpressions) != 0 {
				t.Errorf("gateway NetworkPolicy selects %+v, want the gateway's pods %v", np.Spec.PodSelector, gw.Spec.Selector.MatchLabels)
			}
			if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) {
				t.Errorf("gateway NetworkPolicy policyTypes %v, want [Ingress Egress]", np.Spec.PolicyTypes)
			}

			// Ingress: app-server pods of each harness namespace, as the
			// manager labels them, on the gateway's port; not from another
			// namespace, another pod, or on another port.
			port := containerPort(gw.Spec.Template.Spec.Containers[0], "https")
			server := func(ns string) map[string]string {
				return harnessobjects.ObjectLabels(&v1alpha1.AgentHarness{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "codex"},
					Spec:       v1alpha1.AgentHarnessSpec{Adapter: v1alpha1.AdapterCodexAppServer},
				})
			}
			for _, ns := range gatewaySets[valueSet].harnessNamespaces {
				if !ingressAdmits(t, np, ns, server(ns), port) {
					t.Errorf("the gateway does not admit app-server pods of %s on %d", ns, port)
				}
				if ingressAdmits(t, np, ns, server(ns), 8444) {
					t.Errorf("the gateway admits app-server pods of %s on 8444", ns)
				}
				if ingressAdmits(t, np, ns, map[string]string{"app": "tool"}, port) {
					t.Errorf("the gateway admits any pod of %s", ns)
				}
			}
			if ingressAdmits(t, np, "elsewhere", server("elsewhere"), port) {
				t.Error("the gateway admits app-server pods of a namespace outside harnessNamespaces")
			}
			if !ingressAdmits(t, np, "monitoring", map[string]string{"app": "prometheus"}, containerPort(gw.Spec.Template.Spec.Containers[0], "probes")) {
				t.Error("the gateway's metrics are not admitted from the metrics namespaces")
			}

			for _, d := range dials {
				var got bool
				switch d.to {
				case "dispatcher":
					got = egressAllowsPod(t, np, releaseNamespace, dispatcherPods, d.port)
				case "dns":
					got = egressAllowsPod(t, np, "kube-system", map[string]string{"k8s-app": "kube-dns"}, d.port)
				default:
					got = egressAllowsIP(np, netip.MustParseAddr(d.to), d.port)
				}
				if got != d.want {
					t.Errorf("the gateway may connect to %s:%d: %v, want %v", d.to, d.port, got, d.want)
				}
			}

			// The dispatcher admits the gateway's pods on its API port.
			var dnp networkingv1.NetworkPolicy
			find(t, objs, "NetworkPolicy", releaseNamespace, fullname+"-dispatcher").decode(t, &dnp)
			if !ingressAdmits(t, dnp, releaseNamespace, gw.Spec.Template.Labels, 8443) {
				t.Error("the dispatcher does not admit the gateway's pods on 8443")
			}
			if ingressAdmits(t, dnp, releaseNamespace, gw.Spec.Template.Labels, 8081) {
				t.Error("the dispatcher admits the gateway's pods on its probe port")
			}
		})
	}
	// Off, nothing; and networkPolicy.enabled false renders no policy even
	// with the gateway.
	for _, o := range objects(t, writeValues(t, "modelGateway:\n  enabled: true\nnetworkPolicy:\n  enabled: false\n")) {
		if o.Kind == "NetworkPolicy" {
			t.Errorf("networkPolicy.enabled=false still renders NetworkPolicy %s", key(o.Namespace, o.Name))
		}
	}
}

// nsLabels are the labels of a namespace the API server sets.
func nsLabels(ns string) labels.Set { return labels.Set{corev1.LabelMetadataName: ns} }

// peerSelects reports whether a peer (without ipBlock) selects a pod of the
// labels in ns, the policy being in policyNS.
func peerSelects(t *testing.T, p networkingv1.NetworkPolicyPeer, policyNS, ns string, pod map[string]string) bool {
	t.Helper()
	if p.IPBlock != nil {
		return false
	}
	if p.NamespaceSelector == nil && ns != policyNS {
		return false
	}
	if p.NamespaceSelector != nil && !labelSelectorMatches(t, p.NamespaceSelector, nsLabels(ns)) {
		return false
	}
	return p.PodSelector == nil || labelSelectorMatches(t, p.PodSelector, labels.Set(pod))
}

func labelSelectorMatches(t *testing.T, s *metav1.LabelSelector, l labels.Set) bool {
	t.Helper()
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		t.Fatalf("selector %+v: %v", s, err)
	}
	return sel.Matches(l)
}

func portMatches(ports []networkingv1.NetworkPolicyPort, port int32) bool {
	if len(ports) == 0 {
		return true
	}
	return slices.ContainsFunc(ports, func(p networkingv1.NetworkPolicyPort) bool {
		return (p.Protocol == nil || *p.Protocol == corev1.ProtocolTCP) && (p.Port == nil || p.Port.IntValue() == int(port))
	})
}

func ingressAdmits(t *testing.T, np networkingv1.NetworkPolicy, ns string, pod map[string]string, port int32) bool {
	t.Helper()
	return slices.ContainsFunc(np.Spec.Ingress, func(r networkingv1.NetworkPolicyIngressRule) bool {
		return portMatches(r.Ports, port) && (len(r.From) == 0 || slices.ContainsFunc(r.From, func(p networkingv1.NetworkPolicyPeer) bool {
			return peerSelects(t, p, np.Namespace, ns, pod)
		}))
	})
}

func egressAllowsPod(t *testing.T, np networkingv1.NetworkPolicy, ns string, pod map[string]string, port int32) bool {
	t.Helper()
	return slices.ContainsFunc(np.Spec.Egress, func(r networkingv1.NetworkPolicyEgressRule) bool {
		return portMatches(r.Ports, port) && (len(r.To) == 0 || slices.ContainsFunc(r.To, func(p networkingv1.NetworkPolicyPeer) bool {
			return peerSelects(t, p, np.Namespace, ns, pod)
		}))
	})
}

// egressAllowsIP evaluates the ipBlock peers (an address outside the pod
// network: pod selectors never match it).
func egressAllowsIP(np networkingv1.NetworkPolicy, ip netip.Addr, port int32) bool {
	return slices.ContainsFunc(np.Spec.Egress, func(r networkingv1.NetworkPolicyEgressRule) bool {
		return portMatches(r.Ports, port) && (len(r.To) == 0 || slices.ContainsFunc(r.To, func(p networkingv1.NetworkPolicyPeer) bool {
			if p.IPBlock == nil || !netip.MustParsePrefix(p.IPBlock.CIDR).Contains(ip) {
				return false
			}
			return !slices.ContainsFunc(p.IPBlock.Except, func(e string) bool { return netip.MustParsePrefix(e).Contains(ip) })
		}))
	})
}

// TestModelGatewayFlagsExist builds the dispatcher and checks every flag
// the chart passes to `dispatcher model-gateway` is one the subcommand
// defines.
func TestModelGatewayFlagsExist(t *testing.T) {
	bin := t.TempDir()
	if err := testutil.BuildBinaries(bin, "./cmd/dispatcher"); err != nil {
		t.Fatal(err)
	}
	// -h prints the flags; the subcommand's flag set then exits 2.
	out, _ := exec.Command(filepath.Join(bin, "dispatcher"), "model-gateway", "-h").CombinedOutput()
	defined := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+-([a-z0-9-]+)`).FindAllStringSubmatch(string(out), -1) {
		defined[m[1]] = true
	}
	if !defined["dispatcher-url"] || !defined["token-file"] {
		t.Fatalf("dispatcher model-gateway -h did not list its flags:\n%s", out)
	}
	for valueSet := range gatewaySets {
		for _, a := range deployment(t, objectsOf(t, valueSet), gatewayName).Spec.Template.Spec.Containers[0].Args[1:] {
			name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			if !defined[name] {
				t.Errorf("%s: dispatcher model-gateway is passed %s, which it does not define", valueSet, a)
			}
		}
	}
}
