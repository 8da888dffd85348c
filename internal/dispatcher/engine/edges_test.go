package engine

import (
	"encoding/json"
	"errors"
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// refusedBeforeAnyThread asserts a turn that was refused at selection or
// server choice: `selected` then `error`, no model request, no journal run,
// no thread bound.
func refusedBeforeAnyThread(ns, name, runID string, evs []event, requestsBefore int) {
	GinkgoHelper()
	Expect(types(evs)).To(Equal([]string{wire.EventSelected, wire.EventError}))
	Expect(len(stub.Requests())).To(Equal(requestsBefore), "nothing reached the model")
	_, err := jrnl.Lookup(keyOf(ns, name), runID)
	Expect(err).To(MatchError(journal.ErrNotFound), "a refused turn is not journaled")
	s := getSession(ns, name)
	Expect(s.Status.NativeBinding).To(BeNil(), "no thread was started")
	Expect(s.Status.ActiveTurn).To(BeNil())
}

var _ = Describe("Version floor (the real 0.148.0 app-server)", func() {
	It("fails closed with VersionBelowFloor and the controller's exact version error, never a fallback", func() {
		old := os.Getenv("CODEX_BIN_BELOW_FLOOR")
		Expect(old).NotTo(BeEmpty(), "CODEX_BIN_BELOW_FLOOR must name codex 0.148.0: CODEX_BIN_BELOW_FLOOR=$(hack/setup-codex.sh 0.148.0)")
		srv, err := codextest.StartErr(suiteT, codextest.Options{
			Bin: old, ProviderURL: stub.BaseURL(), Transport: codextest.WebSocket,
			ListenHost: "127.0.0.4", WSToken: serverToken,
		})
		Expect(err).NotTo(HaveOccurred())
		ns := newNamespace()
		h := createCodex(ns, srv.URL)
		// The controller's real handshake finds the version below the floor.
		cond := waitHarness(h, v1alpha1.HarnessConditionVersionSupported, metav1.ConditionFalse)
		Expect(cond.Reason).To(Equal(string(v1alpha1.HarnessReasonVersionBelowFloor)))
		const want = "Codex app-server 0.149.0 or newer is required, but detected 0.148.0. Update the AgentHarness image to a newer Codex release."
		Expect(cond.Message).To(Equal(want))

		newSession(ns, "old", testModel)
		before := len(stub.Requests())
		evs, err := turn(ns, "old", textReq("run-v1", "vfloor-1 hello"))
		var te *wire.Error
		Expect(errors.As(err, &te)).To(BeTrue(), "%v", err)
		Expect(te.Code).To(Equal(wire.CodeVersionBelowFloor))
		Expect(te.Message).To(Equal(want))
		Expect(te.Scope).To(Equal(wire.ScopeHarness))
		Expect(te.Retryable).To(BeFalse())
		Expect(te.HTTPStatus()).To(Equal(422))
		Expect(errorOf(evs).Code).To(Equal(wire.CodeVersionBelowFloor))
		var d wire.Decision
		Expect(json.Unmarshal(evs[0].Payload, &d)).To(Succeed())
		Expect(d.HarnessID).To(Equal("codex"), "no fallback to another harness")
		Expect(d.Runtime).NotTo(Equal(string(v1alpha1.RuntimeOpenClaw)), "no fallback to the embedded runtime")
		Expect(d.Error).NotTo(BeNil())
		Expect(d.Error.Code).To(Equal(wire.CodeVersionBelowFloor))
		refusedBeforeAnyThread(ns, "old", "run-v1", evs, before)
		Expect(stub.RequestsContaining("vfloor-1")).To(BeEmpty())
	})
})

var _ = Describe("Interrupt and verified inference", Ordered, func() {
	var ns string
	BeforeAll(func() {
		ns = newNamespace()
		registerCodex(ns, codexSrv.URL, true)
	})

	It("interrupts a running turn: result with terminal aborted, lastTurn Interrupted", func() {
		newSession(ns, "intr", testModel)
		gate := stubmodel.NewGate()
		DeferCleanup(gate.Release)
		stub.When("intr-1", stubmodel.Stall(gate, stubmodel.Text("never said")))
		Expect(eng.Interrupt(keyOf(ns, "intr"), "run-i1")).To(BeFalse(), "nothing runs yet")
		c := &collector{}
		done := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			done <- eng.Turn(ctx, ns, "intr", textReq("run-i1", "intr-1 think long"), c.sink)
		}()
		_, err := stub.WaitMarker(ctx, "intr-1")
		Expect(err).NotTo(HaveOccurred())
		Expect(eng.Interrupt(keyOf(ns, "intr"), "run-other")).To(BeFalse(), "another runId is not interrupted")
		Eventually(func() bool { return eng.Interrupt(keyOf(ns, "intr"), "run-i1") }).Should(BeTrue())
		var turnErr error
		Eventually(done, 20*time.Second).Should(Receive(&turnErr))
		Expect(turnErr).NotTo(HaveOccurred())
		res := resultOf(c.events())
		Expect(res.Terminal.Kind).To(Equal(wire.TerminalAborted))
		Expect(res.AssistantTexts).NotTo(ContainElement(ContainSubstring("never said")))
		s := getSession(ns, "intr")
		Expect(s.Status.ActiveTurn).To(BeNil())
		Expect(s.Status.LastTurn).NotTo(BeNil())
		Expect(s.Status.LastTurn.RunID).To(Equal("run-i1"))
		Expect(s.Status.LastTurn.Outcome).To(Equal(v1alpha1.TurnInterrupted))
		Expect(s.Status.Counters.Turns).To(Equal(int64(1)))
		Expect(s.Status.Counters.FailedTurns).To(Equal(int64(1)))
		Expect(eng.Interrupt(keyOf(ns, "intr"), "run-i1")).To(BeFalse(), "the turn ended")
	})

	It("refuses an expected artifact of another harness before any thread (ArtifactMismatch, the harness SDK's text)", func() {
		newSession(ns, "verified", testModel)
		before := len(stub.Requests())
		req := textReq("run-x1", "xv-1 verified please")
		req.ExpectedRuntimeArtifact = &wire.ExpectedRuntimeArtifact{HarnessID: "claude", ID: "sha256:abc"}
		evs, err := turn(ns, "verified", req)
		var te *wire.Error
		Expect(errors.As(err, &te)).To(BeTrue(), "%v", err)
		Expect(te.Code).To(Equal(wire.CodeArtifactMismatch))
		Expect(te.Message).To(Equal("Verified inference requires agent harness claude, but codex was selected."))
		Expect(te.Scope).To(Equal(wire.ScopeHarness))
		Expect(te.ReplaySafe).To(BeNil(), "no runtime was touched")
		refusedBeforeAnyThread(ns, "verified", "run-x1", evs, before)
	})

	It("refuses an expected artifact on the external (unattested) server before any thread (ArtifactMismatch)", func() {
		before := len(stub.Requests())
		req := textReq("run-x2", "xv-2 verified please")
		req.ExpectedRuntimeArtifact = &wire.ExpectedRuntimeArtifact{HarnessID: "codex", ID: "sha256:abc"}
		evs, err := turn(ns, "verified", req)
		var te *wire.Error
		Expect(errors.As(err, &te)).To(BeTrue(), "%v", err)
		Expect(te.Code).To(Equal(wire.CodeArtifactMismatch))
		Expect(te.Message).To(Equal("Verified inference requires an attested runtime artifact, but agent harness codex is an external server, which is not attested."))
		refusedBeforeAnyThread(ns, "verified", "run-x2", evs, before)
		Expect(stub.RequestsContaining("xv-2")).To(BeEmpty())

		// The same session runs an ordinary turn, and captureRuntimeArtifact on
		// an unattested server yields no artifact.
		req = textReq("run-x3", "xv-3 ordinary")
		req.CaptureRuntimeArtifact = true
		evs, err = turn(ns, "verified", req)
		Expect(err).NotTo(HaveOccurred())
		Expect(resultOf(evs).RuntimeArtifact).To(BeNil())
	})
})

var _ = Describe("Host tool timeout and the transcript limit", func() {
	It("fails a host tool the client never answers within toolTimeoutMs, with executionStarted true", func() {
		ns := newNamespace()
		registerCodex(ns, codexSrv.URL, true)
		newSession(ns, "slowtool", testModel)
		stub.When("tto-1", stubmodel.CallJSON("lookup_weather", map[string]any{"city": "Bergen"}))
		req := textReq("run-tt1", "tto-1: weather in Bergen?")
		req.ToolTimeoutMs = 300
		req.Tools = []wire.HostTool{{Name: "lookup_weather", Description: "Weather by city",
			Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}}
		evs, err := turn(ns, "slowtool", req)
		Expect(err).NotTo(HaveOccurred())
		var call wire.ToolCall
		Expect(json.Unmarshal(lastOf(evs, wire.EventToolCall), &call)).To(Succeed())
		var term wire.ToolTerminal
		Expect(json.Unmarshal(lastOf(evs, wire.EventToolTerminal), &term)).To(Succeed())
		Expect(term.CallID).To(Equal(call.CallID))
		Expect(term.Tool).To(Equal("lookup_weather"))
		Expect(term.Outcome).To(Equal(wire.OutcomeFailure))
		Expect(term.ExecutionStarted).To(BeTrue(), "the client may have started it")
		Expect(eng.SubmitToolResult(keyOf(ns, "slowtool"), "run-tt1", call.CallID, wire.TextAnswer("late"))).
			To(MatchError(ErrNoPendingToolCall), "a timed-out call takes no answer")
		Expect(stub.FunctionCallOutputs()).NotTo(ContainElement(HaveField("Output", ContainSubstring("late"))))
	})

	It("fails a turn whose transcript outgrows the session's limit with TranscriptLimitExceeded (replaySafe false)", func() {
		ns := newNamespace()
		registerCodex(ns, codexSrv.URL, true)
		newSession(ns, "big", testModel)
		small, err := journal.Open(suiteT.TempDir(), journal.Options{MaxTranscriptBytes: 64})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(small.Close)
		limited := New(k8sClient, k8sClient, small, Options{ExternalDial: testutil.LoopbackExternalDial})
		DeferCleanup(limited.Close)
		stub.When("tlim-1", stubmodel.Text("a reply that does not fit"))
		c := &collector{}
		err = limited.Turn(ctx, ns, "big", textReq("run-tl1", "tlim-1 a prompt longer than the sixty-four byte transcript limit of this session"), c.sink)
		var te *wire.Error
		Expect(errors.As(err, &te)).To(BeTrue(), "%v", err)
		Expect(te.Code).To(Equal(wire.CodeTranscriptLimitExceeded))
		Expect(te.Message).To(ContainSubstring("would exceed the limit of 64 bytes"), "a clear error naming the limit")
		Expect(te.ReplaySafe).NotTo(BeNil())
		Expect(*te.ReplaySafe).To(BeFalse())
		Expect(errorOf(c.events()).Code).To(Equal(wire.CodeTranscriptLimitExceeded))
		Expect(types(c.events())).NotTo(ContainElement(wire.EventResult))
		s := getSession(ns, "big")
		Expect(s.Status.LastTurn.Outcome).To(Equal(v1alpha1.TurnFailed))
		Expect(s.Status.LastTurn.ErrorCode).To(Equal(string(wire.CodeTranscriptLimitExceeded)))
		Expect(s.Status.ActiveTurn).To(BeNil())
	})
})
