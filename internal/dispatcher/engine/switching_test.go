package engine

import (
	"encoding/json"
	"errors"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// A session switches runtime between turns: Codex, then the gateway's
// embedded runtime, then Codex again, as the namespace's RuntimePolicy
// changes. The session's model selection is not locked, so its pin
// (status.agentHarnessId, written by the first Codex turn) takes no part and
// the policy decides (docs/dispatcher-api.md, "Selection: the pin and
// route facts"). The session's provider is
// `codex`, so the suite's openai-only Deny policy does not govern it.
var _ = Describe("A session that switches runtime between turns", Ordered, func() {
	var (
		ns  string
		pol *v1alpha1.RuntimePolicy
	)
	const name = "sw"
	gateway := []wire.GatewayMessage{
		{Role: wire.RoleUser, Text: "embedded-question what is the capital of Peru?"},
		{Role: wire.RoleAssistant, Text: "EMBEDDED-REPLY Lima, said the gateway's runtime"},
	}
	routed := func(runID, prompt string) *wire.TurnRequest { return withRouteFacts(textReq(runID, prompt)) }
	withGateway := func(runID, prompt, after string) *wire.TurnRequest {
		req := routed(runID, prompt)
		req.GatewayTranscript = &wire.GatewayTranscript{AfterRunID: after, Messages: gateway}
		return req
	}
	BeforeAll(func() {
		ns = newNamespace()
		registerCodex(ns, codexSrv.URL, true)
		pol = nsPolicy(ns, "codex")
		newSession(ns, name, "codex/stub-model")
	})

	It("runs a turn on Codex, then answers EmbeddedRuntimeSelected once the policy says openclaw", func() {
		stub.When("sw-first", stubmodel.Text("SW-FIRST-REPLY"))
		evs, err := turn(ns, name, routed("run-sw1", "sw-first tell me about Peru"))
		Expect(err).NotTo(HaveOccurred())
		Expect(resultOf(evs).AgentHarnessID).To(Equal("codex"))
		Expect(getSession(ns, name).Status.AgentHarnessID).To(Equal("codex"), "the turn pinned the session")

		setPolicyRuntime(pol, v1alpha1.RuntimeOpenClaw)
		before := len(stub.Requests())
		_, err = turn(ns, name, routed("run-sw2", "sw-embedded asked while on openclaw"))
		var te *wire.Error
		Expect(errors.As(err, &te)).To(BeTrue(), "%v", err)
		Expect(te.Code).To(Equal(wire.CodeEmbeddedRuntimeSelected))
		Expect(stub.Requests()).To(HaveLen(before), "nothing ran on Codex")
	})

	It("refuses a gateway transcript that does not start after the session's last dispatcher turn, and runs nothing", func() {
		setPolicyRuntime(pol, "codex")
		before := len(stub.Requests())
		_, err := turn(ns, name, withGateway("run-sw-stale", "sw-stale never sent", ""))
		var te *wire.Error
		Expect(errors.As(err, &te)).To(BeTrue(), "%v", err)
		Expect(te.Code).To(Equal(wire.CodeSessionMismatch))
		Expect(te.HTTPStatus()).To(Equal(422))
		Expect(te.Message).To(And(ContainSubstring("gatewayTranscript.afterRunId"), ContainSubstring(`"run-sw1"`)))
		Expect(stub.Requests()).To(HaveLen(before))
	})

	It("continues on Codex with the first Codex turn and the gateway-run turn in the model's request, and mirrors the gateway's messages", func() {
		first := getSession(ns, name).Status.NativeBinding.ThreadID
		stub.When("sw-back", stubmodel.Text("SW-BACK-REPLY"))
		evs, err := turn(ns, name, withGateway("run-sw3", "sw-back and its population?", "run-sw1"))
		Expect(err).NotTo(HaveOccurred())
		res := resultOf(evs)
		Expect(res.AgentHarnessID).To(Equal("codex"))
		Expect(res.ThreadID).To(Equal(first), "the tools did not change: the gateway's messages are appended to the thread")

		req, err := stub.WaitMarker(ctx, "sw-back")
		Expect(err).NotTo(HaveOccurred())
		Expect(req.UserTexts()).To(ContainElements("sw-first tell me about Peru", gateway[0].Text))
		Expect(req.AssistantTexts()).To(ContainElements("SW-FIRST-REPLY", gateway[1].Text))
		Expect(req.UserTexts()).NotTo(ContainElement("sw-embedded asked while on openclaw"), "the refused turn never reached the thread")

		ev := reseeded(evs)
		Expect(ev).To(HaveLen(1))
		Expect(ev[0].Text).To(And(ContainSubstring(first), ContainSubstring("2 messages were appended")))
		Expect(string(ev[0].Data)).To(ContainSubstring(`"gatewayMessages":2`))

		// GET …/transcript stays the whole conversation: the first turn,
		// the gateway's messages marked as such, then this turn.
		lines := strings.Split(strings.TrimSpace(transcript(ns, name)), "\n")
		var recs []wire.TranscriptRecord
		for _, l := range lines {
			var r wire.TranscriptRecord
			Expect(json.Unmarshal([]byte(l), &r)).To(Succeed())
			recs = append(recs, r)
		}
		texts := []string{}
		for _, r := range recs {
			if r.Type == wire.RecordMessage {
				mark := ""
				if r.Gateway {
					mark = "gateway:"
				}
				texts = append(texts, mark+r.Role+":"+r.Text)
			}
		}
		Expect(texts).To(Equal([]string{
			"user:sw-first tell me about Peru", "assistant:SW-FIRST-REPLY",
			"gateway:user:" + gateway[0].Text, "gateway:assistant:" + gateway[1].Text,
			"user:sw-back and its population?", "assistant:SW-BACK-REPLY",
		}))
	})

	It("starts a new thread without the earlier conversation after a reset", func() {
		before := getSession(ns, name).Status.NativeBinding.ThreadID
		s := getSession(ns, name)
		s.Spec.ResetGeneration++
		Expect(k8sClient.Update(ctx, s)).To(Succeed())
		evs, err := turn(ns, name, routed("run-sw4", "sw-reset hello again"))
		Expect(err).NotTo(HaveOccurred())
		Expect(resultOf(evs).ThreadID).NotTo(Equal(before))
		Expect(reseeded(evs)).To(BeEmpty())
		req, err := stub.WaitMarker(ctx, "sw-reset")
		Expect(err).NotTo(HaveOccurred())
		Expect(req.UserTexts()).NotTo(ContainElements("sw-first tell me about Peru"))
		Expect(req.UserTexts()).NotTo(ContainElement(gateway[0].Text))
		Expect(getSession(ns, name).Status.NativeBinding.Generation).To(Equal(s.Spec.ResetGeneration))
	})
})

// reseeded are the lifecycle/reseeded agent events of a turn's stream.
func reseeded(evs []event) []wire.AgentEvent {
	var out []wire.AgentEvent
	for _, p := range ofType(evs, wire.EventAgent) {
		var a wire.AgentEvent
		Expect(json.Unmarshal(p, &a)).To(Succeed())
		if a.Phase == wire.PhaseReseeded {
			out = append(out, a)
		}
	}
	return out
}
