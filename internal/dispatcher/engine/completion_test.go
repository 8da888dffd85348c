package engine

import (
	"encoding/json"
	"errors"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

var _ = Describe("Isolated completion and settled-turn finalization", Ordered, func() {
	var ns string
	BeforeAll(func() {
		ns = newNamespace()
		registerCodex(ns, codexSrv.URL, true)
		newSession(ns, "cf", testModel)
		newSession(ns, "catalog", "openai/gpt-6.1-sol")
	})

	It("lists the selected harness's capabilities in /decide and in the selected event", func() {
		d, err := eng.Decide(ctx, ns, "cf", &wire.TurnRequest{})
		Expect(err).NotTo(HaveOccurred())
		names := func(caps []v1alpha1.HarnessCapability) []v1alpha1.HarnessCapabilityName {
			var out []v1alpha1.HarnessCapabilityName
			for _, c := range caps {
				out = append(out, c.Name)
			}
			return out
		}
		Expect(names(d.Capabilities)).To(Equal(names(wire.AdapterCapabilities(v1alpha1.AdapterCodexAppServer))))

		stub.When("cf-turn", stubmodel.Text("CF-TURN-REPLY"))
		evs, err := turn(ns, "cf", textReq("run-cf1", "cf-turn question"))
		Expect(err).NotTo(HaveOccurred())
		var sel wire.SelectedEvent
		Expect(json.Unmarshal(lastOf(evs, wire.EventSelected), &sel)).To(Succeed())
		Expect(wire.CapabilityOf(sel.Capabilities, v1alpha1.CapabilitySettledTurnFinalization)).To(Equal(v1alpha1.CapabilitySupported))
	})

	// The catalog the manager's handshake read from the real Codex
	// (status.capabilities excludedModels) decides, per decision, whether
	// its model can have isolated completion: the stub model, which Codex
	// does not know, can; gpt-6.1-sol, the catalog's default, cannot — and
	// the decision says so before the gateway asks.
	It("resolves isolated completion for the session's model in /decide: Supported outside the real Codex catalog, Unsupported for a catalog model", func() {
		capability := func(session string, n v1alpha1.HarnessCapabilityName) v1alpha1.HarnessCapability {
			d, err := eng.Decide(ctx, ns, session, &wire.TurnRequest{})
			Expect(err).NotTo(HaveOccurred())
			Expect(d.HarnessID).To(Equal("codex"))
			for _, c := range d.Capabilities {
				if c.Name == n {
					Expect(c.ExcludedModels).To(BeEmpty(), "a decision answers for one model")
					return c
				}
			}
			Fail(fmt.Sprintf("%s is not in the decision", n))
			return v1alpha1.HarnessCapability{}
		}
		for _, n := range []v1alpha1.HarnessCapabilityName{v1alpha1.CapabilityIsolatedCompletion, v1alpha1.CapabilitySettledTurnFinalization} {
			Expect(capability("cf", n).Support).To(Equal(v1alpha1.CapabilitySupported), "%s for the stub model", n)
			c := capability("catalog", n)
			Expect(c.Support).To(Equal(v1alpha1.CapabilityUnsupported), "%s for a catalog model", n)
			Expect(c.Message).To(And(ContainSubstring(`"gpt-6.1-sol"`), ContainSubstring("native tools")))
		}
	})

	It("finalizes a settled run on its frozen transcript without tools, leaving the session's thread, transcript and runs alone", func() {
		before := getSession(ns, "cf").Status
		mirror := transcript(ns, "cf")
		stub.When("cf-finalize", stubmodel.Text("CF-FINAL-ANSWER"))
		req := &wire.CompletionRequest{TranscriptSource: wire.TranscriptSourceOpenClaw, Prompt: "cf-finalize: answer now",
			Instructions: "Answer the user from the transcript.",
			Messages: []wire.CompletionMessage{
				{Role: wire.MessageRoleUser, Text: "cf-turn question"},
				{Role: wire.MessageRoleToolCall, CallID: "call-9", Name: "lookup", Arguments: `{"q":"x"}`},
				{Role: wire.MessageRoleToolResult, CallID: "call-9", Text: "LOOKUP-RESULT"},
			}}
		res, d, err := eng.Complete(ctx, ns, "cf", "run-cf1", req, store.Requester{})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Text).To(Equal("CF-FINAL-ANSWER"))
		Expect(res.FinishReason).To(Equal(wire.FinishStop))
		Expect(res.HarnessID).To(Equal("codex"))
		Expect(d.Capabilities).NotTo(BeEmpty())

		reqs := stub.RequestsContaining("cf-finalize")
		Expect(reqs).To(HaveLen(1))
		q := reqs[0]
		Expect(q.HasTools).To(BeTrue())
		Expect(q.Tools).To(BeEmpty(), "tools offered: %v", q.ToolNames())
		Expect(q.AdditionalTools()).To(BeEmpty())
		Expect(q.UserTexts()).To(Equal([]string{"cf-turn question", "cf-finalize: answer now"}))
		Expect(q.FunctionCallOutputs()).To(Equal([]stubmodel.FunctionCallOutput{{CallID: "call-9", Output: "LOOKUP-RESULT"}}))

		after := getSession(ns, "cf").Status
		Expect(after.NativeBinding).To(Equal(before.NativeBinding))
		Expect(after.LastSelection).To(Equal(before.LastSelection))
		Expect(transcript(ns, "cf")).To(Equal(mirror))
	})

	It("answers an isolated completion with no transcript, and refuses to finalize a run the session never had", func() {
		stub.When("cf-side", stubmodel.Text("CF-SIDE-ANSWER"))
		res, _, err := eng.Complete(ctx, ns, "cf", "", &wire.CompletionRequest{Prompt: "cf-side question", Instructions: "Be brief."}, store.Requester{})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Text).To(Equal("CF-SIDE-ANSWER"))
		q := stub.RequestsContaining("cf-side")
		Expect(q).To(HaveLen(1))
		Expect(q[0].Tools).To(BeEmpty())
		Expect(q[0].UserTexts()).To(Equal([]string{"cf-side question"}))

		_, _, err = eng.Complete(ctx, ns, "cf", "run-never", &wire.CompletionRequest{Prompt: "x",
			TranscriptSource: wire.TranscriptSourceOpenClaw, Messages: []wire.CompletionMessage{{Role: wire.MessageRoleUser, Text: "y"}}}, store.Requester{})
		Expect(errors.Is(err, store.ErrNotFound)).To(BeTrue(), "err %v", err)
	})

	It("refuses a Codex catalog model visibly, before any model request", func() {
		_, d, err := eng.Complete(ctx, ns, "catalog", "", &wire.CompletionRequest{Prompt: "cf-catalog question", Instructions: "Be brief."}, store.Requester{})
		var we *wire.Error
		Expect(errors.As(err, &we)).To(BeTrue(), "err %v", err)
		Expect(we.Code).To(Equal(wire.CodeToolPolicyUnenforceable))
		Expect(we.Message).To(ContainSubstring(`"gpt-6.1-sol"`))
		Expect(d.HarnessID).To(Equal("codex"))
		Expect(wire.CapabilityOf(d.Capabilities, v1alpha1.CapabilityIsolatedCompletion)).To(Equal(v1alpha1.CapabilityUnsupported),
			"the refusal's decision says what the refusal does")
		Expect(stub.RequestsContaining("cf-catalog")).To(BeEmpty())
	})
})
