//go:build e2e

package system

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/controllers/agentharness"
	"github.com/openclaw/harness-operator/internal/codextest"
	"github.com/openclaw/harness-operator/internal/webhook"
	"github.com/openclaw/harness-operator/test/stubmodel"
)

// What a platform team does, in order: install, run the operator, apply
// the samples, run turns, enforce Codex-only, see it fail closed.
var _ = Describe("a platform team's path", Ordered, func() {
	var (
		codexToken    string
		dispatcherURL string
		dispatcherCA  string
	)

	It("installs the chart with helm into a namespace that enforces the restricted Pod Security level", func() {
		mustKubectl("create", "namespace", operatorNamespace)
		mustKubectl("label", "namespace", operatorNamespace,
			"pod-security.kubernetes.io/enforce=restricted", "pod-security.kubernetes.io/warn=restricted")
		// The harness namespaces exist before the install: the chart puts
		// the operator's Secret Roles into them.
		for _, ns := range append(harnessNamespaces, outsideNS) {
			mustKubectl("create", "namespace", ns)
		}
		// No volume provisioner here: a static PersistentVolume for the
		// dispatcher's journal claim (the chart's default journal type).
		applyManifest("journal-pv.yaml", fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata:
  name: e2e-dispatcher-journal
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ""
  claimRef: {namespace: %s, name: %s-dispatcher-journal}
  hostPath: {path: /tmp/e2e-dispatcher-journal}
`, operatorNamespace, release))

		webhookAddr = freeAddr()
		_, port, err := net.SplitHostPort(webhookAddr)
		Expect(err).NotTo(HaveOccurred())
		nsJSON, err := json.Marshal(harnessNamespaces)
		Expect(err).NotTo(HaveOccurred())
		// The one value the suite changes: the webhooks call the manager
		// running on this machine, since simulated Pods run nothing.
		r := helm("install", release, "charts/harness-operator", "--namespace", operatorNamespace,
			"--set", "webhook.url=https://localhost:"+port,
			"--set-json", "harnessNamespaces="+string(nsJSON),
			"--wait", "--timeout", "5m")
		Expect(r.exit).To(Equal(0), "helm install:\n%s", r)
		Expect(r.stdout).To(ContainSubstring("STATUS: deployed"))

		for _, crd := range []string{"agentharnesses", "runtimepolicies", "agentsessions"} {
			mustKubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/"+crd+".harness.openclaw.dev")
		}

		// Every chart Pod was admitted under `restricted` and runs.
		var pods corev1.PodList
		Expect(admin.List(ctx, &pods, client.InNamespace(operatorNamespace),
			client.MatchingLabels{"app.kubernetes.io/name": "harness-operator"})).To(Succeed())
		byComponent := map[string]int{}
		for _, p := range pods.Items {
			Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s", p.Name)
			byComponent[p.Labels["app.kubernetes.io/component"]]++
		}
		Expect(byComponent).To(Equal(map[string]int{"manager": 2, "dispatcher": 1}))
		var events corev1.EventList
		Expect(admin.List(ctx, &events, client.InNamespace(operatorNamespace))).To(Succeed())
		for _, e := range events.Items {
			Expect(e.Reason).NotTo(Equal("FailedCreate"), "a chart Pod was refused: %s", e.Message)
		}
		var claim corev1.PersistentVolumeClaim
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: release + "-dispatcher-journal"}, &claim)).To(Succeed())
		Expect(claim.Status.Phase).To(Equal(corev1.ClaimBound))

		// The RBAC the release created has no wildcard anywhere.
		manifest := helm("get", "manifest", release, "--namespace", operatorNamespace)
		Expect(manifest.exit).To(Equal(0))
		roles := 0
		for _, doc := range strings.Split(manifest.stdout, "\n---") {
			obj := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil || obj.Object == nil {
				continue
			}
			if k := obj.GetKind(); k != "ClusterRole" && k != "Role" {
				continue
			}
			roles++
			rules, _, _ := unstructured.NestedSlice(obj.Object, "rules")
			for _, rule := range rules {
				for _, key := range []string{"verbs", "resources", "apiGroups", "nonResourceURLs"} {
					values, _, _ := unstructured.NestedStringSlice(rule.(map[string]any), key)
					Expect(values).NotTo(ContainElement(ContainSubstring("*")), "%s %s: %s", obj.GetKind(), obj.GetName(), key)
				}
			}
		}
		Expect(roles).To(BeNumerically(">=", 6), "the release's Roles and ClusterRoles")
	})

	It("runs the manager and the dispatcher with the chart's ServiceAccounts", func() {
		// Flags as the chart passes them, but for a process on this machine:
		// webhooks on loopback (the chart's webhook.url), certificates
		// copied from the Secret the manager rotates.
		_, port, err := net.SplitHostPort(webhookAddr)
		Expect(err).NotTo(HaveOccurred())
		managerProbe := freeAddr()
		manager := startProcess("manager", []string{"KUBECONFIG=" + serviceAccountKubeconfig(operatorNamespace, release+"-manager")},
			"--operator-namespace="+operatorNamespace,
			"--harness-namespaces="+strings.Join(harnessNamespaces, ","),
			"--leader-elect=true", "--leader-election-namespace="+operatorNamespace,
			"--metrics-bind-address=0", "--health-probe-bind-address="+managerProbe,
			"--webhook-cert-mode=self-managed", "--webhook-dns-name=localhost",
			"--webhook-host=127.0.0.1", "--webhook-port="+port,
			"--webhook-cert-dir="+filepath.Join(work, "webhook-certs"), "--webhook-cert-dir-from-secret",
		)
		// The dispatcher keeps its CA in the Secret the chart names, as in
		// the cluster; its certificate also names localhost, where the CLI
		// reaches this process.
		bindAddr, dispatcherProbe := freeAddr(), freeAddr()
		tlsSecret := release + "-dispatcher-tls"
		dispatcherService := fmt.Sprintf("%s-dispatcher.%s.svc", release, operatorNamespace)
		dispatcher := startProcess("dispatcher", []string{"KUBECONFIG=" + serviceAccountKubeconfig(operatorNamespace, release+"-dispatcher")},
			"--bind-address="+bindAddr, "--probe-bind-address="+dispatcherProbe,
			"--leader-elect=true", "--leader-election-namespace="+operatorNamespace,
			"--journal-dir="+filepath.Join(work, "journal"),
			"--tls-secret-name="+tlsSecret, "--tls-secret-namespace="+operatorNamespace,
			"--tls-dns-names="+dispatcherService+",localhost", "--tls-cert-dir="+filepath.Join(work, "dispatcher-certs"),
			"--shutdown-grace=5s",
		)
		Expect(manager.WaitReady("http://"+managerProbe+"/readyz?verbose", 2*time.Minute)).To(Succeed())
		Expect(dispatcher.WaitReady("http://"+dispatcherProbe+"/readyz?verbose", 2*time.Minute)).To(Succeed())
		_, apiPort, err := net.SplitHostPort(bindAddr)
		Expect(err).NotTo(HaveOccurred())
		dispatcherURL = "https://localhost:" + apiPort

		// A gateway trusts the CA from the Secret, as the chart README says.
		caB64 := mustKubectl("get", "secret", tlsSecret, "-n", operatorNamespace, "-o", `jsonpath={.data.ca\.crt}`)
		caPEM, err := base64.StdEncoding.DecodeString(caB64)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(caPEM)).To(HavePrefix("-----BEGIN CERTIFICATE-----"))
		dispatcherCA = filepath.Join(work, "dispatcher-ca.pem")
		Expect(os.WriteFile(dispatcherCA, caPEM, 0o600)).To(Succeed())

		// The manager injected its CA into the chart's webhook configurations.
		for kind, name := range map[string]string{
			"validatingwebhookconfiguration": webhook.ValidatingConfigurationName,
			"mutatingwebhookconfiguration":   webhook.MutatingConfigurationName,
		} {
			hooks := mustKubectl("get", kind, name, "-o", "jsonpath={range .webhooks[*]}{.name}{'\\n'}{end}")
			cas := mustKubectl("get", kind, name, "-o", "jsonpath={range .webhooks[*]}{.clientConfig.caBundle}{'\\n'}{end}")
			Expect(strings.Fields(cas)).To(HaveLen(len(strings.Fields(hooks))), "%s %s: every webhook has the CA", kind, name)
			Expect(strings.Fields(hooks)).NotTo(BeEmpty())
		}
	})

	It("applies the samples with kubectl and the sample harness becomes Ready", func() {
		codexToken = randomToken()
		mustKubectl("create", "secret", "generic", "codex-token", "-n", agentsNS, "--from-literal=token="+codexToken)
		var err error
		sampleCodex, err = codextest.StartErr(suiteT, codextest.Options{
			Bin: env.codex, ProviderURL: stub.BaseURL(), Transport: codextest.WebSocket,
			WSToken: codexToken, Dir: filepath.Join(work, "codex"),
		})
		Expect(err).NotTo(HaveOccurred())

		out := mustKubectl("apply", "-f", "config/samples/")
		for _, want := range []string{
			"runtimepolicy.harness.openclaw.dev/codex-only created",
			"agentharness.harness.openclaw.dev/codex created",
			"agentsession.harness.openclaw.dev/demo created",
		} {
			Expect(out).To(ContainSubstring(want))
		}
		// The sample points at `make run`'s 127.0.0.1:4500; this suite's
		// Codex listens on a port of its own, so both can run at once.
		mustKubectl("patch", "agentharness", "codex", "-n", agentsNS, "--type=merge",
			"-p", fmt.Sprintf(`{"spec":{"external":{"url":%q}}}`, sampleCodex.URL))
		mustKubectl("wait", "--for=condition=Ready", "--timeout=120s", "agentharness/codex", "-n", agentsNS)
	})

	It("runs a turn with `kubectl harness turn` and shows it with `kubectl harness status`", func() {
		grantCLI(agentsNS)
		r := harnessCLI(dispatcherURL, dispatcherCA, "turn", "demo", "-n", agentsNS, "--prompt", "Say hello")
		Expect(r.exit).To(Equal(0), "%s", r)
		Expect(r.stdout).To(ContainSubstring(stubmodel.DefaultText))
		// The dispatcher writes the session's status right after the result.
		session := &v1alpha1.AgentSession{}
		Eventually(func(g Gomega) {
			g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: agentsNS, Name: "demo"}, session)).To(Succeed())
			g.Expect(session.Status.NativeBinding).NotTo(BeNil())
		}).WithTimeout(30 * time.Second).Should(Succeed())
		st := harnessCLI(dispatcherURL, dispatcherCA, "status", "demo", "-n", agentsNS)
		Expect(st.exit).To(Equal(0), "%s", st)
		Expect(st.stdout).To(MatchRegexp(`(?m)^Policy runtime:\s+codex`))
		Expect(st.stdout).To(ContainSubstring(session.Status.NativeBinding.ThreadID))
	})

	Context("with the sample policy: OpenAI turns run only through Codex, everywhere", func() {
		It("runs openai turns of a second namespace on Codex", func() {
			mustKubectl("create", "secret", "generic", "codex-token", "-n", teamBNS, "--from-literal=token="+codexToken)
			applyManifest("team-b.yaml", fmt.Sprintf(`apiVersion: harness.openclaw.dev/v1alpha1
kind: AgentHarness
metadata: {name: codex, namespace: %[1]s}
spec:
  harnessId: codex
  adapter: codex-app-server
  external:
    url: %[2]s
    tokenSecretRef: {name: codex-token, key: token}
---
apiVersion: harness.openclaw.dev/v1alpha1
kind: AgentSession
metadata: {name: demo-b, namespace: %[1]s}
spec:
  agentId: main
  sessionKey: agent:main:demo-b
  sessionId: 9b1f4c2e-7d3a-4e5b-8c6d-0a1b2c3d4e5f
  model: openai/gpt-5.5
`, teamBNS, sampleCodex.URL))
			mustKubectl("wait", "--for=condition=Ready", "--timeout=120s", "agentharness/codex", "-n", teamBNS)
			grantCLI(teamBNS)
			r := harnessCLI(dispatcherURL, dispatcherCA, "turn", "demo-b", "-n", teamBNS, "--prompt", "Say hello")
			Expect(r.exit).To(Equal(0), "%s", r)
			Expect(r.stdout).To(ContainSubstring(stubmodel.DefaultText))
			// Both sessions' status (written right after each result) says Codex.
			Eventually(func(g Gomega) {
				for _, ns := range []string{agentsNS, teamBNS} {
					var list v1alpha1.AgentSessionList
					g.Expect(admin.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
					for _, s := range list.Items {
						g.Expect(s.Status.Policy).NotTo(BeNil(), "%s/%s", ns, s.Name)
						g.Expect(s.Status.Policy.Runtime).To(Equal(v1alpha1.RuntimeID("codex")), "%s/%s", ns, s.Name)
						g.Expect(s.Status.LastSelection).NotTo(BeNil(), "%s/%s", ns, s.Name)
						g.Expect(s.Status.LastSelection.Runtime).To(Equal(v1alpha1.RuntimeID("codex")), "%s/%s", ns, s.Name)
					}
				}
			}).WithTimeout(30 * time.Second).Should(Succeed())
		})

		It("refuses an openclaw override and a second policy mapping openai elsewhere at admission", func() {
			r := applyManifestResult("override.yaml", openclawOverrideSession())
			Expect(r.exit).NotTo(Equal(0), "%s", r)
			Expect(r.stderr).To(ContainSubstring("spec.runtimeOverride"))
			Expect(r.stderr).To(ContainSubstring(`codex-only`))

			r = applyManifestResult("second-policy.yaml", `apiVersion: harness.openclaw.dev/v1alpha1
kind: RuntimePolicy
metadata: {name: openai-elsewhere}
spec:
  providers:
    - provider: openai
      runtime: openclaw
`)
			Expect(r.exit).NotTo(Equal(0), "%s", r)
			Expect(r.stderr).To(ContainSubstring(`contradicts RuntimePolicy "codex-only" (sessionOverrides: Deny)`))
			Expect(kubectl("get", "runtimepolicy", "openai-elsewhere").exit).NotTo(Equal(0), "nothing half-created")
		})

		It("fails closed with the exact error when the Codex harness is below the version floor", func() {
			belowFloor, err := codextest.StartErr(suiteT, codextest.Options{
				Bin: env.codexBelowFloor, ProviderURL: stub.BaseURL(), Transport: codextest.WebSocket,
				WSToken: codexToken, Dir: filepath.Join(work, "codex-below-floor"),
			})
			Expect(err).NotTo(HaveOccurred())
			mustKubectl("patch", "agentharness", "codex", "-n", teamBNS, "--type=merge",
				"-p", fmt.Sprintf(`{"spec":{"external":{"url":%q}}}`, belowFloor.URL))
			mustKubectl("wait", "--for=condition=VersionSupported=false", "--timeout=120s", "agentharness/codex", "-n", teamBNS)

			before := len(stub.Requests())
			r := harnessCLI(dispatcherURL, dispatcherCA, "turn", "demo-b", "-n", teamBNS, "--prompt", "Say hello")
			Expect(r.exit).To(Equal(3), "a fail-closed decision: %s", r)
			Expect(r.stdout + r.stderr).To(ContainSubstring("VersionBelowFloor"))
			Expect(r.stdout + r.stderr).To(ContainSubstring(
				"Codex app-server 0.149.0 or newer is required, but detected 0.148.0. Update the AgentHarness image to a newer Codex release."))
			Expect(stub.Requests()).To(HaveLen(before), "nothing reached the model")
		})

		It("fails closed with the exact error when the Codex harness is deleted", func() {
			mustKubectl("delete", "agentharness", "codex", "-n", teamBNS, "--wait=true")
			before := len(stub.Requests())
			r := harnessCLI(dispatcherURL, dispatcherCA, "turn", "demo-b", "-n", teamBNS, "--prompt", "Say hello")
			Expect(r.exit).To(Equal(3), "a fail-closed decision: %s", r)
			Expect(r.stdout + r.stderr).To(ContainSubstring("HarnessNotRegistered"))
			Expect(r.stdout + r.stderr).To(ContainSubstring(`Requested agent harness "codex" is not registered.`))
			Expect(stub.Requests()).To(HaveLen(before), "nothing reached the model")
		})

		It("restores auto when the policy is deleted", func() {
			mustKubectl("delete", "runtimepolicy", "codex-only", "--wait=true")
			for _, key := range []client.ObjectKey{{Namespace: agentsNS, Name: "demo"}, {Namespace: teamBNS, Name: "demo-b"}} {
				Eventually(func(g Gomega) {
					s := &v1alpha1.AgentSession{}
					g.Expect(admin.Get(ctx, key, s)).To(Succeed())
					g.Expect(s.Status.Policy).NotTo(BeNil())
					g.Expect(s.Status.Policy.Runtime).To(Equal(v1alpha1.RuntimeID("auto")))
					g.Expect(s.Status.Policy.MatchedPolicies).To(BeEmpty())
				}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "session %s", key)
			}
			// The override the policy refused is admitted now.
			r := applyManifestResult("override-after.yaml", openclawOverrideSession())
			Expect(r.exit).To(Equal(0), "%s", r)
		})
	})

	It("creates the workload of a managed AgentHarness, whose simulated Pods pass `restricted` and run", func() {
		mustKubectl("label", "namespace", managedNS, "pod-security.kubernetes.io/enforce=restricted")
		applyManifest("managed.yaml", fmt.Sprintf(`apiVersion: harness.openclaw.dev/v1alpha1
kind: AgentHarness
metadata: {name: codex-pool, namespace: %s}
spec:
  adapter: codex-app-server
  autoSelection: {mode: ExplicitOnly}
  appServer:
    image: codex-app-server@sha256:%s
    replicas: 2
`, managedNS, strings.Repeat("0123456789abcdef", 4)))
		// Exactly one of each, owned by the harness (garbage-collected with it).
		ownedOne := func(g Gomega, list client.ObjectList) client.Object {
			g.Expect(admin.List(ctx, list, client.InNamespace(managedNS))).To(Succeed())
			items, err := meta.ExtractList(list)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(items).To(HaveLen(1), "%T", list)
			obj := items[0].(client.Object)
			g.Expect(obj.GetOwnerReferences()).To(ContainElement(HaveField("Name", "codex-pool")), "%T %s", obj, obj.GetName())
			return obj
		}
		Eventually(func(g Gomega) {
			sts := ownedOne(g, &appsv1.StatefulSetList{}).(*appsv1.StatefulSet)
			g.Expect(sts.Status.ReadyReplicas).To(Equal(int32(2)))
			ownedOne(g, &corev1.ServiceList{})
			ownedOne(g, &corev1.SecretList{})
			ownedOne(g, &networkingv1.NetworkPolicyList{})
			ownedOne(g, &policyv1.PodDisruptionBudgetList{})
			var pods corev1.PodList
			g.Expect(admin.List(ctx, &pods, client.InNamespace(managedNS))).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(2))
			for _, p := range pods.Items {
				g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s", p.Name)
			}
		}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	})

	It("serves turns from a managed AgentHarness once its Pods' app-servers answer", func() {
		// A simulated Pod runs nothing; give each a real app-server where
		// its container would listen (KWOK hands out loopback pod IPs), with
		// the capability token the operator generated for the workload.
		var pods corev1.PodList
		Expect(admin.List(ctx, &pods, client.InNamespace(managedNS))).To(Succeed())
		var secrets corev1.SecretList
		Expect(admin.List(ctx, &secrets, client.InNamespace(managedNS))).To(Succeed())
		Expect(secrets.Items).To(HaveLen(1))
		token := string(secrets.Items[0].Data[agentharness.TokenSecretKey])
		Expect(token).NotTo(BeEmpty())
		for _, pod := range pods.Items {
			Expect(pod.Status.PodIP).To(HavePrefix("127."), "KWOK's pod IPs are loopback (hack/local-cluster.sh)")
			_, err := codextest.StartErr(suiteT, codextest.Options{
				Bin: env.codex, ProviderURL: stub.BaseURL(), Transport: codextest.WebSocket,
				ListenHost: pod.Status.PodIP, Port: int(agentharness.DefaultAppServerPort), WSToken: token,
				Dir: filepath.Join(work, "codex-"+pod.Name),
			})
			Expect(err).NotTo(HaveOccurred(), "app-server for pod %s", pod.Name)
		}
		// The handshake (version floor) and the attestation by image digest.
		mustKubectl("wait", "--for=condition=Ready", "--timeout=120s", "agentharness/codex-pool", "-n", managedNS)
		h := &v1alpha1.AgentHarness{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: managedNS, Name: "codex-pool"}, h)).To(Succeed())
		Expect(h.Status.RuntimeArtifact).NotTo(BeNil(), "attested: every server runs one digest")
		Expect(h.Status.RuntimeArtifact.Fingerprint).To(HaveSuffix(strings.Repeat("0123456789abcdef", 4)))

		applyManifest("managed-session.yaml", fmt.Sprintf(`apiVersion: harness.openclaw.dev/v1alpha1
kind: AgentSession
metadata: {name: pool, namespace: %s}
spec:
  agentId: main
  sessionKey: agent:main:pool
  sessionId: 5e4d3c2b-1a09-4f8e-b7d6-c5b4a3928170
  model: openai/gpt-5.5
  runtimeOverride: codex-pool
`, managedNS))
		grantCLI(managedNS)
		r := harnessCLI(dispatcherURL, dispatcherCA, "turn", "pool", "-n", managedNS, "--prompt", "Say hello")
		Expect(r.exit).To(Equal(0), "%s", r)
		Expect(r.stdout).To(ContainSubstring(stubmodel.DefaultText))
		// The dispatcher writes the session's status right after the result.
		Eventually(func(g Gomega) {
			session := &v1alpha1.AgentSession{}
			g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: managedNS, Name: "pool"}, session)).To(Succeed())
			g.Expect(session.Status.NativeBinding).NotTo(BeNil())
			g.Expect(session.Status.NativeBinding.Pod).To(HavePrefix("codex-pool-app-server-"), "the thread lives on a server pod")
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})

	It("refuses an AgentHarness outside the chart's harnessNamespaces, naming them", func() {
		r := applyManifestResult("outside.yaml", fmt.Sprintf(`apiVersion: harness.openclaw.dev/v1alpha1
kind: AgentHarness
metadata: {name: codex, namespace: %s}
spec:
  adapter: codex-app-server
  external:
    url: ws://127.0.0.1:1
    tokenSecretRef: {name: codex-token, key: token}
`, outsideNS))
		Expect(r.exit).NotTo(Equal(0), "%s", r)
		Expect(r.stderr).To(ContainSubstring("metadata.namespace"))
		Expect(r.stderr).To(ContainSubstring(fmt.Sprintf(`harness namespaces %s`, strings.Join(harnessNamespaces, ", "))))
		Expect(r.stderr).To(ContainSubstring(fmt.Sprintf(`%q is not one of them`, outsideNS)))
	})
})

// openclawOverrideSession is an openai session in team-b that asks for the
// embedded runtime.
func openclawOverrideSession() string {
	return fmt.Sprintf(`apiVersion: harness.openclaw.dev/v1alpha1
kind: AgentSession
metadata: {name: wants-openclaw, namespace: %s}
spec:
  agentId: main
  sessionKey: agent:main:wants-openclaw
  sessionId: 2c8e6a4f-1b3d-4f5a-9e7c-6d5b4a3c2b1a
  model: openai/gpt-5.5
  runtimeOverride: openclaw
`, teamBNS)
}

// webhookAddr is where the local manager serves the chart's webhooks.
var webhookAddr string

// applyManifest writes the YAML to a file and applies it with kubectl.
func applyManifest(name, manifest string) {
	GinkgoHelper()
	r := applyManifestResult(name, manifest)
	Expect(r.exit).To(Equal(0), "kubectl apply %s:\n%s", name, r)
}

func applyManifestResult(name, manifest string) result {
	GinkgoHelper()
	path := filepath.Join(work, name)
	Expect(os.WriteFile(path, []byte(manifest), 0o600)).To(Succeed())
	return kubectl("apply", "-f", path)
}

// grantCLI lets `kubectl harness` run turns in namespace the way the chart's
// NOTES say: the ServiceAccount harness-cli bound to the gateway ClusterRole.
func grantCLI(namespace string) {
	GinkgoHelper()
	mustKubectl("create", "serviceaccount", "harness-cli", "-n", namespace)
	mustKubectl("create", "rolebinding", "harness-cli-gateway", "-n", namespace,
		"--clusterrole="+release+"-gateway", "--serviceaccount="+namespace+":harness-cli")
}

// harnessCLI runs `kubectl harness …` through kubectl's plugin mechanism
// (kubectl-harness on PATH), against the local dispatcher.
func harnessCLI(url, ca string, args ...string) result {
	GinkgoHelper()
	return run([]string{
		"PATH=" + env.binDir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HARNESS_DISPATCHER_URL=" + url, "HARNESS_DISPATCHER_CA=" + ca,
	}, env.kubectl, append([]string{"harness"}, args...)...)
}
