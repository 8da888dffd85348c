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

// withRouteFacts gives req a prepared route that declares Codex compatible.
func withRouteFacts(req *wire.TurnRequest) *wire.TurnRequest {
	return withRoute(req, "codex")
}

// withRoute gives req a prepared official route whose runtime policy lists
// compatible.
func withRoute(req *wire.TurnRequest, compatible ...string) *wire.TurnRequest {
	req.ModelProvider = &wire.ModelProvider{API: "openai-responses", BaseURL: "https://api.openai.com/v1",
		RequestTransportOverrides: wire.TransportOverridesNone,
		RuntimePolicy:             &wire.RouteRuntimePolicy{CompatibleIDs: compatible}}
	return req
}

// nsPolicy is a RuntimePolicy for provider codex in namespace ns only
// (sessionOverrides Allow), removed when the spec's container ends.
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

// setPolicyRuntime changes the runtime of nsPolicy's provider entry and
// its sessionOverrides.
func setPolicyRuntime(pol *v1alpha1.RuntimePolicy, rt v1alpha1.RuntimeID, overrides ...v1alpha1.SessionOverridePolicy) {
	GinkgoHelper()
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pol), pol)).To(Succeed())
	pol.Spec.Providers[0].Runtime = rt
	pol.Spec.SessionOverrides = v1alpha1.SessionOverridesAllow
	for _, o := range overrides {
		pol.Spec.SessionOverrides = o
	}
	Expect(k8sClient.Update(ctx, pol)).To(Succeed())
}

// lockSession sets the session's spec.modelSelectionLocked.
func lockSession(ns, name string, lock v1alpha1.ModelSelectionLock) {
	GinkgoHelper()
	s := getSession(ns, name)
	s.Spec.ModelSelectionLocked = lock
	Expect(k8sClient.Update(ctx, s)).To(Succeed())
}

// The ownership pin (status.agentHarnessId) against a policy that changed.
// As OpenClaw (resolveSessionPinnedHarnessId), a session's pin takes part in
// selection only while its model selection is locked: then it is the
// requested runtime, used without a support check while route facts are
// pending and checked against them once they exist. An unlocked session's
// pin takes no part: its policy decides. A reset clears the pin. The
// session's provider is `codex` (a provider the Codex adapter supports
// natively), so the suite's openai-only Deny policy does not govern it and
// this spec's own policy can change.
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
	// pinTo runs a first turn on codex, which pins the session there.
	pinTo := func(name, marker string) {
		GinkgoHelper()
		newSession(ns, name, model)
		stub.When(marker, stubmodel.Text("first on codex"))
		evs, err := turn(ns, name, textReq("run-"+marker, marker+" hello"))
		Expect(err).NotTo(HaveOccurred())
		Expect(resultOf(evs).AgentHarnessID).To(Equal("codex"))
		Expect(getSession(ns, name).Status.AgentHarnessID).To(Equal("codex"), "the turn pinned the session")
	}

	It("keeps a locked session on its pinned harness while route facts are pending, after an Allow policy moved its runtime", func() {
		pinTo("locked", "pin-1")
		lockSession(ns, "locked", v1alpha1.ModelSelectionLocked)
		pinTo("unlocked", "pin-u1")
		setPolicyRuntime(pol, v1alpha1.RuntimeOpenClaw)

		stub.When("pin-2", stubmodel.Text("still on codex"))
		evs, err := turn(ns, "locked", textReq("run-pin2", "pin-2 again"))
		Expect(err).NotTo(HaveOccurred())
		d := decisionOf(evs)
		Expect(d.Runtime).To(Equal("codex"))
		Expect(d.RuntimeSource).To(Equal(v1alpha1.RuntimeSourceSession))
		Expect(resultOf(evs).AssistantTexts).To(Equal([]string{"still on codex"}))
	})

	It("moves an unlocked pinned session to the changed policy's runtime on its next turn", func() {
		before := len(stub.Requests())
		evs, err := turn(ns, "unlocked", textReq("run-pin-u2", "pin-u2 again"))
		var te *wire.Error
		Expect(errors.As(err, &te)).To(BeTrue(), "%v", err)
		Expect(te.Code).To(Equal(wire.CodeEmbeddedRuntimeSelected))
		d := decisionOf(evs)
		Expect(d.Runtime).To(Equal(string(v1alpha1.RuntimeOpenClaw)))
		Expect(d.Reason).To(Equal(wire.ReasonForcedOpenClaw))
		Expect(d.RuntimeSource).To(Equal(v1alpha1.RuntimeSourceProvider))
		Expect(stub.Requests()).To(HaveLen(before), "nothing reached the model")
		Expect(getSession(ns, "unlocked").Status.AgentHarnessID).To(Equal("codex"), "a turn decided for openclaw leaves the pin")
	})

	It("checks a locked session's pin against prepared route facts: a route Codex refuses without a fallback fails closed and runs nothing", func() {
		before := len(stub.Requests())
		evs, err := turn(ns, "locked", withRoute(textReq("run-pin3", "pin-3 refused"), "openclaw"))
		var te *wire.Error
		Expect(errors.As(err, &te)).To(BeTrue(), "%v", err)
		Expect(te.Code).To(Equal(wire.CodeHarnessUnsupported))
		Expect(te.Message).To(HavePrefix(`Requested agent harness "codex" does not support codex/stub-model (`))
		Expect(decisionOf(evs).RuntimeSource).To(Equal(v1alpha1.RuntimeSourceSession))
		Expect(stub.Requests()).To(HaveLen(before), "nothing reached the model")

		By("a route Codex supports runs on the pin, whatever the policy says")
		stub.When("pin-4", stubmodel.Text("on codex with facts"))
		evs, err = turn(ns, "locked", withRouteFacts(textReq("run-pin4", "pin-4 facts")))
		Expect(err).NotTo(HaveOccurred())
		Expect(decisionOf(evs).RuntimeSource).To(Equal(v1alpha1.RuntimeSourceSession))
		Expect(resultOf(evs).AssistantTexts).To(Equal([]string{"on codex with facts"}))
	})

	It("refuses a locked session whose pin contradicts a Deny policy with OverrideDenied", func() {
		setPolicyRuntime(pol, v1alpha1.RuntimeOpenClaw, v1alpha1.SessionOverridesDeny)
		DeferCleanup(func() { setPolicyRuntime(pol, v1alpha1.RuntimeOpenClaw) })
		before := len(stub.Requests())
		for _, req := range []*wire.TurnRequest{textReq("run-pin5", "pin-5 denied"), withRouteFacts(textReq("run-pin6", "pin-6 denied"))} {
			_, err := turn(ns, "locked", req)
			var te *wire.Error
			Expect(errors.As(err, &te)).To(BeTrue(), "%v", err)
			Expect(te.Code).To(Equal(wire.CodeOverrideDenied))
			Expect(te.Message).To(ContainSubstring(`Session is pinned to agent harness "codex" (its model selection is locked)`))
		}
		Expect(stub.Requests()).To(HaveLen(before), "nothing reached the model")
	})

	It("clears the pin and the native binding on a reset, so the next attempt of the locked session follows the policy", func() {
		s := getSession(ns, "locked")
		Expect(s.Status.NativeBinding).NotTo(BeNil())
		s.Spec.ResetGeneration++
		Expect(k8sClient.Update(ctx, s)).To(Succeed())

		evs, err := turn(ns, "locked", textReq("run-pin7", "pin-7 after the reset"))
		var te *wire.Error
		Expect(errors.As(err, &te)).To(BeTrue(), "%v", err)
		Expect(te.Code).To(Equal(wire.CodeEmbeddedRuntimeSelected), "no pin: the policy's openclaw decides")
		Expect(decisionOf(evs).RuntimeSource).To(Equal(v1alpha1.RuntimeSourceProvider))

		s = getSession(ns, "locked")
		Expect(s.Status.AgentHarnessID).To(BeEmpty(), "the reset cleared the pin")
		Expect(s.Status.NativeBinding).To(BeNil(), "the reset cleared the native binding")
		Expect(s.Status.Counters).NotTo(BeNil(), "the rest of the dispatcher's status stays")
		Expect(transcript(ns, "locked")).To(ContainSubstring(`{"type":"reset","generation":1`))
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
