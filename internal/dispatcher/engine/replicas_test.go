package engine

import (
	"crypto/sha256"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// Two dispatchers sharing one store, as replicas share PostgreSQL: here two
// engines on the suite's journal, each with its own owner name. The answers
// of a turn reach whichever dispatcher the client's request lands on; the
// one that does not run the turn forwards them through the run's inbox.
var _ = Describe("Answers posted through another dispatcher (many dispatchers)", Ordered, func() {
	var (
		ns    string
		other *Engine
	)
	BeforeAll(func() {
		ns = newNamespace()
		registerCodex(ns, codexSrv.URL, true)
		other = New(k8sClient, k8sClient, jrnl, Options{Logger: logs.logger(), Owner: "other-dispatcher", SharedStore: true,
			ReattachTimeout: 3 * time.Second, ExternalDial: testutil.LoopbackExternalDial})
		DeferCleanup(other.Close)
	})

	It("delivers a host tool result posted through the other dispatcher to the turn, once", func() {
		newSession(ns, "tools", testModel)
		stub.When("xtool-1", stubmodel.CallJSON("lookup_weather", map[string]any{"city": "Oslo"}))
		session := keyOf(ns, "tools")
		answered := make(chan error, 2)
		c := &collector{}
		c.onEvent = func(typ string, payload json.RawMessage) {
			if typ != wire.EventToolCall {
				return
			}
			var call wire.ToolCall
			Expect(json.Unmarshal(payload, &call)).To(Succeed())
			answered <- other.SubmitToolResult(session, "run-x1", call.CallID, wire.TextAnswer("sunny, 21C"))
			answered <- other.SubmitToolResult(session, "run-x1", call.CallID, wire.TextAnswer("a second answer"))
		}
		req := textReq("run-x1", "xtool-1: weather in Oslo?")
		req.Tools = []wire.HostTool{{Name: "lookup_weather", Description: "Weather by city",
			Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}}

		Expect(eng.Turn(ctx, ns, "tools", req, c.sink)).To(Succeed())

		Expect(<-answered).To(Succeed(), "the other dispatcher accepted the answer for the turn it does not run")
		Expect(<-answered).To(MatchError(ErrNoPendingToolCall), "a second answer to the call is refused")
		Expect(stub.FunctionCallOutputs()).To(ContainElement(HaveField("Output", ContainSubstring("sunny, 21C"))))
		Expect(stub.FunctionCallOutputs()).NotTo(ContainElement(HaveField("Output", ContainSubstring("a second answer"))))
		Expect(resultOf(c.events()).AssistantTexts).To(Equal([]string{stubmodel.ToolOutputPrefix + "sunny, 21C"}))
		Expect(other.SubmitToolResult(session, "run-x1", "call_late", wire.TextAnswer("late"))).To(MatchError(ErrNoPendingToolCall),
			"the turn ended: nothing is forwarded")
	})

	It("interrupts the turn when the interrupt is posted through the other dispatcher", func() {
		newSession(ns, "intr", testModel)
		gate := stubmodel.NewGate()
		DeferCleanup(gate.Release)
		stub.When("xintr-1", stubmodel.Stall(gate, stubmodel.Text("never said")))
		session := keyOf(ns, "intr")
		Expect(other.Interrupt(session, "run-x2")).To(BeFalse(), "nothing runs yet, on either dispatcher")
		c := &collector{}
		done := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			done <- eng.Turn(ctx, ns, "intr", textReq("run-x2", "xintr-1 think long"), c.sink)
		}()
		_, err := stub.WaitMarker(ctx, "xintr-1")
		Expect(err).NotTo(HaveOccurred())

		Expect(other.Interrupt(session, "run-x2")).To(BeTrue(), "the turn runs on the first dispatcher")

		var turnErr error
		Eventually(done, 20*time.Second).Should(Receive(&turnErr))
		Expect(turnErr).NotTo(HaveOccurred())
		Expect(resultOf(c.events()).Terminal.Kind).To(Equal(wire.TerminalAborted))
		Expect(other.Interrupt(session, "run-x2")).To(BeFalse(), "the turn ended")
	})

	// A dispatcher that died leaves its run running and its session's lease
	// unrenewed; a live one's Sweep ends the run and clears the session's
	// activeTurn, and leaves the turns of live dispatchers alone.
	It("ends the turn of a dispatcher that stopped renewing its lease, and no other", func() {
		newSession(ns, "dead", testModel)
		newSession(ns, "alive", testModel)
		dead, alive := keyOf(ns, "dead"), keyOf(ns, "alive")
		deadLease, err := jrnl.Acquire(ctx, dead, "dead-dispatcher", 200*time.Millisecond)
		Expect(err).NotTo(HaveOccurred())
		_, _, err = jrnl.Claim(deadLease, "run-dead", sha256.Sum256([]byte("run-dead")), store.Requester{User: "gateway"})
		Expect(err).NotTo(HaveOccurred())
		// The activeTurn the dead dispatcher applied, as its field manager.
		s := getSession(ns, "dead")
		st := eng.current(s)
		st.ActiveTurn = &v1alpha1.ActiveTurn{RunID: "run-dead", StartedAt: metav1.Now(), Deadline: metav1.NewTime(time.Now().Add(time.Hour))}
		Expect(eng.apply(ctx, s, st)).To(Succeed())
		aliveLease, err := jrnl.Acquire(ctx, alive, "live-dispatcher", time.Hour)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = jrnl.Release(ctx, aliveLease) })
		aliveRun, _, err := jrnl.Claim(aliveLease, "run-alive", sha256.Sum256([]byte("run-alive")), store.Requester{User: "gateway"})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { _ = aliveRun.Finish(store.StateFinished, nil) })

		// The dead dispatcher's lease expires on the store's clock.
		Eventually(func() ([]store.RunRef, error) { return other.Sweep(ctx) }).
			Should(ContainElement(And(HaveField("Session", dead), HaveField("RunID", "run-dead"))))

		run, err := jrnl.FindRun(dead, "run-dead")
		Expect(err).NotTo(HaveOccurred())
		Expect(run.Info().State).To(Equal(store.StateFailed))
		still, err := jrnl.FindRun(alive, "run-alive")
		Expect(err).NotTo(HaveOccurred())
		Expect(still.Info().State).To(Equal(store.StateRunning), "a live dispatcher's turn runs on")
		s = getSession(ns, "dead")
		Expect(s.Status.ActiveTurn).To(BeNil())
		Expect(s.Status.LastTurn).NotTo(BeNil())
		Expect(s.Status.LastTurn.RunID).To(Equal("run-dead"))
		Expect(s.Status.LastTurn.Outcome).To(Equal(v1alpha1.TurnFailed))
		Expect(s.Status.LastTurn.ErrorCode).To(Equal(string(wire.CodeHarnessUnavailable)))
		Expect(other.Sweep(ctx)).To(BeEmpty(), "a second sweep has nothing left to end")
	})

	// The dispatcher died between starting the native turn and writing the
	// session's activeTurn: the session shows nothing of the run. The sweep
	// still records it as the session's last turn, failed, once.
	It("records the turn of a dead dispatcher that the session never showed as its last turn, failed", func() {
		newSession(ns, "unmarked", testModel)
		key := keyOf(ns, "unmarked")
		lease, err := jrnl.Acquire(ctx, key, "dead-dispatcher", 200*time.Millisecond)
		Expect(err).NotTo(HaveOccurred())
		_, _, err = jrnl.Claim(lease, "run-unmarked", sha256.Sum256([]byte("run-unmarked")), store.Requester{User: "gateway"})
		Expect(err).NotTo(HaveOccurred())
		Expect(getSession(ns, "unmarked").Status.ActiveTurn).To(BeNil())

		Eventually(func() ([]store.RunRef, error) { return other.Sweep(ctx) }).
			Should(ContainElement(And(HaveField("Session", key), HaveField("RunID", "run-unmarked"))))
		Eventually(func(g Gomega) {
			s := getSession(ns, "unmarked")
			g.Expect(s.Status.ActiveTurn).To(BeNil())
			g.Expect(s.Status.LastTurn).NotTo(BeNil())
			g.Expect(s.Status.LastTurn.RunID).To(Equal("run-unmarked"))
			g.Expect(s.Status.LastTurn.Outcome).To(Equal(v1alpha1.TurnFailed))
			g.Expect(s.Status.LastTurn.ErrorCode).To(Equal(string(wire.CodeHarnessUnavailable)))
			g.Expect(s.Status.Counters).NotTo(BeNil())
			g.Expect(s.Status.Counters.FailedTurns).To(BeEquivalentTo(1))
		}).Should(Succeed())
		Expect(other.Sweep(ctx)).To(BeEmpty(), "a second sweep has nothing left to end")
		Expect(getSession(ns, "unmarked").Status.Counters.FailedTurns).To(BeEquivalentTo(1), "counted once")
	})
})
