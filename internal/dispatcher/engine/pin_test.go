package engine

import (
	"encoding/json"
	"errors"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// withRouteFacts gives req a prepared route that declares Codex compatible:
// with route facts the pin is not consulted and policy decides.
func withRouteFacts(req *wire.TurnRequest) *wire.TurnRequest {
	req.ModelProvider = &wire.ModelProvider{API: "openai-responses", BaseURL: "https://api.openai.com/v1",
		RequestTransportOverrides: wire.TransportOverridesNone,
		RuntimePolicy:             &wire.RouteRuntimePolicy{CompatibleIDs: []string{"codex"}}}
	return req
}

// nsPolicy is a RuntimePolicy for provider codex in namespace ns only,
// removed when the spec's container ends.
func nsPolicy(ns string, rt v1alpha1.RuntimeID) *v1alpha1.RuntimePolicy {
	GinkgoHelper()
	pol := &v1alpha1.RuntimePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-codex"},
		Spec: v1alpha1.RuntimePolicySpec{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			Providers:         []v1alpha1.ProviderRuntimePolicy{{Provider: "codex", Runtime: rt}},
		},
	}
	Expect(k8sClient.Create(ctx, pol)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, pol))).To(Succeed()) })
	return pol
}

// setPolicyRuntime changes the runtime of nsPolicy's provider entry.
func setPolicyRuntime(pol *v1alpha1.RuntimePolicy, rt v1alpha1.RuntimeID) {
	GinkgoHelper()
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pol), pol)).To(Succeed())
	pol.Spec.Providers[0].Runtime = rt
	Expect(k8sClient.Update(ctx, pol)).To(Succeed())
}

// The ownership pin (status.agentHarnessId) against a policy that changed:
// the seed keeps it "while route/auth preparation is still pending", and
// "once prepared facts exist" policy decides; a reset clears it. The session's
// provider is `codex` (a provider the Codex adapter supports natively), so
// the suite's openai-only Deny policy does not govern it and this spec's own
// policy can change.
var _ = Describe("Ownership pin", Ordered, func() {
	var (
		ns  string
		pol *v1alpha1.RuntimePolicy
	)
	const model = "codex/stub-model"
	BeforeAll(func() {
		ns = newNamespace()
		registerCodex(ns, codexSrv.URL, true)
		pol = nsPolicy(ns, "codex")
	})

	decisionOf := func(evs []event) wire.Decision {
		GinkgoHelper()
		raw := lastOf(evs, wire.EventSelected)
		Expect(raw).NotTo(BeNil(), "no selected event in %v", types(evs))
		var d wire.Decision
		Expect(json.Unmarshal(raw, &d)).To(Succeed())
		return d
	}

	It("keeps a pinned session on its harness while route facts are pending, and follows the changed policy once they exist", func() {
		newSession(ns, "pinned", model)
		stub.When("pin-1", stubmodel.Text("first on codex"))
		evs, err := turn(ns, "pinned", textReq("run-pin1", "pin-1 hello"))
		Expect(err).NotTo(HaveOccurred())
		Expect(resultOf(evs).AgentHarnessID).To(Equal("codex"))
		Expect(getSession(ns, "pinned").Status.AgentHarnessID).To(Equal("codex"), "the turn pinned the session")

		// The policy changes to the embedded runtime.
		setPolicyRuntime(pol, v1alpha1.RuntimeOpenClaw)

		By("an attempt without route facts runs on the pinned harness")
		stub.When("pin-2", stubmodel.Text("still on codex"))
		evs, err = turn(ns, "pinned", textReq("run-pin2", "pin-2 again"))
		Expect(err).NotTo(HaveOccurred())
		d := decisionOf(evs)
		Expect(d.Runtime).To(Equal("codex"))
		Expect(d.RuntimeSource).To(Equal(v1alpha1.RuntimeSourceSession))
		Expect(resultOf(evs).AssistantTexts).To(Equal([]string{"still on codex"}))

		By("the same attempt with route facts follows the policy")
		before := len(stub.Requests())
		evs, err = turn(ns, "pinned", withRouteFacts(textReq("run-pin3", "pin-2 again")))
		var te *wire.Error
		Expect(errors.As(err, &te)).To(BeTrue(), "%v", err)
		Expect(te.Code).To(Equal(wire.CodeEmbeddedRuntimeSelected))
		d = decisionOf(evs)
		Expect(d.Runtime).To(Equal(string(v1alpha1.RuntimeOpenClaw)))
		Expect(d.Reason).To(Equal(wire.ReasonForcedOpenClaw))
		Expect(d.RuntimeSource).To(Equal(v1alpha1.RuntimeSourceProvider))
		Expect(stub.Requests()).To(HaveLen(before), "nothing reached the model")
		Expect(getSession(ns, "pinned").Status.AgentHarnessID).To(Equal("codex"), "a turn decided for openclaw leaves the pin")
	})

	It("clears the pin and the native binding on a reset, so the next attempt follows the policy", func() {
		s := getSession(ns, "pinned")
		Expect(s.Status.NativeBinding).NotTo(BeNil())
		s.Spec.ResetGeneration++
		Expect(k8sClient.Update(ctx, s)).To(Succeed())

		evs, err := turn(ns, "pinned", textReq("run-pin4", "pin-4 after the reset"))
		var te *wire.Error
		Expect(errors.As(err, &te)).To(BeTrue(), "%v", err)
		Expect(te.Code).To(Equal(wire.CodeEmbeddedRuntimeSelected), "no pin: the policy's openclaw decides")
		Expect(decisionOf(evs).RuntimeSource).To(Equal(v1alpha1.RuntimeSourceProvider))

		s = getSession(ns, "pinned")
		Expect(s.Status.AgentHarnessID).To(BeEmpty(), "the reset cleared the pin")
		Expect(s.Status.NativeBinding).To(BeNil(), "the reset cleared the native binding")
		Expect(s.Status.Counters).NotTo(BeNil(), "the rest of the dispatcher's status stays")
		Expect(transcript(ns, "pinned")).To(ContainSubstring(`{"type":"reset","generation":1`))
	})
})

var _ = Describe("A session the policy moves to another harness", func() {
	It("starts a thread on the new harness instead of resuming the other harness's thread there", func() {
		ns := newNamespace()
		registerCodex(ns, codexSrv.URL, true) // also the token Secret codex-token
		other := startServer("127.0.0.15", "", 0)
		DeferCleanup(other.Kill)
		second := &v1alpha1.AgentHarness{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "codex-b"},
			Spec: v1alpha1.AgentHarnessSpec{HarnessID: "codex-b", Adapter: v1alpha1.AdapterCodexAppServer,
				External: &v1alpha1.ExternalServer{URL: other.URL, TokenSecretRef: v1alpha1.SecretKeyReference{Name: "codex-token", Key: "token"}}},
		}
		Expect(k8sClient.Create(ctx, second)).To(Succeed())
		waitHarness(second, v1alpha1.HarnessConditionReady, metav1.ConditionTrue)
		pol := nsPolicy(ns, "codex")

		newSession(ns, "moving", "codex/stub-model")
		stub.When("move-1", stubmodel.Text("on the first harness"))
		evs, err := turn(ns, "moving", textReq("run-mv1", "move-1 hello"))
		Expect(err).NotTo(HaveOccurred())
		first := resultOf(evs).ThreadID

		setPolicyRuntime(pol, "codex-b")
		stub.When("move-2", stubmodel.Text("on the second harness"))
		req := textReq("run-mv2", "move-2 again")
		req.ModelProvider = &wire.ModelProvider{API: "openai-responses", BaseURL: "https://api.openai.com/v1",
			RequestTransportOverrides: wire.TransportOverridesNone,
			RuntimePolicy:             &wire.RouteRuntimePolicy{CompatibleIDs: []string{"codex", "codex-b"}}}
		evs, err = turn(ns, "moving", req)
		Expect(err).NotTo(HaveOccurred())
		res := resultOf(evs)
		Expect(res.AgentHarnessID).To(Equal("codex-b"))
		Expect(res.ThreadID).NotTo(BeEmpty())
		Expect(res.ThreadID).NotTo(Equal(first), "the first harness's thread was resumed on another harness")
		s := getSession(ns, "moving")
		Expect(s.Status.AgentHarnessID).To(Equal("codex-b"))
		Expect(s.Status.NativeBinding.HarnessName).To(Equal("codex-b"))
	})
})
