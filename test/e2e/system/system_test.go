//go:build e2e

package system

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/manager/webhook"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// What a platform team does, in order: install, apply the samples, run
// turns, enforce Codex-only, see it fail closed; run a managed harness in a
// real container; survive its Pod and the dispatcher's Pod going away.
var _ = Describe("a platform team's path", Ordered, func() {
	var codexToken string

	It("installs the chart's images with helm into namespaces that enforce the restricted Pod Security level", func() {
		// Every namespace involved enforces `restricted`; the harness
		// namespaces exist before the install: the chart puts the
		// operator's Secret Roles into them.
		for _, ns := range append([]string{operatorNamespace, outsideNS}, harnessNamespaces...) {
			mustKubectl("create", "namespace", ns)
			mustKubectl("label", "namespace", ns,
				"pod-security.kubernetes.io/enforce=restricted", "pod-security.kubernetes.io/warn=restricted")
		}
		// No volume provisioner here: a static hostPath PersistentVolume on
		// the node (this machine) for the dispatcher's journal claim, owned
		// by the dispatcher's user.
		Expect(os.MkdirAll(journalDir(), 0o700)).To(Succeed())
		Expect(os.Chown(journalDir(), 65532, 65532)).To(Succeed())
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
  hostPath: {path: %s, type: Directory}
`, operatorNamespace, release, journalDir()))

		managerRepo, managerDigest := image("MANAGER")
		dispatcherRepo, dispatcherDigest := image("DISPATCHER")
		Expect(path.Dir(managerRepo)).To(Equal(path.Dir(dispatcherRepo)), "one repository holds both images")
		nsJSON, err := json.Marshal(harnessNamespaces)
		Expect(err).NotTo(HaveOccurred())
		// The images are on the node already (imported by
		// hack/local-cluster.sh); Never makes a missing one an error
		// instead of a pull.
		r := helm("install", release, "charts/harness-operator", "--namespace", operatorNamespace,
			"--set", "image.repository="+path.Dir(managerRepo),
			"--set", "image.digests.manager="+managerDigest,
			"--set", "image.digests.dispatcher="+dispatcherDigest,
			"--set", "image.pullPolicy=Never",
			"--set-json", "harnessNamespaces="+string(nsJSON),
			// The TLS fronts of the external app-servers listen on the
			// gateway, inside the private ranges the operator refuses to
			// dial by default: the one exception.
			"--set-json", `externalServers.allowedCIDRs=["`+env.gateway+`/32"]`,
			// The node enforces NetworkPolicy: the managed app-servers'
			// egress must admit the stub model on the gateway.
			"--set-json", `appServers.egressCIDRs=["`+env.gateway+`/32"]`,
			// The model gateway: its upstream is the stub model on the
			// gateway address, a private one, and it reads harnesses from
			// the API server there (modelgateway_test.go).
			"--set", "modelGateway.enabled=true",
			"--set", "modelGateway.allowPrivateUpstreams=true",
			"--set-json", `modelGateway.egressCIDRs=["`+env.gateway+`/32"]`,
			"--set-json", `modelGateway.apiServer.cidrs=["`+env.gateway+`/32"]`,
			"--set-json", `modelGateway.apiServer.ports=[443,`+apiServerPort()+`]`,
			"--wait", "--timeout", "5m")
		Expect(r.exit).To(Equal(0), "helm install:\n%s", r)
		Expect(r.stdout).To(ContainSubstring("STATUS: deployed"))

		for _, crd := range []string{"agentharnesses", "runtimepolicies", "agentsessions"} {
			mustKubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/"+crd+".harness.openclaw.dev")
		}

		// Every chart Pod was admitted under `restricted` and runs its
		// image, by digest, in a container on the real node.
		var pods corev1.PodList
		Expect(admin.List(ctx, &pods, client.InNamespace(operatorNamespace),
			client.MatchingLabels{"app.kubernetes.io/name": "harness-operator"})).To(Succeed())
		byComponent := map[string]int{}
		for _, p := range pods.Items {
			component := p.Labels["app.kubernetes.io/component"]
			byComponent[component]++
			expectRunsImage(p, map[string]string{"manager": managerDigest, "dispatcher": dispatcherDigest, "model-gateway": dispatcherDigest}[component])
		}
		Expect(byComponent).To(Equal(map[string]int{"manager": 2, "dispatcher": 1, "model-gateway": 2}))
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

	It("has the manager Pods serve the admission webhooks through their Service, with the CA they injected", func() {
		for kind, name := range map[string]string{
			"validatingwebhookconfiguration": webhook.ValidatingConfigurationName,
			"mutatingwebhookconfiguration":   webhook.MutatingConfigurationName,
		} {
			hooks := mustKubectl("get", kind, name, "-o", "jsonpath={range .webhooks[*]}{.name}{'\\n'}{end}")
			services := mustKubectl("get", kind, name, "-o", "jsonpath={range .webhooks[*]}{.clientConfig.service.name}{'\\n'}{end}")
			cas := mustKubectl("get", kind, name, "-o", "jsonpath={range .webhooks[*]}{.clientConfig.caBundle}{'\\n'}{end}")
			Expect(strings.Fields(hooks)).NotTo(BeEmpty())
			Expect(strings.Fields(services)).To(HaveEach(release+"-webhook"), "%s %s: every webhook calls the Service", kind, name)
			Expect(strings.Fields(services)).To(HaveLen(len(strings.Fields(hooks))))
			Expect(strings.Fields(cas)).To(HaveLen(len(strings.Fields(hooks))), "%s %s: every webhook has the CA", kind, name)
		}
		// An AgentHarness outside the chart's harnessNamespaces is refused by
		// the validating webhook, naming them and the manager's flag: the API
		// server reached the manager Pods (an unreachable webhook with
		// failurePolicy Fail refuses too, but with a different message).
		r := applyManifestResult("refused.yaml", fmt.Sprintf(`apiVersion: harness.openclaw.dev/v1alpha1
kind: AgentHarness
metadata: {name: codex, namespace: %s}
spec:
  adapter: codex-app-server
  external:
    url: wss://codex.example:1
    tokenSecretRef: {name: codex-token, key: token}
`, outsideNS))
		Expect(r.exit).NotTo(Equal(0), "%s", r)
		Expect(r.stderr).To(ContainSubstring("metadata.namespace"))
		Expect(r.stderr).To(ContainSubstring(fmt.Sprintf(`harness namespaces %s`, strings.Join(harnessNamespaces, ", "))))
		Expect(r.stderr).To(ContainSubstring(fmt.Sprintf(`%q is not one of them`, outsideNS)))
		Expect(r.stderr).To(ContainSubstring("manager flag --harness-namespaces"))
	})

	It("applies the samples with kubectl and the sample harness becomes Ready", func() {
		codexToken = randomToken()
		mustKubectl("create", "secret", "generic", "codex-token", "-n", agentsNS, "--from-literal=token="+codexToken)
		var err error
		// Outside the cluster, where the dispatcher Pod reaches it: on the
		// bridge's gateway address.
		sampleCodex, err = codextest.StartErr(suiteT, codextest.Options{
			Bin: env.codex, ProviderURL: stub.BaseURL(), Transport: codextest.WebSocket,
			ListenHost: env.gateway, WSToken: codexToken, Dir: filepath.Join(work, "codex"),
		})
		Expect(err).NotTo(HaveOccurred())

		// The sample points at `make run`'s Codex on ws://127.0.0.1:4500,
		// which only a manager in development mode admits. This suite's
		// Codex listens on the gateway at plain ws:// too: a TLS front with
		// a private CA serves it at wss://, and the applied copy of the
		// samples points the harness there (spec.external.caBundle trusts
		// the CA); everything else is applied as shipped.
		sampleFront = startTLSFront(sampleCodex.URL)
		out := mustKubectl("apply", "-f", samplesFor(sampleFront))
		for _, want := range []string{
			"runtimepolicy.harness.openclaw.dev/codex-only created",
			"agentharness.harness.openclaw.dev/codex created",
			"agentsession.harness.openclaw.dev/demo created",
		} {
			Expect(out).To(ContainSubstring(want))
		}
		mustKubectl("wait", "--for=condition=Ready", "--timeout=120s", "agentharness/codex", "-n", agentsNS)
	})

	It("runs a turn with `kubectl harness turn` and shows it with `kubectl harness status`", func() {
		grantCLI(agentsNS)
		r := harnessCLI("turn", "demo", "-n", agentsNS, "--prompt", "Say hello")
		Expect(r.exit).To(Equal(0), "%s", r)
		Expect(r.stdout).To(ContainSubstring(stubmodel.DefaultText))
		// The dispatcher writes the session's status right after the result.
		session := &v1alpha1.AgentSession{}
		Eventually(func(g Gomega) {
			g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: agentsNS, Name: "demo"}, session)).To(Succeed())
			g.Expect(session.Status.NativeBinding).NotTo(BeNil())
		}).WithTimeout(30 * time.Second).Should(Succeed())
		st := harnessCLI("status", "demo", "-n", agentsNS)
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
    caBundle: %[3]s
---
apiVersion: harness.openclaw.dev/v1alpha1
kind: AgentSession
metadata: {name: demo-b, namespace: %[1]s}
spec:
  agentId: main
  sessionKey: agent:main:demo-b
  sessionId: 9b1f4c2e-7d3a-4e5b-8c6d-0a1b2c3d4e5f
  model: openai/gpt-5.5
`, teamBNS, sampleFront.URL, base64.StdEncoding.EncodeToString(sampleFront.CABundle)))
			mustKubectl("wait", "--for=condition=Ready", "--timeout=120s", "agentharness/codex", "-n", teamBNS)
			grantCLI(teamBNS)
			r := harnessCLI("turn", "demo-b", "-n", teamBNS, "--prompt", "Say hello")
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
				ListenHost: env.gateway, WSToken: codexToken, Dir: filepath.Join(work, "codex-below-floor"),
			})
			Expect(err).NotTo(HaveOccurred())
			mustKubectl("patch", "agentharness", "codex", "-n", teamBNS, "--type=merge",
				"-p", startTLSFront(belowFloor.URL).externalPatch())
			mustKubectl("wait", "--for=condition=VersionSupported=false", "--timeout=120s", "agentharness/codex", "-n", teamBNS)

			before := len(stub.Requests())
			r := harnessCLI("turn", "demo-b", "-n", teamBNS, "--prompt", "Say hello")
			Expect(r.exit).To(Equal(3), "a fail-closed decision: %s", r)
			Expect(r.stdout + r.stderr).To(ContainSubstring("VersionBelowFloor"))
			Expect(r.stdout + r.stderr).To(ContainSubstring(
				"Codex app-server 0.149.0 or newer is required, but detected 0.148.0. Update the AgentHarness image to a newer Codex release."))
			Expect(stub.Requests()).To(HaveLen(before), "nothing reached the model")
		})

		It("fails closed with the exact error when the Codex harness is deleted", func() {
			mustKubectl("delete", "agentharness", "codex", "-n", teamBNS, "--wait=true")
			before := len(stub.Requests())
			r := harnessCLI("turn", "demo-b", "-n", teamBNS, "--prompt", "Say hello")
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

	managedHarnessSpecs()
	networkPolicySpecs()
	modelGatewaySpecs()
	sandboxSpecs()
	faultSpecs()
	replicaSpecs()
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

// apiServerPort is the API server's port on the node, as Pods reach it
// behind the Service kubernetes.
func apiServerPort() string {
	GinkgoHelper()
	u, err := url.Parse(cfg.Host)
	Expect(err).NotTo(HaveOccurred())
	Expect(u.Port()).NotTo(BeEmpty(), "the kubeconfig's server %s names its port", cfg.Host)
	return u.Port()
}

// journalDir is the node's directory behind the journal's PersistentVolume
// (hostPath volumes live in the cluster's volumes directory, which down
// removes).
func journalDir() string { return filepath.Join(env.volumesDir, "dispatcher-journal") }

// expectRunsImage checks that the Pod is Ready on a real node and that its
// one container runs the image with the digest.
func expectRunsImage(p corev1.Pod, digest string) {
	GinkgoHelper()
	Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s", p.Name)
	Expect(p.Status.ContainerStatuses).To(HaveLen(1), "pod %s", p.Name)
	c := p.Status.ContainerStatuses[0]
	Expect(c.Ready).To(BeTrue(), "pod %s", p.Name)
	Expect(c.ContainerID).To(HavePrefix("containerd://"), "pod %s runs in containerd", p.Name)
	Expect(c.ImageID).To(HaveSuffix("@"+digest), "pod %s", p.Name)
	Expect(p.Status.PodIP).NotTo(HavePrefix("127."), "pod %s has an address on the pod network", p.Name)
	// For the record: the test log lists each pod's node, address and image.
	GinkgoWriter.Printf("pod %s/%s on %s at %s: %s (%s)\n", p.Namespace, p.Name, p.Spec.NodeName, p.Status.PodIP, c.Image, c.ImageID)
}

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

// samplesFor copies config/samples/ (its top level) into the suite's work
// directory with the sample harness's external server replaced by front.
func samplesFor(front *tlsFront) string {
	GinkgoHelper()
	dir := filepath.Join(work, "samples")
	Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	files, err := filepath.Glob(filepath.Join(env.repoRoot, "config", "samples", "*.yaml"))
	Expect(err).NotTo(HaveOccurred())
	const sampleURL = "    url: ws://127.0.0.1:4500\n"
	replaced := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		Expect(err).NotTo(HaveOccurred())
		text := string(data)
		if strings.Contains(text, sampleURL) {
			replaced++
			text = strings.Replace(text, sampleURL, "    url: "+front.URL+"\n    caBundle: "+base64.StdEncoding.EncodeToString(front.CABundle)+"\n", 1)
		}
		Expect(os.WriteFile(filepath.Join(dir, filepath.Base(f)), []byte(text), 0o644)).To(Succeed())
	}
	Expect(replaced).To(Equal(1), "one sample harness points at %s", sampleURL)
	return dir
}

// grantCLI lets `kubectl harness` run turns in namespace the way the chart's
// NOTES say: the ServiceAccount harness-cli bound to the gateway ClusterRole.
func grantCLI(namespace string) {
	GinkgoHelper()
	mustKubectl("create", "serviceaccount", "harness-cli", "-n", namespace)
	mustKubectl("create", "rolebinding", "harness-cli-gateway", "-n", namespace,
		"--clusterrole="+release+"-gateway", "--serviceaccount="+namespace+":harness-cli")
}

// cliEnv puts kubectl-harness on PATH for kubectl's plugin mechanism. No
// dispatcher URL: the CLI goes through the API server's service proxy to the
// dispatcher's Service.
func cliEnv() []string {
	return []string{"PATH=" + env.binDir + string(os.PathListSeparator) + os.Getenv("PATH")}
}

// harnessCLI runs `kubectl harness …` to its end.
func harnessCLI(args ...string) result {
	GinkgoHelper()
	return run(cliEnv(), env.kubectl, append([]string{"harness"}, args...)...)
}
