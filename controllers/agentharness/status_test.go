package agentharness

import (
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/harness/objects"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
)

const (
	pinnedVersion = "0.169.0"
	belowFloorMsg = "Codex app-server 0.149.0 or newer is required, but detected 0.148.0. " +
		"Update the AgentHarness image to a newer Codex release."
	minVersionMsg = "Codex app-server 0.170.0 or newer is required, but detected 0.169.0. " +
		"Update the AgentHarness image to a newer Codex release."
)

var _ = Describe("status from real app-servers", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("goes from HandshakePending to Ready, handshakes once per digest, and tracks artifacts and draining pods", func() {
		h := managedHarness(ns, "codex", 2)
		Expect(k8sClient.Create(ctx, h)).To(Succeed())
		sts := waitStatefulSet(h)
		Eventually(statusOf(h)).Should(haveCondition(v1alpha1.HarnessConditionVersionSupported, "Unknown/HandshakePending"))

		hostA, hostB := nextHost(), nextHost()
		startPodServer(codexBin, sts, hostA)
		startPodServer(codexBin, sts, hostB)
		imageD1 := "registry.example/codex@" + digest('1')
		pod0 := createServerPod(sts, 0, hostA, imageD1)
		pod1 := createServerPod(sts, 1, hostB, imageD1)

		By("both pods Ready on one digest: Ready, attested, one handshake")
		Eventually(statusOf(h)).Should(And(
			haveCondition(v1alpha1.HarnessConditionReady, "True/Ready"),
			haveCondition(v1alpha1.HarnessConditionWorkloadReady, "True/PodsReady"),
			haveCondition(v1alpha1.HarnessConditionVersionSupported, "True/VersionAccepted"),
			haveCondition(v1alpha1.HarnessConditionAttested, "True/ArtifactVerified"),
			WithTransform(func(h *v1alpha1.AgentHarness) int32 { return h.Status.ReadyReplicas }, Equal(int32(2))),
		))
		got := getHarness(h)
		Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		Expect(got.Status.Version).To(Equal(pinnedVersion))
		Expect(got.Status.Replicas).To(Equal(int32(2)))
		Expect(got.Status.ReadyReplicas).To(Equal(int32(2)))
		Expect(got.Status.RuntimeArtifact).To(Equal(&v1alpha1.RuntimeArtifact{
			ID: "codex-app-server:" + pinnedVersion, Fingerprint: digest('1')}))
		Expect(got.Status.Servers).To(HaveLen(2))
		for i, s := range got.Status.Servers {
			Expect(s.Name).To(Equal(sts.Name + "-" + strconv.Itoa(i)))
			Expect(s.ImageID).To(Equal(imageD1))
			Expect(s.Version).To(Equal(pinnedVersion))
			Expect(s.UserAgent).To(HavePrefix("harness-operator/" + pinnedVersion + " "))
			Expect(s.State).To(Equal(v1alpha1.ServerReady))
		}
		Expect(handshakes.count(hostA, hostB)).To(Equal(1), "one handshake for the one digest")

		By("more reconciles (pod and spec changes) do not handshake again")
		for _, p := range []*corev1.Pod{pod0, pod1} {
			patch := client.MergeFrom(p.DeepCopy())
			p.Annotations["test.harness.openclaw.dev/touched"] = "yes"
			Expect(k8sClient.Patch(ctx, p, patch)).To(Succeed())
		}
		patch := client.MergeFrom(h.DeepCopy())
		h.Spec.Label = "Codex pool"
		Expect(k8sClient.Patch(ctx, h, patch)).To(Succeed())
		Eventually(func() int64 { return getHarness(h).Status.ObservedGeneration }).Should(Equal(getHarness(h).Generation))
		Consistently(func() int { return handshakes.count(hostA, hostB) }, 2*time.Second).Should(Equal(1))

		By("a second digest: mixed artifacts, and exactly one more handshake")
		imageD2 := "registry.example/codex@" + digest('2')
		setPodStatus(pod1, hostB, imageD2, true)
		Eventually(statusOf(h)).Should(haveCondition(v1alpha1.HarnessConditionAttested, "False/MixedArtifacts"))
		got = getHarness(h)
		Expect(got.Status.RuntimeArtifact).To(BeNil())
		Expect(cond(got, v1alpha1.HarnessConditionReady)).To(Equal("True/Ready"), "attestation is separate from Ready")
		Expect(handshakes.count(hostB)).To(Equal(1))
		Consistently(func() int { return handshakes.count(hostA, hostB) }, time.Second).Should(Equal(2))

		By("a draining pod is Terminating and leaves the attestation")
		patch = client.MergeFrom(pod1.DeepCopy())
		pod1.Finalizers = append(pod1.Finalizers, "test.harness.openclaw.dev/hold")
		Expect(k8sClient.Patch(ctx, pod1, patch)).To(Succeed())
		DeferCleanup(func() {
			p := &corev1.Pod{}
			if k8sClient.Get(ctx, client.ObjectKeyFromObject(pod1), p) == nil {
				patch := client.MergeFrom(p.DeepCopy())
				p.Finalizers = nil
				Expect(k8sClient.Patch(ctx, p, patch)).To(Succeed())
			}
		})
		Expect(k8sClient.Delete(ctx, pod1)).To(Succeed())
		Eventually(func() []v1alpha1.ServerState {
			var states []v1alpha1.ServerState
			for _, s := range getHarness(h).Status.Servers {
				states = append(states, s.State)
			}
			return states
		}).Should(Equal([]v1alpha1.ServerState{v1alpha1.ServerReady, v1alpha1.ServerTerminating}))
		Eventually(statusOf(h)).Should(haveCondition(v1alpha1.HarnessConditionAttested, "True/ArtifactVerified"))
		got = getHarness(h)
		Expect(got.Status.ReadyReplicas).To(Equal(int32(1)))
		Expect(got.Status.RuntimeArtifact.Fingerprint).To(Equal(digest('1')))

		By("no Ready pod left: WorkloadReady and Ready go False, the version stays known")
		setPodStatus(pod0, hostA, imageD1, false)
		Eventually(statusOf(h)).Should(And(
			haveCondition(v1alpha1.HarnessConditionWorkloadReady, "False/NoReadyPods"),
			haveCondition(v1alpha1.HarnessConditionReady, "False/WorkloadNotReady"),
			haveCondition(v1alpha1.HarnessConditionVersionSupported, "True/VersionAccepted"),
		))
		Expect(handshakes.count(hostA, hostB)).To(Equal(2))
		Expect(eventsFor(h)()).To(ContainElement("Normal/Ready: the harness accepts turns: Codex app-server 0.169.0 meets the version floor 0.149.0"))
	})

	It("refuses the real 0.148.0 release below the floor, with the exact message and an Event", func() {
		h := managedHarness(ns, "old-codex", 1)
		Expect(k8sClient.Create(ctx, h)).To(Succeed())
		sts := waitStatefulSet(h)
		host := nextHost()
		startPodServer(codexOldBin, sts, host)
		createServerPod(sts, 0, host, "registry.example/codex@"+digest('3'))

		Eventually(statusOf(h)).Should(And(
			haveCondition(v1alpha1.HarnessConditionVersionSupported, "False/VersionBelowFloor"),
			haveCondition(v1alpha1.HarnessConditionWorkloadReady, "True/PodsReady"),
			haveCondition(v1alpha1.HarnessConditionReady, "False/VersionNotSupported"),
		))
		got := getHarness(h)
		Expect(condMessage(got, v1alpha1.HarnessConditionVersionSupported)).To(Equal(belowFloorMsg))
		Expect(got.Status.Servers).To(HaveLen(1))
		Expect(got.Status.Servers[0].Version).To(Equal("0.148.0"))
		Expect(got.Status.Version).To(Equal("0.148.0"))
		Eventually(eventsFor(h)).Should(ContainElement("Warning/VersionBelowFloor: " + belowFloorMsg))
		Expect(handshakes.count(host)).To(Equal(1))
	})

	It("applies minVersion above the running 0.169.0, and judges a lowered floor without a new handshake", func() {
		h := managedHarness(ns, "strict", 1)
		h.Spec.MinVersion = "0.170.0"
		Expect(k8sClient.Create(ctx, h)).To(Succeed())
		sts := waitStatefulSet(h)
		host := nextHost()
		startPodServer(codexBin, sts, host)
		createServerPod(sts, 0, host, "registry.example/codex@"+digest('4'))

		Eventually(statusOf(h)).Should(haveCondition(v1alpha1.HarnessConditionVersionSupported, "False/VersionBelowFloor"))
		Expect(condMessage(getHarness(h), v1alpha1.HarnessConditionVersionSupported)).To(Equal(minVersionMsg))
		Eventually(eventsFor(h)).Should(ContainElement("Warning/VersionBelowFloor: " + minVersionMsg))

		patch := client.MergeFrom(h.DeepCopy())
		h.Spec.MinVersion = ""
		Expect(k8sClient.Patch(ctx, h, patch)).To(Succeed())
		Eventually(statusOf(h)).Should(And(
			haveCondition(v1alpha1.HarnessConditionVersionSupported, "True/VersionAccepted"),
			haveCondition(v1alpha1.HarnessConditionReady, "True/Ready"),
		))
		Expect(handshakes.count(host)).To(Equal(1))
	})
})

var _ = Describe("external app-server", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	externalHarness := func(name, url, secret string) *v1alpha1.AgentHarness {
		return &v1alpha1.AgentHarness{
			ObjectMeta: metavOM(ns, name),
			Spec: v1alpha1.AgentHarnessSpec{
				Adapter: v1alpha1.AdapterCodexAppServer,
				External: &v1alpha1.ExternalServer{
					URL:            url,
					TokenSecretRef: v1alpha1.SecretKeyReference{Name: secret, Key: "token"},
				},
			},
		}
	}

	// Codex 0.169.0 reads the login of a provider with requires_openai_auth
	// (the built-in openai one) only from auth.json: OPENAI_API_KEY in the
	// environment leaves it logged out (codex.TestLoginStateIsCheckedBeforeTheModelIsAsked).
	It("reports LoggedIn from the handshake: NotLoggedIn for a provider that needs a login the server lacks, ProviderCredentials for one with its own key", func() {
		loggedOut := startCodex(codexBin, nextHost(), codextest.Options{WSToken: "login-token", Env: []string{"OPENAI_API_KEY=sk-ignored"},
			ExtraArgs: []string{"-c", `model_provider="login"`, "-c",
				`model_providers.login={name="login",base_url="http://127.0.0.1:9/v1",wire_api="responses",requires_openai_auth=true}`}})
		withKey := startCodex(codexBin, nextHost(), codextest.Options{WSToken: "login-token"})
		Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metavOM(ns, "login-token"),
			StringData: map[string]string{"token": "login-token"}})).To(Succeed())
		out := externalHarness("logged-out", loggedOut.URL, "login-token")
		Expect(k8sClient.Create(ctx, out)).To(Succeed())
		in := externalHarness("provider-key", withKey.URL, "login-token")
		Expect(k8sClient.Create(ctx, in)).To(Succeed())

		Eventually(statusOf(out)).Should(And(
			haveCondition(v1alpha1.HarnessConditionLoggedIn, "False/NotLoggedIn"),
			haveCondition(v1alpha1.HarnessConditionReady, "True/Ready"),
		))
		Expect(condMessage(getHarness(out), v1alpha1.HarnessConditionLoggedIn)).To(ContainSubstring("auth.json"))
		Eventually(statusOf(in)).Should(haveCondition(v1alpha1.HarnessConditionLoggedIn, "True/ProviderCredentials"))
	})

	It("probes /readyz, refuses a wrong token and becomes Ready with the right one", func() {
		host := nextHost()
		srv := startCodex(codexBin, host, codextest.Options{WSToken: "the-right-token"})
		secret := &corev1.Secret{ObjectMeta: metavOM(ns, "ext-token"), StringData: map[string]string{"token": "a-wrong-token"}}
		Expect(k8sClient.Create(ctx, secret)).To(Succeed())
		h := externalHarness("remote", srv.URL, "ext-token")
		Expect(k8sClient.Create(ctx, h)).To(Succeed())

		Eventually(statusOf(h)).Should(And(
			haveCondition(v1alpha1.HarnessConditionWorkloadReady, "True/ProbeSucceeded"),
			haveCondition(v1alpha1.HarnessConditionVersionSupported, "False/HandshakeFailed"),
			haveCondition(v1alpha1.HarnessConditionAttested, "False/ExternalServer"),
			haveCondition(v1alpha1.HarnessConditionReady, "False/VersionNotSupported"),
		))
		got := getHarness(h)
		msg := condMessage(got, v1alpha1.HarnessConditionVersionSupported)
		Expect(msg).To(ContainSubstring("401"))
		Expect(msg).NotTo(ContainSubstring("a-wrong-token"))
		Expect(got.Status.Servers).To(Equal([]v1alpha1.ServerStatus{{Name: "external", State: v1alpha1.ServerReady}}))
		Expect(handshakes.count(host)).To(BeNumerically(">=", 1))

		By("the right token: Ready, but never attested")
		patch := client.MergeFrom(secret.DeepCopy())
		secret.StringData = map[string]string{"token": "the-right-token\n"}
		Expect(k8sClient.Patch(ctx, secret, patch)).To(Succeed())
		Eventually(statusOf(h)).Should(And(
			haveCondition(v1alpha1.HarnessConditionVersionSupported, "True/VersionAccepted"),
			haveCondition(v1alpha1.HarnessConditionReady, "True/Ready"),
			haveCondition(v1alpha1.HarnessConditionAttested, "False/ExternalServer"),
		))
		got = getHarness(h)
		Expect(got.Status.Version).To(Equal(pinnedVersion))
		Expect(got.Status.RuntimeArtifact).To(BeNil())
		Expect(got.Status.Replicas).To(Equal(int32(1)))
		Expect(got.Status.ReadyReplicas).To(Equal(int32(1)))
		Expect(got.Status.Servers).To(HaveLen(1))
		Expect(got.Status.Servers[0].Name).To(Equal("external"))
		Expect(got.Status.Servers[0].Version).To(Equal(pinnedVersion))
		Expect(got.Status.Servers[0].ImageID).To(BeEmpty())
		// Failed handshakes are retried (with back-off); a successful one is not repeated.
		n := handshakes.count(host)
		Expect(n).To(BeNumerically(">=", 2))
		patch = client.MergeFrom(secret.DeepCopy())
		secret.Annotations = map[string]string{"test.harness.openclaw.dev/touched": "yes"} // reconciles again
		Expect(k8sClient.Patch(ctx, secret, patch)).To(Succeed())
		Consistently(func() int { return handshakes.count(host) }, 2*time.Second).Should(Equal(n))
	})

	It("reports a missing token Secret and a server that does not answer", func() {
		host := nextHost() // nothing listens here
		h := externalHarness("gone", "ws://"+host+":"+strconv.Itoa(int(appPort)), "missing")
		Expect(k8sClient.Create(ctx, h)).To(Succeed())
		Eventually(statusOf(h)).Should(And(
			haveCondition(v1alpha1.HarnessConditionWorkloadReady, "False/ProbeFailed"),
			haveCondition(v1alpha1.HarnessConditionVersionSupported, "False/TokenSecretMissing"),
			haveCondition(v1alpha1.HarnessConditionReady, "False/WorkloadNotReady"),
		))
		got := getHarness(h)
		Expect(got.Status.Servers).To(Equal([]v1alpha1.ServerStatus{{Name: "external", State: v1alpha1.ServerNotReady}}))
		Expect(got.Status.ReadyReplicas).To(BeZero())
		Expect(handshakes.count(host)).To(BeZero())
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: objects.WorkloadName(h)}, &corev1.Service{})).
			NotTo(Succeed(), "an external harness has no workload")
	})

	It("removes the managed workload when a harness turns external", func() {
		h := managedHarness(ns, "switch", 1)
		Expect(k8sClient.Create(ctx, h)).To(Succeed())
		waitStatefulSet(h)
		patch := client.MergeFrom(h.DeepCopy())
		h.Spec.AppServer = nil
		h.Spec.External = &v1alpha1.ExternalServer{URL: "ws://" + nextHost() + ":1",
			TokenSecretRef: v1alpha1.SecretKeyReference{Name: "missing", Key: "token"}}
		Expect(k8sClient.Patch(ctx, h, patch)).To(Succeed())
		for _, obj := range []client.Object{&appsv1.StatefulSet{}, &corev1.Service{}, &networkingv1.NetworkPolicy{},
			&policyv1.PodDisruptionBudget{}} {
			Eventually(func() bool {
				return apierrors.IsNotFound(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: objects.WorkloadName(h)}, obj))
			}).Should(BeTrue(), "%T", obj)
		}
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: objects.TokenSecretName(h)}, &corev1.Secret{}))
		}).Should(BeTrue())
		Eventually(statusOf(h)).Should(haveCondition(v1alpha1.HarnessConditionAttested, "False/ExternalServer"))
	})
})
