//go:build e2e

package system

import (
	"fmt"
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
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// The managed harness of the suite: one replica of the Codex app-server
// image, pointed at the stub model the way a user points Codex at an
// OpenAI-compatible endpoint.
const (
	poolHarness = "codex-pool"
	poolSession = "pool"
	poolPod     = poolHarness + "-app-server-0"
)

// managedHarnessSpecs are the specs of a managed AgentHarness whose
// StatefulSet runs the Codex app-server image in a real container.
func managedHarnessSpecs() {
	It("runs a managed AgentHarness's StatefulSet with the Codex image under `restricted`", func() {
		_, digest := image("CODEX_APP_SERVER")
		// What a user does for an OpenAI-compatible endpoint: the key as an
		// environment variable, and a Codex config naming the endpoint as a
		// model provider, placed in the native home (Codex merges it over
		// the image's /etc/codex/config.toml).
		mustKubectl("create", "secret", "generic", "model-key", "-n", managedNS, "--from-literal=key=stub-key")
		config := filepath.Join(work, "codex-config.toml")
		Expect(os.WriteFile(config, []byte(fmt.Sprintf(`model_provider = "e2e-model"

[model_providers.e2e-model]
name = "The suite's stub model"
base_url = %q
wire_api = "responses"
env_key = "OPENAI_API_KEY"
request_max_retries = 0
stream_max_retries = 0
`, stub.BaseURL())), 0o600)).To(Succeed())
		mustKubectl("create", "secret", "generic", "codex-config", "-n", managedNS, "--from-file=config.toml="+config)
		applyManifest("managed.yaml", managedHarness(poolHarness, ""))
		// Exactly one of each, owned by the harness (garbage-collected with it).
		ownedOne := func(g Gomega, list client.ObjectList) client.Object {
			g.Expect(admin.List(ctx, list, client.InNamespace(managedNS))).To(Succeed())
			items, err := meta.ExtractList(list)
			g.Expect(err).NotTo(HaveOccurred())
			var owned []client.Object
			for _, item := range items {
				obj := item.(client.Object)
				for _, ref := range obj.GetOwnerReferences() {
					if ref.Name == poolHarness {
						owned = append(owned, obj)
					}
				}
			}
			g.Expect(owned).To(HaveLen(1), "%T owned by %s", list, poolHarness)
			return owned[0]
		}
		Eventually(func(g Gomega) {
			sts := ownedOne(g, &appsv1.StatefulSetList{}).(*appsv1.StatefulSet)
			g.Expect(sts.Status.ReadyReplicas).To(Equal(int32(1)))
			ownedOne(g, &corev1.ServiceList{})
			ownedOne(g, &corev1.SecretList{})
			ownedOne(g, &networkingv1.NetworkPolicyList{})
			ownedOne(g, &policyv1.PodDisruptionBudgetList{})
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		var pod corev1.Pod
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: managedNS, Name: poolPod}, &pod)).To(Succeed())
		expectRunsImage(pod, digest)

		// The handshake with the Codex in the container (version floor), and
		// the attestation by the image's digest.
		mustKubectl("wait", "--for=condition=Ready", "--timeout=120s", "agentharness/"+poolHarness, "-n", managedNS)
		h := &v1alpha1.AgentHarness{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: managedNS, Name: poolHarness}, h)).To(Succeed())
		Expect(h.Status.RuntimeArtifact).NotTo(BeNil(), "attested: every server runs one digest")
		Expect(h.Status.RuntimeArtifact.Fingerprint).To(HaveSuffix(strings.TrimPrefix(digest, "sha256:")))
	})

	It("answers a turn from Codex in its Pod", func() {
		applyManifest("managed-session.yaml", fmt.Sprintf(`apiVersion: harness.openclaw.dev/v1alpha1
kind: AgentSession
metadata: {name: %s, namespace: %s}
spec:
  agentId: main
  sessionKey: agent:main:pool
  sessionId: 5e4d3c2b-1a09-4f8e-b7d6-c5b4a3928170
  model: openai/gpt-5.5
  runtimeOverride: %s
`, poolSession, managedNS, poolHarness))
		grantCLI(managedNS)
		// The session names its harness with runtimeOverride. OpenAI's
		// official route declares only `codex` compatible, so with route
		// facts this harness would fail closed; its turns here carry none
		// (pending: the override decides; docs/design/contract-rules.md, rule 1).
		r := harnessCLI("turn", poolSession, "-n", managedNS, "--route-facts", "none", "--prompt", "Say hello")
		Expect(r.exit).To(Equal(0), "%s", r)
		Expect(r.stdout).To(ContainSubstring(stubmodel.DefaultText))
		// The dispatcher writes the session's status right after the result.
		Eventually(func(g Gomega) {
			session := &v1alpha1.AgentSession{}
			g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: managedNS, Name: poolSession}, session)).To(Succeed())
			g.Expect(session.Status.NativeBinding).NotTo(BeNil())
			g.Expect(session.Status.NativeBinding.Pod).To(Equal(poolPod), "the thread lives on the server pod")
		}).WithTimeout(30 * time.Second).Should(Succeed())
	})

	It("asks the gateway before a native command runs in the Codex container: approved it runs, denied it does not", func() {
		// The redirect makes the command one Codex does not consider safe,
		// so approval mode untrusted asks before it runs; the CLI answers.
		const approved, denied = "approved-in-pod", "denied-in-pod"
		r := harnessCLI("turn", poolSession, "-n", managedNS, "--route-facts", "none", "--approval-mode", "untrusted", "--approve", "always", "--prompt",
			stubmodel.ShellDirective+" echo "+approved+" > approved.txt; cat approved.txt")
		Expect(r.exit).To(Equal(0), "%s", r)
		Expect(r.stdout).To(ContainSubstring("[approval]"))
		Expect(r.stdout).To(ContainSubstring("approved once"))
		r = harnessCLI("turn", poolSession, "-n", managedNS, "--route-facts", "none", "--approval-mode", "untrusted", "--approve", "never", "--prompt",
			stubmodel.ShellDirective+" echo "+denied+" > denied.txt; cat denied.txt")
		Expect(r.exit).To(Equal(0), "%s", r)
		Expect(r.stdout).To(ContainSubstring("denied"))
		var ran, refused bool
		for _, o := range stub.FunctionCallOutputs() {
			ran = ran || strings.Contains(o.Output, approved)
			refused = refused || strings.Contains(o.Output, denied)
		}
		Expect(ran).To(BeTrue(), "the approved command's output reached the model")
		Expect(refused).To(BeFalse(), "the denied command ran")
	})

	It("runs a native command inside the Codex container", func() {
		// The stub model answers the directive with Codex's exec_command
		// tool; Codex runs it with the image's bash in its container, and
		// the stub's next reply quotes the output.
		const marker = "native-command-in-pod"
		r := harnessCLI("turn", poolSession, "-n", managedNS, "--route-facts", "none", "--prompt",
			stubmodel.ShellDirective+" echo "+marker+"; id -u; cat /proc/sys/kernel/hostname; test -w / || echo read-only-root")
		Expect(r.exit).To(Equal(0), "%s", r)
		Expect(r.stdout).To(ContainSubstring(stubmodel.ToolOutputPrefix))
		var output string
		for _, o := range stub.FunctionCallOutputs() {
			if strings.Contains(o.Output, marker) {
				output = o.Output
			}
		}
		Expect(output).NotTo(BeEmpty(), "Codex sent the command's output to the model")
		for _, want := range []string{
			"65532",          // the image's non-root user
			poolPod,          // the Pod's own hostname: it ran in the container
			"read-only-root", // the container's root filesystem is read-only
		} {
			Expect(output).To(ContainSubstring(want))
		}
	})
}
