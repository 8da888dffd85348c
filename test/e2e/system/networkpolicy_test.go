//go:build e2e

package system

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // Ginkgo's DSL
	. "github.com/onsi/gomega"    //nolint:revive // Gomega's DSL
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/internal/harness/objects"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// The namespaces of the policy specs: one the dispatcher's
// clientNamespaceSelector selects (the chart's default label), one nothing
// of the chart's policies names.
const (
	policyClientNS = "e2e-policy-client"
	policyOtherNS  = "e2e-policy-other"
	// dispatcherClientLabel is the chart's default
	// networkPolicy.dispatcher.clientNamespaceSelector.
	dispatcherClientLabel = "harness.openclaw.dev/dispatcher-client=true"
)

// A connection's outcome: open, or not opened within the probe's timeout
// (kube-router rejects what no policy admits: the connect is refused).
const (
	connOpen   = "open"
	connClosed = "closed"
)

// networkPolicySpecs prove the NetworkPolicies of the chart and of the
// managed app-servers on a node that enforces them (kube-router's firewall,
// hack/local-cluster/README.md): for each, a connection the policy must
// refuse, and beside it a control that passes. They run after
// managedHarnessSpecs, whose app-server Pod they probe.
func networkPolicySpecs() {
	Context("with NetworkPolicies enforced by the node", Ordered, func() {
		// A probe Pod (bash, for /dev/tcp) in each namespace, and a target
		// no policy selects (the stub model's image, listening on 8080).
		var clientProbe, otherProbe, target corev1.Pod
		const targetPort = 8080

		BeforeAll(func() {
			for ns, label := range map[string]string{policyClientNS: dispatcherClientLabel, policyOtherNS: ""} {
				mustKubectl("create", "namespace", ns)
				labels := []string{"label", "namespace", ns, "pod-security.kubernetes.io/enforce=restricted"}
				if label != "" {
					labels = append(labels, label)
				}
				mustKubectl(labels...)
				DeferCleanup(func() { kubectl("delete", "namespace", ns, "--wait=false") })
			}
			codexRepo, codexDigest := image("CODEX_APP_SERVER")
			stubRepo, stubDigest := image("STUBMODEL")
			applyManifest("policy-pods.yaml", restrictedPod(policyClientNS, "probe", codexRepo+"@"+codexDigest, `["/bin/bash", "-c", "exec sleep infinity"]`)+
				"---\n"+restrictedPod(policyOtherNS, "probe", codexRepo+"@"+codexDigest, `["/bin/bash", "-c", "exec sleep infinity"]`)+
				"---\n"+restrictedPod(policyOtherNS, "target", stubRepo+"@"+stubDigest, `["/stubmodel", "--listen=0.0.0.0:`+strconv.Itoa(targetPort)+`"]`))
			for _, p := range []struct {
				pod *corev1.Pod
				ns  string
				n   string
			}{{&clientProbe, policyClientNS, "probe"}, {&otherProbe, policyOtherNS, "probe"}, {&target, policyOtherNS, "target"}} {
				mustKubectl("wait", "--for=condition=Ready", "--timeout=120s", "pod/"+p.n, "-n", p.ns)
				Expect(admin.Get(ctx, client.ObjectKey{Namespace: p.ns, Name: p.n}, p.pod)).To(Succeed())
				Expect(p.pod.Status.PodIP).NotTo(BeEmpty())
			}
		})

		It("admits to the dispatcher's API only Pods of the namespaces its clientNamespaceSelector selects", func() {
			ip := dispatcherPod(Default).Status.PodIP
			// The control: a selected namespace's Pod. kube-router adds a new
			// Pod's address to the policy's sets at its next sync.
			Eventually(func(g Gomega) {
				g.Expect(connects(g, clientProbe, "probe", ip, 8443)).To(Equal(connOpen))
			}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "from %s", policyClientNS)
			Expect(connects(Default, otherProbe, "probe", ip, 8443)).To(Equal(connClosed), "from %s, which the selector does not select", policyOtherNS)
		})

		It("admits to the manager Pods only their webhook and metrics ports", func() {
			var pods corev1.PodList
			Expect(admin.List(ctx, &pods, client.InNamespace(operatorNamespace),
				client.MatchingLabels{"app.kubernetes.io/name": "harness-operator", "app.kubernetes.io/component": "manager"})).To(Succeed())
			Expect(pods.Items).NotTo(BeEmpty())
			ip := pods.Items[0].Status.PodIP
			Expect(connects(Default, otherProbe, "probe", ip, 9443)).To(Equal(connOpen), "the webhook port, from any Pod")
			// The health port listens (the node's own connection is
			// admitted: kubelet probes it), but no rule names it.
			expectNodeConnects(ip, 8081)
			Expect(connects(Default, otherProbe, "probe", ip, 8081)).To(Equal(connClosed), "the health port, from a Pod")
		})

		It("admits to a managed app-server only the operator's Pods", func() {
			var pod corev1.Pod
			Expect(admin.Get(ctx, client.ObjectKey{Namespace: managedNS, Name: poolPod}, &pod)).To(Succeed())
			port := appServerPort(pod)
			expectNodeConnects(pod.Status.PodIP, port)
			Expect(connects(Default, otherProbe, "probe", pod.Status.PodIP, port)).To(Equal(connClosed), "from a Pod of another namespace")
			// The control: the dispatcher's Pod runs a turn on it.
			r := harnessCLI("turn", poolSession, "-n", managedNS, "--route-facts", "none", "--prompt", "Say hello")
			Expect(r.exit).To(Equal(0), "%s", r)
			Expect(r.stdout).To(ContainSubstring(stubmodel.DefaultText))
		})

		It("lets a managed app-server reach what its egress allows and nothing else", func() {
			var pod corev1.Pod
			Expect(admin.Get(ctx, client.ObjectKey{Namespace: managedNS, Name: poolPod}, &pod)).To(Succeed())
			// The suite's egress allowance is the stub model's address
			// (appServers.egressCIDRs): the control.
			host, port := stubAddress()
			Expect(connects(Default, pod, objects.ContainerName, host, port)).To(Equal(connOpen), "to the model at %s", host)
			// Another Pod: pod addresses are in the private ranges no
			// allowance includes. It listens: a Pod without a policy reaches it.
			Expect(connects(Default, otherProbe, "probe", target.Status.PodIP, targetPort)).To(Equal(connOpen), "from a Pod without an egress policy")
			Expect(connects(Default, pod, objects.ContainerName, target.Status.PodIP, targetPort)).To(Equal(connClosed), "from the app-server")
		})
	})
}

// restrictedPod is a Pod manifest that runs command under the restricted
// Pod Security level; its container is named like the Pod.
func restrictedPod(namespace, name, image, command string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: %s}
spec:
  terminationGracePeriodSeconds: 0
  securityContext: {runAsNonRoot: true, runAsUser: 65532, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: %s
    image: %s
    imagePullPolicy: Never
    command: %s
    securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
`, name, namespace, name, image, command)
}

// connects opens a TCP connection with bash's /dev/tcp from a container of
// pod to host:port and reports open or closed (not opened within 5 s).
func connects(g Gomega, pod corev1.Pod, container, host string, port int32) string {
	script := fmt.Sprintf(`if timeout 5 bash -c 'exec 3<>/dev/tcp/%s/%d' 2>/dev/null; then echo %s; else echo %s; fi`,
		host, port, connOpen, connClosed)
	r := kubectl("exec", "-n", pod.Namespace, pod.Name, "-c", container, "--", "/bin/bash", "-c", script)
	g.Expect(r.exit).To(Equal(0), "kubectl exec in %s/%s:\n%s", pod.Namespace, pod.Name, r)
	out := strings.TrimSpace(r.stdout)
	g.Expect(out).To(BeElementOf(connOpen, connClosed), "the probe's output")
	return out
}

// expectNodeConnects: the node (where the suite runs) opens a connection to
// addr: something listens there.
func expectNodeConnects(host string, port int32) {
	GinkgoHelper()
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(host, strconv.Itoa(int(port))), 5*time.Second)
	Expect(err).NotTo(HaveOccurred(), "the node connects to %s:%d", host, port)
	_ = conn.Close()
}

// appServerPort is the app-server container's port.
func appServerPort(pod corev1.Pod) int32 {
	GinkgoHelper()
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == objects.PortName {
				return p.ContainerPort
			}
		}
	}
	Fail("the app-server Pod names no " + objects.PortName + " port")
	return 0
}

// stubAddress is the stub model's host and port.
func stubAddress() (string, int32) {
	GinkgoHelper()
	host, port, err := net.SplitHostPort(stub.Addr())
	Expect(err).NotTo(HaveOccurred())
	n, err := strconv.Atoi(port)
	Expect(err).NotTo(HaveOccurred())
	return host, int32(n)
}
