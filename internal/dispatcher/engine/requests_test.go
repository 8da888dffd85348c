package engine

import (
	"encoding/json"
	"errors"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// pendingOf reads the run's journal from the event after afterSeq (what a
// gateway's stream sends after Last-Event-ID) until a native request of
// type typ, and returns its payload and the sequence of the event before it.
func pendingOf(session, runID, typ string) json.RawMessage {
	GinkgoHelper()
	var run store.Run
	Eventually(func() (err error) { run, err = jrnl.FindRun(session, runID); return err }).Should(Succeed(), "the run was begun")
	var selected int64 = -1
	for ev, err := range run.Events(ctx, 0) {
		Expect(err).NotTo(HaveOccurred())
		if ev.Type == wire.EventSelected {
			selected = ev.Seq
			break
		}
	}
	Expect(selected).To(BeNumerically(">=", 0))
	// The reattached stream: Last-Event-ID is the selected event.
	for ev, err := range run.Events(ctx, selected) {
		Expect(err).NotTo(HaveOccurred())
		if ev.Type == typ {
			return ev.Payload
		}
	}
	Fail("the run ended without a " + typ)
	return nil
}

var _ = Describe("Native requests", Ordered, func() {
	var ns string
	BeforeAll(func() {
		ns = newNamespace()
		registerCodex(ns, codexSrv.URL, true)
	})

	It("relays an approval the gateway answers after its stream dropped and reattached: journaled before Codex hears it, delivered once, a second answer refused (approvals)", func() {
		newSession(ns, "approve", testModel)
		stub.When("appr-1", stubmodel.CallJSON("exec_command", map[string]string{"cmd": "echo ran-once"}))
		session := keyOf(ns, "approve")
		req := textReq("run-ap1", "appr-1: run it")
		req.ApprovalMode = wire.ApprovalModeUntrusted

		var (
			wg   sync.WaitGroup
			evs  []event
			terr error
		)
		wg.Add(1)
		go func() {
			defer GinkgoRecover()
			defer wg.Done()
			// The first stream drops its events on the floor: it never
			// answers.
			evs, terr = turn(ns, "approve", req)
		}()
		var asked wire.ApprovalRequest
		Expect(json.Unmarshal(pendingOf(session, "run-ap1", wire.EventApprovalRequest), &asked)).To(Succeed())
		Expect(asked.Kind).To(Equal(wire.ApprovalCommand))
		Expect(asked.Command).To(ContainSubstring("echo ran-once"))
		Expect(asked.Cwd).NotTo(BeEmpty())

		Expect(eng.SubmitApproval(session, "run-ap1", wire.ApprovalAnswer{RequestID: "nope", Decision: wire.ApproveOnce})).
			To(MatchError(ErrNoPendingRequest))
		Expect(eng.SubmitUserInput(session, "run-ap1", wire.UserInputAnswer{RequestID: asked.RequestID})).
			To(MatchError(ContainSubstring("is an approval request")))
		Expect(eng.SubmitApproval(session, "run-ap1", wire.ApprovalAnswer{RequestID: asked.RequestID, Decision: wire.ApproveOnce})).To(Succeed())
		Expect(eng.SubmitApproval(session, "run-ap1", wire.ApprovalAnswer{RequestID: asked.RequestID, Decision: wire.Deny})).
			To(MatchError(ErrRequestAlreadyResolved))
		wg.Wait()
		Expect(terr).NotTo(HaveOccurred())

		Expect(ofType(evs, wire.EventApprovalRequest)).To(HaveLen(1))
		resolved := ofType(evs, wire.EventRequestResolved)
		Expect(resolved).To(HaveLen(1))
		var rr wire.RequestResolved
		Expect(json.Unmarshal(resolved[0], &rr)).To(Succeed())
		Expect(rr).To(Equal(wire.RequestResolved{RequestID: asked.RequestID, CallID: asked.CallID, Resolution: wire.ResolvedApprovedOnce}))
		// The command ran once: one output, which the model saw.
		outs := stub.RequestsContaining("appr-1")
		Expect(outs[len(outs)-1].FunctionCallOutputs()).To(ConsistOf(HaveField("Output", ContainSubstring("ran-once"))))
		Expect(resultOf(evs).Terminal.Kind).To(Equal(wire.TerminalOK))
		Eventually(func() error {
			return eng.SubmitApproval(session, "run-ap1", wire.ApprovalAnswer{RequestID: asked.RequestID, Decision: wire.ApproveOnce})
		}).Should(MatchError(ErrNoPendingRequest), "the turn ended: its requests are gone")
	})

	It("denies an approval nobody answers at the turn's tool timeout, visibly (approvals)", func() {
		newSession(ns, "unanswered", testModel)
		stub.When("appr-2", stubmodel.CallJSON("exec_command", map[string]string{"cmd": "echo never-ran"}))
		req := textReq("run-ap2", "appr-2: run it")
		req.ApprovalMode = wire.ApprovalModeUntrusted
		req.ToolTimeoutMs = 300
		evs, err := turn(ns, "unanswered", req)
		Expect(err).NotTo(HaveOccurred())
		var rr wire.RequestResolved
		Expect(json.Unmarshal(lastOf(evs, wire.EventRequestResolved), &rr)).To(Succeed())
		Expect(rr.Resolution).To(Equal(wire.ResolvedTimedOut))
		var term wire.ToolTerminal
		Expect(json.Unmarshal(lastOf(evs, wire.EventToolTerminal), &term)).To(Succeed())
		Expect(term.ExecutionStarted).To(BeFalse())
		Expect(term.Failure.Reason).To(Equal(wire.FailureDeclined))
		outs := stub.RequestsContaining("appr-2")
		Expect(outs[len(outs)-1].FunctionCallOutputs()).To(ConsistOf(HaveField("Output", ContainSubstring("rejected by user"))))
		Expect(eng.SubmitApproval(keyOf(ns, "unanswered"), "run-ap2", wire.ApprovalAnswer{RequestID: rr.RequestID, Decision: wire.ApproveOnce})).
			To(Or(MatchError(ErrRequestAlreadyResolved), MatchError(ErrNoPendingRequest)), "timed out, then the turn ended")
	})

	It("relays plan-mode questions and refuses answers that are not an option, before the model hears the accepted one (user input)", func() {
		newSession(ns, "ask", testModel)
		stub.When("ask-1", stubmodel.CallJSON("request_user_input", map[string]any{"questions": []any{
			map[string]any{"id": "color", "header": "Color", "question": "Which color?", "options": []any{
				map[string]any{"label": "Red", "description": "warm"}, map[string]any{"label": "Blue", "description": "cool"}}},
		}}), stubmodel.Text("noted"))
		session := keyOf(ns, "ask")
		req := textReq("run-ask1", "ask-1: pick")
		req.CollaborationMode = wire.CollaborationPlan
		c := &collector{}
		c.onEvent = func(typ string, payload json.RawMessage) {
			if typ != wire.EventUserInputRequest {
				return
			}
			var q wire.UserInputRequest
			Expect(json.Unmarshal(payload, &q)).To(Succeed())
			Expect(q.Questions).To(HaveLen(1))
			err := eng.SubmitUserInput(session, "run-ask1", wire.UserInputAnswer{RequestID: q.RequestID,
				Answers: map[string]wire.UserInputValue{"color": {Choices: []string{"Green"}}}})
			var fe *wire.FieldError
			Expect(errors.As(err, &fe)).To(BeTrue(), "a FieldError: %v", err)
			Expect(fe.Field).To(Equal("answers.color.choices[0]"))
			Expect(eng.SubmitUserInput(session, "run-ask1", wire.UserInputAnswer{RequestID: q.RequestID,
				Answers: map[string]wire.UserInputValue{"color": {Choices: []string{"Blue"}, Text: "navy, really"}}})).To(Succeed())
		}
		Expect(eng.Turn(ctx, ns, "ask", req, c.sink)).To(Succeed())
		evs := c.events()
		var rr wire.RequestResolved
		Expect(json.Unmarshal(lastOf(evs, wire.EventRequestResolved), &rr)).To(Succeed())
		Expect(rr.Resolution).To(Equal(wire.ResolvedAnswered))
		outs := stub.RequestsContaining("ask-1")
		Expect(outs[len(outs)-1].FunctionCallOutputs()).To(ConsistOf(HaveField("Output",
			MatchJSON(`{"answers":{"color":{"answers":["Blue","navy, really"]}}}`))))
	})
})
