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

// A session's model may change between turns (the gateway writes the new
// spec.model before the turn). On the same harness the next turn resumes
// the native thread with the new model — Codex takes the model at
// thread/resume, so nothing is re-seeded; when the new model's policy
// selects another harness, that harness's thread starts from the
// dispatcher's transcript mirror. An attempt on a model the session does
// not have yet is refused with scope harness, and runs nothing.
var _ = Describe("A session whose model changes between turns", Ordered, func() {
	var ns string
	const name = "mc"
	on := func(runID, model, prompt string) *wire.TurnRequest {
		req := withRouteFacts(textReq(runID, prompt))
		req.ModelProvider.RuntimePolicy.CompatibleIDs = []string{"codex", "codex-b"}
		req.Provider, req.ModelID = "codex", model
		return req
	}
	setModel := func(model string) {
		GinkgoHelper()
		s := getSession(ns, name)
		s.Spec.Model = model
		Expect(k8sClient.Update(ctx, s)).To(Succeed())
	}
	BeforeAll(func() {
		ns = newNamespace()
		a := registerCodex(ns, codexSrv.URL, true)
		b := &v1alpha1.AgentHarness{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "codex-b"}, Spec: *a.Spec.DeepCopy()}
		b.Spec.HarnessID = "codex-b"
		Expect(k8sClient.Create(ctx, b)).To(Succeed())
		waitHarness(b, v1alpha1.HarnessConditionReady, metav1.ConditionTrue)
		pol := nsPolicy(ns, "codex")
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pol), pol)).To(Succeed())
		pol.Spec.Models = []v1alpha1.ModelRuntimePolicy{{Ref: "codex/mc-model-b", Runtime: "codex-b"}}
		Expect(k8sClient.Update(ctx, pol)).To(Succeed())
		newSession(ns, name, "codex/mc-model-1")
	})

	It("refuses an attempt on a model the session does not have with scope harness, and runs nothing", func() {
		before := len(stub.Requests())
		_, err := turn(ns, name, on("run-mc0", "mc-model-2", "mc-refused"))
		var te *wire.Error
		Expect(errors.As(err, &te)).To(BeTrue(), "%v", err)
		Expect(te.Code).To(Equal(wire.CodeSessionMismatch))
		Expect(te.Scope).To(Equal(wire.ScopeHarness), "%s", te.Message)
		Expect(te.Message).To(ContainSubstring("Update spec.model before the turn"))
		Expect(stub.Requests()).To(HaveLen(before))
	})

	It("resumes the thread with the new model on the same harness, and starts the other harness's thread from the mirror", func() {
		stub.When("mc-first", stubmodel.Text("MC-FIRST-REPLY"))
		evs, err := turn(ns, name, on("run-mc1", "mc-model-1", "mc-first about Peru"))
		Expect(err).NotTo(HaveOccurred())
		Expect(resultOf(evs).AgentHarnessID).To(Equal("codex"))
		first := getSession(ns, name).Status.NativeBinding
		req, err := stub.WaitMarker(ctx, "mc-first")
		Expect(err).NotTo(HaveOccurred())
		Expect(req.Model).To(Equal("mc-model-1"))

		setModel("codex/mc-model-2")
		stub.When("mc-second", stubmodel.Text("MC-SECOND-REPLY"))
		evs, err = turn(ns, name, on("run-mc2", "mc-model-2", "mc-second and its capital?"))
		Expect(err).NotTo(HaveOccurred())
		Expect(resultOf(evs).AgentHarnessID).To(Equal("codex"))
		Expect(reseeded(evs)).To(BeEmpty(), "the same harness's thread takes the new model: no re-seed")
		Expect(getSession(ns, name).Status.NativeBinding.ThreadID).To(Equal(first.ThreadID), "the thread was resumed")
		req, err = stub.WaitMarker(ctx, "mc-second")
		Expect(err).NotTo(HaveOccurred())
		Expect(req.Model).To(Equal("mc-model-2"), "Codex asked the session's new model")
		Expect(req.UserTexts()).To(ContainElement("mc-first about Peru"))

		setModel("codex/mc-model-b")
		stub.When("mc-third", stubmodel.Text("MC-THIRD-REPLY"))
		evs, err = turn(ns, name, on("run-mc3", "mc-model-b", "mc-third and its population?"))
		Expect(err).NotTo(HaveOccurred())
		Expect(resultOf(evs).AgentHarnessID).To(Equal("codex-b"), "the new model's policy entry selects codex-b")
		third := getSession(ns, name).Status.NativeBinding
		Expect(third.HarnessName).To(Equal("codex-b"))
		Expect(third.ThreadID).NotTo(Equal(first.ThreadID))
		req, err = stub.WaitMarker(ctx, "mc-third")
		Expect(err).NotTo(HaveOccurred())
		Expect(req.Model).To(Equal("mc-model-b"))
		Expect(req.UserTexts()).To(ContainElements("mc-first about Peru", "mc-second and its capital?"))
		Expect(req.AssistantTexts()).To(ContainElements("MC-FIRST-REPLY", "MC-SECOND-REPLY"))
		seeds := reseeded(evs)
		Expect(seeds).To(HaveLen(1), "the new harness's thread was seeded from the mirror")
		var d map[string]any
		Expect(json.Unmarshal(seeds[0].Data, &d)).To(Succeed())
		Expect(d["mirrorMessages"]).To(BeEquivalentTo(4))
	})
})
