package engine

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

var _ = Describe("Turn engine", Ordered, func() {
	var ns string
	BeforeAll(func() {
		ns = newNamespace()
		registerCodex(ns, codexSrv.URL, true)
	})

	It("streams partials and a result, mirrors the transcript, and records pin, reason, thread, lastTurn and counters (text turn; Codex-only policy)", func() {
		newSession(ns, "text", testModel)
		stub.When("alpha-1", stubmodel.Text("The answer is forty-two.", "The answer ", "is forty-two."))

		evs, err := turn(ns, "text", textReq("run-a1", "alpha-1: what is the answer?"))
		Expect(err).NotTo(HaveOccurred())
		ts := types(evs)
		Expect(ts[0]).To(Equal(wire.EventSelected))
		Expect(ts).To(ContainElement(wire.EventPartial))
		Expect(ts).To(ContainElement(wire.EventTranscript))
		Expect(ts[len(ts)-1]).To(Equal(wire.EventResult))

		var d wire.Decision
		Expect(json.Unmarshal(evs[0].Payload, &d)).To(Succeed())
		Expect(d.Runtime).To(Equal("codex"))
		Expect(d.Reason).To(Equal(wire.ReasonForcedPlugin))
		Expect(d.RuntimeSource).To(Equal(v1alpha1.RuntimeSourceProvider), "the Codex-only policy's provider entry decided")

		var partial strings.Builder
		for _, p := range ofType(evs, wire.EventPartial) {
			var pp wire.Partial
			Expect(json.Unmarshal(p, &pp)).To(Succeed())
			partial.WriteString(pp.Delta)
		}
		Expect(partial.String()).To(Equal("The answer is forty-two."))
		res := resultOf(evs)
		Expect(res.AssistantTexts).To(Equal([]string{"The answer is forty-two."}))
		Expect(res.Terminal.Kind).To(Equal(wire.TerminalOK))
		Expect(res.AgentHarnessID).To(Equal("codex"))
		Expect(res.RunID).To(Equal("run-a1"))

		tr := transcript(ns, "text")
		Expect(tr).To(ContainSubstring("alpha-1: what is the answer?"))
		Expect(tr).To(ContainSubstring("The answer is forty-two."))

		s := getSession(ns, "text")
		Expect(s.Status.AgentHarnessID).To(Equal("codex"))
		Expect(s.Status.LastSelection).NotTo(BeNil())
		Expect(s.Status.LastSelection.Runtime).To(Equal(v1alpha1.RuntimeID("codex")))
		Expect(s.Status.LastSelection.Reason).To(Equal("forced_plugin"))
		Expect(s.Status.LastSelection.RunID).To(Equal("run-a1"))
		Expect(s.Status.LastSelection.Candidates).To(ContainElement(HaveField("HarnessID", "codex")))
		Expect(s.Status.NativeBinding).NotTo(BeNil())
		Expect(s.Status.NativeBinding.ThreadID).To(Equal(res.ThreadID))
		Expect(s.Status.NativeBinding.Pod).To(Equal(ExternalServerName))
		Expect(s.Status.ActiveTurn).To(BeNil())
		Expect(s.Status.LastTurn).NotTo(BeNil())
		Expect(s.Status.LastTurn.Outcome).To(Equal(v1alpha1.TurnSucceeded))
		Expect(s.Status.LastTurn.RunID).To(Equal("run-a1"))
		Expect(s.Status.Counters).NotTo(BeNil())
		Expect(s.Status.Counters.Turns).To(Equal(int64(1)))
		Expect(s.Status.Counters.InputTokens).To(Equal(res.Usage.Input))
		Expect(s.Status.Counters.OutputTokens).To(Equal(res.Usage.Output))

		// Prometheus: one ok turn with bounded labels, its tokens, its time
		// to first partial and its duration.
		Expect(promtestutil.ToFloat64(turnsTotal.WithLabelValues(ns, "codex", "codex", "ok"))).To(Equal(1.0))
		Expect(promtestutil.ToFloat64(tokensTotal.WithLabelValues(ns, "codex", "input"))).To(Equal(float64(res.Usage.Input)))
		Expect(promtestutil.ToFloat64(tokensTotal.WithLabelValues(ns, "codex", "output"))).To(Equal(float64(res.Usage.Output)))
		Expect(histogramCount(timeToFirstPartial.WithLabelValues(ns, "codex"))).To(Equal(uint64(1)))
		Expect(histogramCount(turnDuration.WithLabelValues(ns, "codex", "ok"))).To(Equal(uint64(1)))

		// The dispatcher's fields belong to its own field manager only.
		for _, mf := range s.ManagedFields {
			if mf.Subresource == "status" && mf.FieldsV1 != nil && strings.Contains(mf.FieldsV1.GetRawString(), "nativeBinding") {
				Expect(mf.Manager).To(Equal(DefaultFieldManager))
			}
		}
		// One structured `agent harness selected` record with each candidate's result.
		Expect(logs.matching(`"agent harness selected"`, `"runId"="run-a1"`)).To(HaveLen(1))
		Expect(logs.matching(`"agent harness selected"`, `"runId"="run-a1"`)[0]).To(ContainSubstring(`{"harnessId"="codex" "supported"=true`))
		Expect(logs.all()).NotTo(ContainSubstring(serverToken), "no token in logs")
	})

	It("resumes the bound thread on the next turn, and starts a new one after a resetGeneration bump (native thread)", func() {
		first := getSession(ns, "text").Status.NativeBinding.ThreadID
		evs, err := turn(ns, "text", textReq("run-a2", "beta-2: and again?"))
		Expect(err).NotTo(HaveOccurred())
		Expect(resultOf(evs).ThreadID).To(Equal(first))
		req, err := stub.WaitMarker(ctx, "beta-2")
		Expect(err).NotTo(HaveOccurred())
		Expect(req.AssistantTexts()).To(ContainElement(ContainSubstring("forty-two")), "the resumed thread carries the history")
		Expect(getSession(ns, "text").Status.Counters.Turns).To(Equal(int64(2)))

		s := getSession(ns, "text")
		s.Spec.ResetGeneration = 1
		Expect(k8sClient.Update(ctx, s)).To(Succeed())
		evs, err = turn(ns, "text", textReq("run-a3", "gamma-3: fresh start"))
		Expect(err).NotTo(HaveOccurred())
		third := resultOf(evs).ThreadID
		Expect(third).NotTo(BeEmpty())
		Expect(third).NotTo(Equal(first))
		req, err = stub.WaitMarker(ctx, "gamma-3")
		Expect(err).NotTo(HaveOccurred())
		Expect(req.AssistantTexts()).NotTo(ContainElement(ContainSubstring("forty-two")), "a new thread has no history")
		s = getSession(ns, "text")
		Expect(s.Status.NativeBinding.ThreadID).To(Equal(third))
		Expect(s.Status.NativeBinding.Generation).To(Equal(int64(1)))
		Expect(transcript(ns, "text")).To(ContainSubstring(`{"type":"reset","generation":1`))
	})

	It("runs a duplicate runId once and refuses a reused runId with another body (never replay)", func() {
		before := len(stub.Requests())
		body := textReq("run-a1", "alpha-1: what is the answer?")
		evs, err := turn(ns, "text", body)
		Expect(err).NotTo(HaveOccurred())
		Expect(resultOf(evs).AssistantTexts).To(Equal([]string{"The answer is forty-two."}))
		Expect(evs[0].Type).To(Equal(wire.EventSelected))
		Consistently(func() int { return len(stub.Requests()) }, 500*time.Millisecond).Should(Equal(before), "no model request for a replay")
		Expect(getSession(ns, "text").Status.Counters.Turns).To(Equal(int64(3)), "a replay is not a turn")
		Expect(promtestutil.ToFloat64(turnsTotal.WithLabelValues(ns, "codex", "codex", "ok"))).To(Equal(3.0), "a replay is not counted")
		Expect(histogramCount(turnDuration.WithLabelValues(ns, "codex", "ok"))).To(Equal(uint64(3)))

		_, err = turn(ns, "text", textReq("run-a1", "alpha-1: something else"))
		var te *wire.Error
		Expect(errors.As(err, &te)).To(BeTrue(), "%v", err)
		Expect(te.Code).To(Equal(wire.CodeRunIDConflict))
		Expect(te.HTTPStatus()).To(Equal(409))
		Expect(len(stub.Requests())).To(Equal(before))
	})

	It("refuses an attempt that contradicts its AgentSession before anything runs (SessionMismatch)", func() {
		before := len(stub.Requests())
		req := textReq("run-mismatch", "hello")
		req.ModelID = "openai/gpt-other"
		evs, err := turn(ns, "text", req)
		var te *wire.Error
		Expect(errors.As(err, &te)).To(BeTrue(), "%v", err)
		Expect(te.Code).To(Equal(wire.CodeSessionMismatch))
		Expect(evs).To(BeEmpty())
		Expect(promtestutil.ToFloat64(failClosedTotal.WithLabelValues(ns, "SessionMismatch"))).To(Equal(1.0))
		Expect(promtestutil.ToFloat64(turnsTotal.WithLabelValues(ns, "", "", "SessionMismatch"))).To(Equal(1.0))
		_, lookErr := jrnl.Lookup(keyOf(ns, "text"), "run-mismatch")
		Expect(lookErr).To(MatchError(journal.ErrNotFound))
		Expect(len(stub.Requests())).To(Equal(before))
	})

	It("serializes two concurrent turns of one session and shows the running one as activeTurn", func() {
		newSession(ns, "busy", testModel)
		gate := stubmodel.NewGate()
		DeferCleanup(gate.Release)
		stub.When("slow-1", stubmodel.Stall(gate, stubmodel.Text("slow done")))

		var mu sync.Mutex
		var order []string
		record := func(who string) func(string, json.RawMessage) {
			return func(typ string, _ json.RawMessage) {
				mu.Lock()
				order = append(order, who+":"+typ)
				mu.Unlock()
			}
		}
		var wg sync.WaitGroup
		wg.Add(2)
		var errA, errB error
		go func() {
			defer GinkgoRecover()
			defer wg.Done()
			errA = eng.Turn(ctx, ns, "busy", textReq("run-c1", "slow-1 please"), record("A"))
		}()
		_, err := stub.WaitMarker(ctx, "slow-1")
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() *v1alpha1.ActiveTurn { return getSession(ns, "busy").Status.ActiveTurn }).Should(HaveField("RunID", "run-c1"))
		go func() {
			defer GinkgoRecover()
			defer wg.Done()
			errB = eng.Turn(ctx, ns, "busy", textReq("run-c2", "fast-2 please"), record("B"))
		}()
		Consistently(func() []*stubmodel.Request { return stub.RequestsContaining("fast-2") }, time.Second).Should(BeEmpty())
		gate.Release()
		wg.Wait()
		Expect(errA).NotTo(HaveOccurred())
		Expect(errB).NotTo(HaveOccurred())
		mu.Lock()
		defer mu.Unlock()
		aEnd, bStart := -1, -1
		for i, o := range order {
			if o == "A:result" {
				aEnd = i
			}
			if strings.HasPrefix(o, "B:") && bStart < 0 {
				bStart = i
			}
		}
		Expect(aEnd).To(BeNumerically(">=", 0))
		Expect(bStart).To(BeNumerically(">", aEnd), "B ran only after A ended: %v", order)
		Expect(getSession(ns, "busy").Status.Counters.Turns).To(Equal(int64(2)))
	})

	It("round-trips a host tool call through SubmitToolResult and the model sees its output (host tools)", func() {
		newSession(ns, "tools", testModel)
		stub.When("tool-1", stubmodel.CallJSON("lookup_weather", map[string]any{"city": "Oslo"}))
		session := keyOf(ns, "tools")
		c := &collector{}
		c.onEvent = func(typ string, payload json.RawMessage) {
			if typ != wire.EventToolCall {
				return
			}
			var call wire.ToolCall
			Expect(json.Unmarshal(payload, &call)).To(Succeed())
			Expect(call.Tool).To(Equal("lookup_weather"))
			Expect(eng.SubmitToolResult(session, "run-t1", call.CallID, wire.TextAnswer("sunny, 21C"))).To(Succeed())
		}
		req := textReq("run-t1", "tool-1: weather in Oslo?")
		req.Tools = []wire.HostTool{{Name: "lookup_weather", Description: "Weather by city",
			Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}}
		Expect(eng.Turn(ctx, ns, "tools", req, c.sink)).To(Succeed())
		evs := c.events()
		Expect(types(evs)).To(ContainElement(wire.EventToolCall))
		var term wire.ToolTerminal
		Expect(json.Unmarshal(lastOf(evs, wire.EventToolTerminal), &term)).To(Succeed())
		Expect(term.Outcome).To(Equal(wire.OutcomeSuccess))
		Expect(term.ExecutionStarted).To(BeTrue())
		Expect(stub.FunctionCallOutputs()).To(ContainElement(HaveField("Output", ContainSubstring("sunny, 21C"))))
		Expect(resultOf(evs).AssistantTexts).To(Equal([]string{stubmodel.ToolOutputPrefix + "sunny, 21C"}))
		tr := transcript(ns, "tools")
		Expect(tr).To(ContainSubstring("lookup_weather"))
		Expect(tr).To(ContainSubstring("sunny, 21C"))
		Expect(eng.SubmitToolResult(session, "run-t1", term.CallID, wire.TextAnswer("late"))).To(MatchError(ErrNoPendingToolCall))
	})

	It("refuses a turn whose decision is the embedded openclaw runtime (EmbeddedRuntimeSelected, scope harness)", func() {
		newSession(ns, "embedded", "anthropic/claude-x")
		before := len(stub.Requests())
		evs, err := turn(ns, "embedded", textReq("run-e1", "hello"))
		var te *wire.Error
		Expect(errors.As(err, &te)).To(BeTrue(), "%v", err)
		Expect(te.Code).To(Equal(wire.CodeEmbeddedRuntimeSelected))
		Expect(te.Scope).To(Equal(wire.ScopeHarness))
		Expect(te.HTTPStatus()).To(Equal(409))
		Expect(te.ReplaySafe).To(BeNil(), "no runtime was touched")
		Expect(types(evs)).To(Equal([]string{wire.EventSelected, wire.EventError}))
		Expect(len(stub.Requests())).To(Equal(before))
	})
})

var _ = Describe("A session whose transcript mirror is full", func() {
	It("refuses the next turn before it starts (413 TranscriptLimitExceeded), and a reset starts a new transcript", func() {
		ns := newNamespace()
		registerCodex(ns, codexSrv.URL, true)
		newSession(ns, "full", testModel)
		session := keyOf(ns, "full")
		small, err := journal.Open(suiteT.TempDir(), journal.Options{MaxTranscriptBytes: 600})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(small.Close)
		tight := New(k8sClient, k8sClient, small, Options{ExternalDial: testutil.LoopbackExternalDial})
		DeferCleanup(tight.Close)
		run := func(runID, prompt string) ([]event, error) {
			c := &collector{}
			err := tight.Turn(ctx, ns, "full", textReq(runID, prompt), c.sink)
			return c.events(), err
		}

		// The first turn's records do not fit: it ends with the limit.
		stub.When("tl-1", stubmodel.Text(strings.Repeat("long answer ", 40)))
		_, err = run("run-tl1", "tl-1 fill the transcript")
		var te *wire.Error
		Expect(errors.As(err, &te)).To(BeTrue(), "%v", err)
		Expect(te.Code).To(Equal(wire.CodeTranscriptLimitExceeded))

		// The next one is refused before anything reaches the model, and
		// is not journaled (its runId stays free).
		stub.When("tl-2", stubmodel.Text("never"))
		_, err = run("run-tl2", "tl-2 one more")
		Expect(errors.As(err, &te)).To(BeTrue(), "%v", err)
		Expect(te.Code).To(Equal(wire.CodeTranscriptLimitExceeded))
		Expect(te.HTTPStatus()).To(Equal(413))
		Expect(te.Message).To(ContainSubstring("reset the session"))
		Expect(stub.RequestsContaining("tl-2")).To(BeEmpty(), "a turn on a full transcript reached the model")
		_, err = small.Lookup(session, "run-tl2")
		Expect(err).To(MatchError(journal.ErrNotFound))

		// A reset: a new thread and a new transcript, the turn runs.
		s := getSession(ns, "full")
		s.Spec.ResetGeneration = 1
		Expect(k8sClient.Update(ctx, s)).To(Succeed())
		stub.When("tl-3", stubmodel.Text("fresh"))
		evs, err := run("run-tl3", "tl-3 after the reset")
		Expect(err).NotTo(HaveOccurred())
		Expect(resultOf(evs).AssistantTexts).To(Equal([]string{"fresh"}))
		var b strings.Builder
		_, err = small.ReadTranscript(session, &b)
		Expect(err).NotTo(HaveOccurred())
		Expect(b.String()).To(HavePrefix(`{"type":"reset","generation":1,`))
		Expect(b.String()).To(ContainSubstring("tl-3 after the reset"))
		Expect(b.String()).NotTo(ContainSubstring("tl-1"), "the reset kept the old transcript")
	})
})

var _ = Describe("Fail-closed and unavailable harnesses under the Codex-only policy", func() {
	It("fails closed with HarnessNotRegistered once the harness is deleted, touching no runtime", func() {
		ns := newNamespace()
		h := registerCodex(ns, codexSrv.URL, true)
		newSession(ns, "s", testModel)
		_, err := turn(ns, "s", textReq("run-d0", "delta-0 before"))
		Expect(err).NotTo(HaveOccurred())

		Expect(k8sClient.Delete(ctx, h)).To(Succeed())
		Eventually(func() error { return k8sClient.Get(ctx, client.ObjectKeyFromObject(h), h) }).ShouldNot(Succeed())
		before := len(stub.Requests())
		evs, err := turn(ns, "s", textReq("run-d1", "delta-1 after"))
		var te *wire.Error
		Expect(errors.As(err, &te)).To(BeTrue(), "%v", err)
		Expect(te.Code).To(Equal(wire.CodeHarnessNotRegistered))
		Expect(te.Message).To(Equal(`Requested agent harness "codex" is not registered.`))
		Expect(te.Retryable).To(BeFalse())
		Expect(errorOf(evs).Code).To(Equal(wire.CodeHarnessNotRegistered))
		Expect(len(stub.Requests())).To(Equal(before), "never a fallback, no model request")
		Expect(promtestutil.ToFloat64(failClosedTotal.WithLabelValues(ns, "HarnessNotRegistered"))).To(Equal(1.0))
		Expect(promtestutil.ToFloat64(turnsTotal.WithLabelValues(ns, "", "", "HarnessNotRegistered"))).To(Equal(1.0))
		Expect(promtestutil.ToFloat64(turnsTotal.WithLabelValues(ns, "codex", "codex", "ok"))).To(Equal(1.0), "the turn before the deletion")
	})

	It("is HarnessUnavailable (retryable) while the harness is not Ready, and runs once it is", func() {
		ns := newNamespace()
		h := registerCodex(ns, deadURL, false)
		newSession(ns, "s", testModel)
		before := len(stub.Requests())
		evs, err := turn(ns, "s", textReq("run-u1", "eps-1"))
		var te *wire.Error
		Expect(errors.As(err, &te)).To(BeTrue(), "%v", err)
		Expect(te.Code).To(Equal(wire.CodeHarnessUnavailable))
		Expect(te.Retryable).To(BeTrue())
		Expect(te.HTTPStatus()).To(Equal(503))
		Expect(errorOf(evs).Retryable).To(BeTrue())
		Expect(len(stub.Requests())).To(Equal(before))
		Expect(getSession(ns, "s").Status.ActiveTurn).To(BeNil())

		// Nothing ran, so the same runId may be retried.
		updateHarness(h, true, func(h *v1alpha1.AgentHarness) { h.Spec.External.URL = codexSrv.URL })
		evs, err = turn(ns, "s", textReq("run-u1", "eps-1"))
		Expect(err).NotTo(HaveOccurred())
		Expect(resultOf(evs).Terminal.Kind).To(Equal(wire.TerminalOK))
	})
})

var _ = Describe("Start-up recovery", func() {
	It("marks journal runs found running failed and clears stale activeTurns", func() {
		ns := newNamespace()
		stale := newSession(ns, "stale", testModel)
		// A previous dispatcher left a run running and its activeTurn behind.
		dir := suiteT.TempDir()
		j1, err := journal.Open(dir, journal.Options{})
		Expect(err).NotTo(HaveOccurred())
		_, outcome, err := j1.Begin(keyOf(ns, "stale"), "run-r1", [32]byte{1})
		Expect(err).NotTo(HaveOccurred())
		Expect(outcome).To(Equal(journal.BeginNew))
		old := New(k8sClient, k8sClient, j1, Options{ExternalDial: testutil.LoopbackExternalDial})
		now := metav1.Now()
		Expect(old.apply(ctx, stale, &dispatcherStatus{
			ActiveTurn: &v1alpha1.ActiveTurn{RunID: "run-r1", StartedAt: now, Deadline: metav1.NewTime(now.Add(time.Hour))},
		})).To(Succeed())
		Expect(getSession(ns, "stale").Status.ActiveTurn).NotTo(BeNil())
		Expect(j1.Close()).To(Succeed())

		j2, err := journal.Open(dir, journal.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(j2.Close)
		restarted := New(k8sClient, k8sClient, j2, Options{ExternalDial: testutil.LoopbackExternalDial})
		Expect(restarted.Recover(ctx)).To(Succeed())
		s := getSession(ns, "stale")
		Expect(s.Status.ActiveTurn).To(BeNil())
		Expect(s.Status.LastTurn).NotTo(BeNil())
		Expect(s.Status.LastTurn.RunID).To(Equal("run-r1"))
		Expect(s.Status.LastTurn.Outcome).To(Equal(v1alpha1.TurnFailed))
		run, err := j2.Lookup(keyOf(ns, "stale"), "run-r1")
		Expect(err).NotTo(HaveOccurred())
		Expect(run.Info().State).To(Equal(journal.StateFailed))
		Expect(j2.Running()).To(BeEmpty())
	})
})

var _ = Describe("A server that goes away mid-turn", func() {
	It("gives error with replaySafe false, replays nothing, and the next turn resumes after the server restarts", func() {
		srv := startServer("127.0.0.3", "", 0)
		ns := newNamespace()
		h := registerCodex(ns, srv.URL, true)
		newSession(ns, "doomed", testModel)
		_, err := turn(ns, "doomed", textReq("run-k0", "kappa-0 warm up"))
		Expect(err).NotTo(HaveOccurred())
		thread := getSession(ns, "doomed").Status.NativeBinding.ThreadID

		gate := stubmodel.NewGate()
		DeferCleanup(gate.Release)
		stub.When("kappa-1", stubmodel.Stall(gate, stubmodel.Text("never delivered")))
		c := &collector{}
		done := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			done <- eng.Turn(ctx, ns, "doomed", textReq("run-k1", "kappa-1 long job"), c.sink)
		}()
		_, err = stub.WaitMarker(ctx, "kappa-1")
		Expect(err).NotTo(HaveOccurred())
		srv.Kill()
		var turnErr error
		Eventually(done, 20*time.Second).Should(Receive(&turnErr))
		var te *wire.Error
		Expect(errors.As(turnErr, &te)).To(BeTrue(), "%v", turnErr)
		Expect(te.ReplaySafe).NotTo(BeNil())
		Expect(*te.ReplaySafe).To(BeFalse())
		ev := errorOf(c.events())
		Expect(ev.ReplaySafe).NotTo(BeNil())
		Expect(*ev.ReplaySafe).To(BeFalse())
		Expect(types(c.events())).NotTo(ContainElement(wire.EventResult))
		s := getSession(ns, "doomed")
		Expect(s.Status.LastTurn.Outcome).To(Equal(v1alpha1.TurnFailed))
		Expect(s.Status.ActiveTurn).To(BeNil())
		Expect(s.Status.NativeBinding.ThreadID).To(Equal(thread))
		Expect(stub.RequestsContaining("kappa-1")).To(HaveLen(1), "nothing replayed")

		// The same runId replays the recorded failure; nothing runs again.
		evs, err := turn(ns, "doomed", textReq("run-k1", "kappa-1 long job"))
		Expect(err).To(HaveOccurred())
		Expect(errorOf(evs).Code).To(Equal(ev.Code))
		Expect(stub.RequestsContaining("kappa-1")).To(HaveLen(1))

		// The server comes back on the same home and address: the next turn
		// resumes the thread.
		gate.Release()
		startServer("127.0.0.3", srv.Dir, portOf(srv.URL))
		// The controller may have probed the server while it was down; the
		// turn runs once it finds it Ready again.
		waitHarness(h, v1alpha1.HarnessConditionReady, metav1.ConditionTrue)
		evs, err = turn(ns, "doomed", textReq("run-k2", "kappa-2 are you back?"))
		Expect(err).NotTo(HaveOccurred())
		Expect(resultOf(evs).ThreadID).To(Equal(thread))
	})
})

var _ = Describe("A server that restarts under a running turn", func() {
	It("fails the turn with replaySafe false once the engine reattached to the restarted server, instead of a result that says it was interrupted", func() {
		srv := startServer("127.0.0.8", "", 0)
		ns := newNamespace()
		registerCodex(ns, srv.URL, true)
		// Long enough to reattach across the server's restart.
		patient := New(k8sClient, k8sClient, jrnl, Options{Logger: logs.logger(), Owner: "patient-dispatcher",
			ReattachTimeout: time.Minute, ExternalDial: testutil.LoopbackExternalDial})
		DeferCleanup(patient.Close)
		newSession(ns, "phoenix", testModel)
		gate := stubmodel.NewGate()
		DeferCleanup(gate.Release)
		stub.When("sigma-1", stubmodel.Stall(gate, stubmodel.Text("never delivered")))
		c := &collector{}
		done := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			done <- patient.Turn(ctx, ns, "phoenix", textReq("run-s1", "sigma-1 long job"), c.sink)
		}()
		_, err := stub.WaitMarker(ctx, "sigma-1")
		Expect(err).NotTo(HaveOccurred())
		srv.Kill()
		startServer("127.0.0.8", srv.Dir, portOf(srv.URL))

		var turnErr error
		Eventually(done, 90*time.Second).Should(Receive(&turnErr))
		var te *wire.Error
		Expect(errors.As(turnErr, &te)).To(BeTrue(), "%v (events %v)", turnErr, types(c.events()))
		Expect(te.Code).To(Equal(wire.CodeHarnessUnavailable))
		Expect(te.Message).To(ContainSubstring("restarted while the turn was running"))
		Expect(te.ReplaySafe).NotTo(BeNil())
		Expect(*te.ReplaySafe).To(BeFalse())
		Expect(types(c.events())).NotTo(ContainElement(wire.EventResult))
		Expect(stub.RequestsContaining("sigma-1")).To(HaveLen(1), "nothing replayed")
		Expect(getSession(ns, "phoenix").Status.LastTurn.Outcome).To(Equal(v1alpha1.TurnFailed))
	})
})

var _ = Describe("A connection lost before the turn started", func() {
	It("starts the turn on a new connection, since nothing had run, and the turn completes once", func() {
		srv := startServer("127.0.0.16", "", 0)
		proxy, err := testutil.StartCutProxy(strings.TrimPrefix(srv.URL, "ws://"))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(proxy.Close)
		ns := newNamespace()
		registerCodex(ns, "ws://"+proxy.Addr(), true)
		newSession(ns, "resumed", testModel)
		_, err = turn(ns, "resumed", textReq("run-t0", "tau-0 warm up"))
		Expect(err).NotTo(HaveOccurred())

		// The server stops answering; the next turn's first request (the
		// thread's resume) is on its way when the connection is cut.
		Expect(syscall.Kill(srv.Pid(), syscall.SIGSTOP)).To(Succeed())
		DeferCleanup(func() { _ = syscall.Kill(srv.Pid(), syscall.SIGCONT) })
		sent := proxy.FromClients()
		c := &collector{}
		done := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			done <- eng.Turn(ctx, ns, "resumed", textReq("run-t1", "tau-1 hello again"), c.sink)
		}()
		Eventually(proxy.FromClients).Should(BeNumerically(">", sent), "the turn's first request left")
		Expect(proxy.Cut()).To(BeNumerically(">=", 1))
		Expect(syscall.Kill(srv.Pid(), syscall.SIGCONT)).To(Succeed())

		var turnErr error
		Eventually(done, 60*time.Second).Should(Receive(&turnErr))
		Expect(turnErr).NotTo(HaveOccurred(), "events %v", types(c.events()))
		Expect(resultOf(c.events()).Terminal.Kind).To(Equal(wire.TerminalOK))
		Expect(stub.RequestsContaining("tau-1")).To(HaveLen(1))
	})
})

var _ = Describe("A server that no longer has the session's thread", func() {
	It("fails closed with NativeThreadLost (not retryable, nothing sent to the model) until the session is reset", func() {
		srv := startServer("127.0.0.5", "", 0)
		ns := newNamespace()
		h := registerCodex(ns, srv.URL, true)
		newSession(ns, "moved", testModel)
		_, err := turn(ns, "moved", textReq("run-o0", "omicron-0 warm up"))
		Expect(err).NotTo(HaveOccurred())
		thread := getSession(ns, "moved").Status.NativeBinding.ThreadID

		// The same address now serves a fresh native home (a replaced volume).
		Expect(srv.Stop(10 * time.Second)).To(Succeed())
		startServer("127.0.0.5", "", portOf(srv.URL))
		waitHarness(h, v1alpha1.HarnessConditionReady, metav1.ConditionTrue)

		Expect(getSession(ns, "moved").Status.NativeBinding.ThreadState).To(Equal(v1alpha1.ThreadEstablished))
		evs, err := turn(ns, "moved", textReq("run-o1", "omicron-1 hello?"))
		var te *wire.Error
		Expect(errors.As(err, &te)).To(BeTrue(), "%v", err)
		Expect(te.Code).To(Equal(wire.CodeNativeThreadLost))
		Expect(te.Retryable).To(BeFalse())
		Expect(te.Message).To(ContainSubstring("does not have this session's native thread " + thread))
		Expect(te.Message).To(ContainSubstring("reset the session"))
		Expect(errorOf(evs).Code).To(Equal(wire.CodeNativeThreadLost))
		Expect(stub.RequestsContaining("omicron-1")).To(BeEmpty())

		// A reset starts a new thread there.
		s := getSession(ns, "moved")
		s.Spec.ResetGeneration++
		Expect(k8sClient.Update(ctx, s)).To(Succeed())
		evs, err = turn(ns, "moved", textReq("run-o2", "omicron-2 hello again"))
		Expect(err).NotTo(HaveOccurred())
		Expect(resultOf(evs).ThreadID).NotTo(Equal(thread))
	})
})

var _ = Describe("A session whose first turn died with its server", func() {
	It("starts a new thread without a reset when the server comes back without the thread: there was no conversation to lose", func() {
		srv := startServer("127.0.0.7", "", 0)
		ns := newNamespace()
		h := registerCodex(ns, srv.URL, true)
		newSession(ns, "newborn", testModel)
		gate := stubmodel.NewGate()
		DeferCleanup(gate.Release)
		stub.When("rho-1", stubmodel.Stall(gate, stubmodel.Text("never delivered")))
		done := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			done <- eng.Turn(ctx, ns, "newborn", textReq("run-p1", "rho-1 first words"), (&collector{}).sink)
		}()
		_, err := stub.WaitMarker(ctx, "rho-1")
		Expect(err).NotTo(HaveOccurred())
		srv.Kill()
		var turnErr error
		Eventually(done, 20*time.Second).Should(Receive(&turnErr))
		Expect(turnErr).To(HaveOccurred())
		b := getSession(ns, "newborn").Status.NativeBinding
		Expect(b).NotTo(BeNil())
		Expect(b.ThreadState).To(Equal(v1alpha1.ThreadProvisional), "no turn on the thread ended with a result")
		lost := b.ThreadID

		// The server comes back with an empty native home.
		gate.Release()
		startServer("127.0.0.7", "", portOf(srv.URL))
		waitHarness(h, v1alpha1.HarnessConditionReady, metav1.ConditionTrue)
		evs, err := turn(ns, "newborn", textReq("run-p2", "rho-2 hello again"))
		Expect(err).NotTo(HaveOccurred())
		Expect(resultOf(evs).ThreadID).NotTo(Equal(lost))
		b = getSession(ns, "newborn").Status.NativeBinding
		Expect(b.ThreadID).To(Equal(resultOf(evs).ThreadID))
		Expect(b.ThreadState).To(Equal(v1alpha1.ThreadEstablished))
		Expect(stub.RequestsContaining("rho-1")).To(HaveLen(1), "the first turn was not replayed")
	})
})

func portOf(url string) int {
	GinkgoHelper()
	i := strings.LastIndex(url, ":")
	var p int
	for _, ch := range url[i+1:] {
		p = p*10 + int(ch-'0')
	}
	return p
}

var _ = Describe("A WebSocket cut mid-turn", func() {
	It("loses nothing: the engine reattaches and the client sees the whole answer, with one model request", func() {
		ns := newNamespace()
		registerCodex(ns, codexSrv.URL, true)
		newSession(ns, "cut", testModel)
		gate := stubmodel.NewGate()
		DeferCleanup(gate.Release)
		stub.When("lambda-1", stubmodel.Stall(gate, stubmodel.Text("all of the answer arrives", "all of ", "the answer ", "arrives")))
		c := &collector{}
		done := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			done <- eng.Turn(ctx, ns, "cut", textReq("run-l1", "lambda-1 go"), c.sink)
		}()
		_, err := stub.WaitMarker(ctx, "lambda-1")
		Expect(err).NotTo(HaveOccurred())
		cutConnections(&eng.pool) // every pooled WebSocket is cut; the server keeps running
		gate.Release()
		var turnErr error
		Eventually(done, 20*time.Second).Should(Receive(&turnErr))
		Expect(turnErr).NotTo(HaveOccurred())
		evs := c.events()
		Expect(resultOf(evs).AssistantTexts).To(Equal([]string{"all of the answer arrives"}))
		var partial strings.Builder
		for _, p := range ofType(evs, wire.EventPartial) {
			var pp wire.Partial
			Expect(json.Unmarshal(p, &pp)).To(Succeed())
			partial.WriteString(pp.Delta)
		}
		Expect(partial.String()).To(Equal("all of the answer arrives"))
		Expect(stub.RequestsContaining("lambda-1")).To(HaveLen(1))
		Expect(logs.matching("reattaching", `"runId"="run-l1"`)).NotTo(BeEmpty(), "the turn was reattached, not re-run")
		Expect(getSession(ns, "cut").Status.LastTurn.Outcome).To(Equal(v1alpha1.TurnSucceeded))
	})
})

var _ = Describe("Tool surface", func() {
	It("refuses a call to a tool the turn did not offer: no tool_call reaches the client", func() {
		ns := newNamespace()
		registerCodex(ns, codexSrv.URL, true)
		newSession(ns, "s", testModel)
		stub.When("mu-1", stubmodel.CallJSON("secret_tool", map[string]any{"x": 1}))
		evs, err := turn(ns, "s", textReq("run-m1", "mu-1 try it"))
		Expect(err).NotTo(HaveOccurred())
		Expect(types(evs)).NotTo(ContainElement(wire.EventToolCall))
		Expect(resultOf(evs).Terminal.Kind).To(Equal(wire.TerminalOK))
		Expect(stub.FunctionCallOutputs()).To(ContainElement(HaveField("Output", ContainSubstring("unsupported call"))))
	})

	It("offers the model only the host tools on a restricted turn of an Exact harness, and fails closed on a harness that is not Exact", func() {
		ns := newNamespace()
		h := registerCodex(ns, codexSrv.URL, true)
		newSession(ns, "s", testModel)
		restricted := func(runID, prompt string) *wire.TurnRequest {
			req := textReq(runID, prompt)
			req.PluginHarnessToolPolicyRestricted = true
			req.ToolsAllow = wire.ToolList{"lookup"}
			req.Tools = []wire.HostTool{{Name: "lookup", Description: "Look something up", Parameters: json.RawMessage(`{"type":"object"}`)}}
			return req
		}
		before := len(stub.Requests())
		evs, err := turn(ns, "s", restricted("run-n0", "nu-0 restricted"))
		var te *wire.Error
		Expect(errors.As(err, &te)).To(BeTrue(), "%v", err)
		Expect(te.Code).To(Equal(wire.CodeToolPolicyUnenforceable))
		Expect(errorOf(evs).Code).To(Equal(wire.CodeToolPolicyUnenforceable))
		Expect(len(stub.Requests())).To(Equal(before))

		updateHarness(h, true, func(h *v1alpha1.AgentHarness) {
			h.Spec.ConversationToolPolicySupport = v1alpha1.ToolPolicySupportExact
		})
		evs, err = turn(ns, "s", restricted("run-n1", "nu-1 restricted"))
		Expect(err).NotTo(HaveOccurred())
		Expect(resultOf(evs).Terminal.Kind).To(Equal(wire.TerminalOK))
		req, err := stub.WaitMarker(ctx, "nu-1")
		Expect(err).NotTo(HaveOccurred())
		Expect(req.ToolNames()).To(ConsistOf("lookup"))
		Expect(req.AdditionalTools()).To(BeEmpty())
	})
})

var _ = Describe("A namespace whose journal holds as many runs as retention may remember", func() {
	It("refuses a new runId before anything runs (RetentionLimitReached) and still answers the runIds it remembers", func() {
		ns := newNamespace()
		registerCodex(ns, codexSrv.URL, true)
		newSession(ns, "bounded", testModel)
		one, err := journal.Open(suiteT.TempDir(), journal.Options{MaxNamespaceRuns: 1})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(one.Close)
		bounded := New(k8sClient, k8sClient, one, Options{ExternalDial: testutil.LoopbackExternalDial})
		DeferCleanup(bounded.Close)

		stub.When("rl-1", stubmodel.Text("remembered"))
		Expect(bounded.Turn(ctx, ns, "bounded", textReq("run-rl1", "rl-1 first"), nil)).To(Succeed())
		before := len(stub.Requests())
		c := &collector{}
		err = bounded.Turn(ctx, ns, "bounded", textReq("run-rl2", "rl-2 one too many"), c.sink)
		var limit *journal.RetentionLimitError
		Expect(errors.As(err, &limit)).To(BeTrue(), "%v", err)
		Expect(limit.Namespace).To(Equal(ns))
		Expect(c.events()).To(BeEmpty(), "a refused turn streamed events")
		Expect(stub.Requests()).To(HaveLen(before), "the refused turn reached the model")

		c = &collector{}
		Expect(bounded.Turn(ctx, ns, "bounded", textReq("run-rl1", "rl-1 first"), c.sink)).To(Succeed())
		Expect(resultOf(c.events()).AssistantTexts).To(Equal([]string{"remembered"}), "the remembered runId is replayed")
		Expect(stub.Requests()).To(HaveLen(before))
	})
})
