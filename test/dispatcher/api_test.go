package dispatcher_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/sse"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/httpapi"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// The specs share the processes and run in order: the later ones refer to
// the text turn's session and run (run-a1) and its turn token.
var _ = Describe("the dispatcher's HTTP API, served by the dispatcher process", Ordered, ContinueOnFailure, func() {
	// textToken is the turn token of run-a1: a real token, of another turn.
	var textToken string

	It("streams a text turn whose selected event matches …/decide; GET turn, transcript and session status follow", func() {
		newSession(ns, "text", testModel)
		stub.When("alpha-1", stubmodel.Text("The answer is forty-two.", "The answer ", "is forty-two."))
		// The decision before the turn: turn-only fields are ignored and
		// nothing runs.
		before := len(stub.Requests())
		var decided map[string]any
		decodeJSON(post(sessionURL(ns, "text")+"/decide", gateway, `{"runId":"run-a1","prompt":"ignored","tools":[{"name":"x"}],"timeoutMs":5}`, nil), http.StatusOK, &decided)
		Expect(stub.Requests()).To(HaveLen(before), "decide reached the model")
		Expect(decided).To(HaveKeyWithValue("runtime", "codex"))
		expectError(get(sessionURL(ns, "text")+"/turns/run-a1", gateway), http.StatusNotFound, wire.CodeRunNotFound)

		rep := post(sessionURL(ns, "text")+"/turns", gateway, `{"runId":"run-a1","prompt":"alpha-1: what is the answer?"}`, nil)
		evs := readSSE(rep)
		Expect(rep.Header.Get("Content-Type")).To(Equal("text/event-stream"))
		Expect(rep.Header.Get(wire.RunIDHeader)).To(Equal("run-a1"))
		checkIDs(evs, 0)
		Expect(evs[0].Type).To(Equal(wire.EventSelected), "events %v", typesOf(evs))
		Expect(evs[len(evs)-1].Type).To(Equal(wire.EventResult), "events %v", typesOf(evs))
		Expect(partials(evs)).To(Equal("The answer is forty-two."), "events %v", typesOf(evs))
		var res wire.ResultEvent
		Expect(json.Unmarshal(evs[len(evs)-1].Data, &res)).To(Succeed())
		Expect(res.AssistantTexts).To(Equal([]string{"The answer is forty-two."}))
		Expect(res.RunID).To(Equal("run-a1"))
		Expect(res.AgentHarnessID).To(Equal("codex"))

		// selected is the decision plus runId and the turn token.
		var sel map[string]any
		Expect(json.Unmarshal(evs[0].Data, &sel)).To(Succeed())
		Expect(sel).To(HaveKeyWithValue("runId", "run-a1"))
		textToken, _ = sel["turnToken"].(string)
		Expect(len(textToken)).To(BeNumerically(">=", 40), "turnToken %v", sel["turnToken"])
		delete(sel, "runId")
		delete(sel, "turnToken")
		Expect(sel).To(Equal(decided), "…/decide differs from the turn's selected event")

		var st httpapi.TurnState
		decodeJSON(get(sessionURL(ns, "text")+"/turns/run-a1", gateway), http.StatusOK, &st)
		Expect(st.State).To(Equal("finished"))
		Expect(st.LastEventID).To(Equal(evs[len(evs)-1].ID))
		Expect(st.Result).NotTo(BeEmpty())
		Expect(st.FinishedAt).NotTo(BeNil())

		tr := get(sessionURL(ns, "text")+"/transcript", gateway)
		Expect(tr.Status).To(Equal(http.StatusOK), "%s", tr.Body)
		Expect(tr.Header.Get("Content-Type")).To(Equal("application/x-ndjson"))
		Expect(string(tr.Body)).To(ContainSubstring("forty-two"))
		for _, line := range strings.Split(strings.TrimSpace(string(tr.Body)), "\n") {
			Expect(json.Valid([]byte(line))).To(BeTrue(), "transcript line is not JSON: %q", line)
		}

		// The dispatcher wrote the session's status and claimed it with
		// its journal finalizer.
		Eventually(func(g Gomega) {
			s := &v1alpha1.AgentSession{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "text"}, s)).To(Succeed())
			g.Expect(s.Finalizers).To(ContainElement(v1alpha1.JournalFinalizer))
			g.Expect(s.Status.LastTurn).NotTo(BeNil())
			g.Expect(s.Status.LastTurn.RunID).To(Equal("run-a1"))
			g.Expect(s.Status.LastTurn.Outcome).To(Equal(v1alpha1.TurnSucceeded))
		}).WithTimeout(20 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	})

	It("answers a host tool call through tool-results and refuses a wrong turn token", func() {
		Expect(textToken).NotTo(BeEmpty(), "the text turn's spec ran first")
		newSession(ns, "tools", testModel)
		tools := `"tools":[{"name":"lookup_weather","description":"Weather by city",` +
			`"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]`
		// A finished turn of the same session, whose token is not run-t1's.
		// It offers the tool too: Codex fixes a thread's host tools at its
		// first turn (internal/dispatcher/adapter/codex/doc.go).
		stub.When("tool-0", stubmodel.Text("warm-up done"))
		warm := readSSE(post(sessionURL(ns, "tools")+"/turns", gateway, `{"runId":"run-t0","prompt":"tool-0 warm up",`+tools+`}`, nil))
		var warmSel wire.SelectedEvent
		Expect(json.Unmarshal(warm[0].Data, &warmSel)).To(Succeed())
		Expect(warmSel.TurnToken).NotTo(BeEmpty())
		stub.When("tool-1", stubmodel.CallJSON("lookup_weather", map[string]any{"city": "Oslo"}))
		body := `{"runId":"run-t1","prompt":"tool-1: weather in Oslo?",` + tools + `}`
		resp := open(sessionURL(ns, "tools")+"/turns", gateway, body, nil)
		defer func() { _ = resp.Body.Close() }()
		var token string
		answered := false
		evs := scanSSE(resp.Body, func(e sseEvent) {
			switch e.Type {
			case wire.EventSelected:
				var sel wire.SelectedEvent
				Expect(json.Unmarshal(e.Data, &sel)).To(Succeed())
				token = sel.TurnToken
			case wire.EventToolCall:
				var call wire.ToolCall
				Expect(json.Unmarshal(e.Data, &call)).To(Succeed())
				url := sessionURL(ns, "tools") + "/turns/run-t1/tool-results"
				answer := fmt.Sprintf(`{"callId":%q,"content":[{"type":"text","text":"sunny, 21C"}]}`, call.CallID)
				// None, garbage, the token of another run of this session
				// and the token of another session's run.
				for _, bad := range []string{"", "not-the-token", warmSel.TurnToken, textToken} {
					expectError(post(url, gateway, answer, map[string]string{wire.TurnTokenHeader: bad}), http.StatusForbidden, wire.CodeTurnTokenInvalid)
				}
				var ok map[string]any
				decodeJSON(post(url, gateway, answer, map[string]string{wire.TurnTokenHeader: token}), http.StatusAccepted, &ok)
				// Answered already: nothing is pending any more.
				expectError(post(url, gateway, answer, map[string]string{wire.TurnTokenHeader: token}), http.StatusConflict, wire.CodeNoPendingToolCall)
				answered = true
			}
		})
		checkIDs(evs, 0)
		Expect(answered).To(BeTrue(), "no tool_call in %v", typesOf(evs))
		var res wire.ResultEvent
		Expect(json.Unmarshal(evs[len(evs)-1].Data, &res)).To(Succeed())
		Expect(res.AssistantTexts).To(Equal([]string{stubmodel.ToolOutputPrefix + "sunny, 21C"}), "events %v", typesOf(evs))
		var term wire.ToolTerminal
		for _, e := range evs {
			if e.Type == wire.EventToolTerminal {
				Expect(json.Unmarshal(e.Data, &term)).To(Succeed())
			}
		}
		Expect(term.Outcome).To(Equal(wire.OutcomeSuccess), "tool terminal %+v", term)
	})

	It("resumes a turn after a reconnect with Last-Event-ID; the model sees one request", func() {
		newSession(ns, "resume", testModel)
		gate := stubmodel.NewGate()
		defer gate.Release()
		stub.When("lambda-1", stubmodel.Stall(gate, stubmodel.Text("all of the answer arrives", "all of ", "the answer ", "arrives")))
		body := `{"runId":"run-l1","prompt":"lambda-1 go"}`
		url := sessionURL(ns, "resume") + "/turns"

		// Read the first event, then drop the connection mid-turn.
		resp := open(url, gateway, body, nil)
		first, ok := nextEvent(sse.NewScanner(resp.Body))
		_ = resp.Body.Close()
		Expect(ok).To(BeTrue())
		Expect(first.Type).To(Equal(wire.EventSelected))
		Expect(first.ID).To(Equal(int64(1)))
		_, err := stub.WaitMarker(ctx, "lambda-1")
		Expect(err).NotTo(HaveOccurred())
		gate.Release()

		evs := readSSE(post(url, gateway, body, map[string]string{"Last-Event-ID": strconv.FormatInt(first.ID, 10)}))
		checkIDs(evs, first.ID)
		Expect(evs[len(evs)-1].Type).To(Equal(wire.EventResult), "events after reconnect %v", typesOf(evs))
		Expect(typesOf(evs)).NotTo(ContainElement(wire.EventSelected), "selected replayed after Last-Event-ID %d", first.ID)
		Expect(partials(evs)).To(Equal("all of the answer arrives"))
		Expect(stub.RequestsContaining("lambda-1")).To(HaveLen(1), "the model saw the turn more than once")

		// Resuming a finished run from the start replays it all; a
		// Last-Event-ID of a run the journal does not know runs nothing.
		all := readSSE(post(url, gateway, body, map[string]string{"Last-Event-ID": "0"}))
		checkIDs(all, 0)
		Expect(all[len(all)-1].ID).To(Equal(evs[len(evs)-1].ID))
		expectError(post(url, gateway, `{"runId":"run-l-unknown","prompt":"lambda-1 go"}`, map[string]string{"Last-Event-ID": "3"}),
			http.StatusNotFound, wire.CodeRunNotFound)
		Expect(stub.RequestsContaining("lambda-1")).To(HaveLen(1))
	})

	It("relays an approval across a dropped stream: the reattached stream delivers the pending request again, it is answered once, a second answer is 409, and the command runs once", func() {
		newSession(ns, "approve", testModel)
		marker := filepath.Join(codex.Workdir, "approved-"+ns+".txt")
		stub.When("approve-1", stubmodel.CallJSON("exec_command", map[string]string{"cmd": "echo x >> " + marker}))
		body := `{"runId":"run-a1","prompt":"approve-1: write the marker","approvalMode":"untrusted"}`
		url := sessionURL(ns, "approve") + "/turns"
		answerURL := sessionURL(ns, "approve") + "/turns/run-a1/approvals"

		// Read up to the approval request, then drop the connection
		// without answering: the command waits.
		resp := open(url, gateway, body, nil)
		sc := sse.NewScanner(resp.Body)
		var token string
		var asked wire.ApprovalRequest
		var before int64
		for {
			e, ok := nextEvent(sc)
			Expect(ok).To(BeTrue(), "the stream ended before an approval_request")
			if e.Type == wire.EventSelected {
				var sel wire.SelectedEvent
				Expect(json.Unmarshal(e.Data, &sel)).To(Succeed())
				token = sel.TurnToken
			}
			if e.Type == wire.EventApprovalRequest {
				Expect(json.Unmarshal(e.Data, &asked)).To(Succeed())
				break
			}
			before = e.ID
		}
		_ = resp.Body.Close()
		Expect(asked.Kind).To(Equal(wire.ApprovalCommand))
		Expect(asked.Command).To(ContainSubstring("echo x >> " + marker))
		Expect(marker).NotTo(BeAnExistingFile(), "the command ran before its approval")

		// Reattach from before the request: it comes again, still pending.
		answered := 0
		resp = open(url, gateway, body, map[string]string{"Last-Event-ID": strconv.FormatInt(before, 10)})
		defer func() { _ = resp.Body.Close() }()
		evs := scanSSE(resp.Body, func(e sseEvent) {
			if e.Type != wire.EventApprovalRequest {
				return
			}
			var again wire.ApprovalRequest
			Expect(json.Unmarshal(e.Data, &again)).To(Succeed())
			Expect(again.RequestID).To(Equal(asked.RequestID))
			approve := fmt.Sprintf(`{"requestId":%q,"decision":"approve_once"}`, again.RequestID)
			expectError(post(answerURL, gateway, approve, map[string]string{wire.TurnTokenHeader: "not-the-token"}), http.StatusForbidden, wire.CodeTurnTokenInvalid)
			var ok map[string]any
			decodeJSON(post(answerURL, gateway, approve, map[string]string{wire.TurnTokenHeader: token}), http.StatusAccepted, &ok)
			deny := fmt.Sprintf(`{"requestId":%q,"decision":"deny"}`, again.RequestID)
			expectError(post(answerURL, gateway, deny, map[string]string{wire.TurnTokenHeader: token}), http.StatusConflict, wire.CodeRequestAlreadyResolved)
			answered++
		})
		checkIDs(evs, before)
		Expect(answered).To(Equal(1), "events %v", typesOf(evs))
		var resolutions []wire.RequestResolved
		for _, e := range evs {
			if e.Type == wire.EventRequestResolved {
				var r wire.RequestResolved
				Expect(json.Unmarshal(e.Data, &r)).To(Succeed())
				resolutions = append(resolutions, r)
			}
		}
		Expect(resolutions).To(HaveLen(1))
		Expect(resolutions[0].Resolution).To(Equal(wire.ResolvedApprovedOnce))
		Expect(evs[len(evs)-1].Type).To(Equal(wire.EventResult), "events %v", typesOf(evs))
		Expect(os.ReadFile(marker)).To(Equal([]byte("x\n")), "the approved command ran exactly once; events %s", eventData(evs))
		Expect(stub.RequestsContaining("approve-1")).NotTo(BeEmpty())
	})

	It("interrupts a running turn only with its turn token and the grant", func() {
		newSession(ns, "stop", testModel)
		gate := stubmodel.NewGate()
		defer gate.Release()
		stub.When("kappa-1", stubmodel.Stall(gate, stubmodel.Text("never delivered")))
		resp := open(sessionURL(ns, "stop")+"/turns", gateway, `{"runId":"run-k1","prompt":"kappa-1 go"}`, nil)
		defer func() { _ = resp.Body.Close() }()
		sc := sse.NewScanner(resp.Body)
		first, ok := nextEvent(sc)
		Expect(ok).To(BeTrue())
		var sel wire.SelectedEvent
		Expect(json.Unmarshal(first.Data, &sel)).To(Succeed())
		_, err := stub.WaitMarker(ctx, "kappa-1")
		Expect(err).NotTo(HaveOccurred())

		url := sessionURL(ns, "stop") + "/turns/run-k1/interrupt"
		expectError(post(url, gateway, "", map[string]string{wire.TurnTokenHeader: "wrong"}), http.StatusForbidden, wire.CodeTurnTokenInvalid)
		expectError(post(url, gateway, "", map[string]string{wire.TurnTokenHeader: textToken}), http.StatusForbidden, wire.CodeTurnTokenInvalid)
		expectError(post(url, nobody, "", map[string]string{wire.TurnTokenHeader: sel.TurnToken}), http.StatusForbidden, wire.CodeForbidden)
		var out map[string]any
		decodeJSON(post(url, gateway, "", map[string]string{wire.TurnTokenHeader: sel.TurnToken}), http.StatusAccepted, &out)
		var rest []sseEvent
		for {
			e, ok := nextEvent(sc)
			if !ok {
				break
			}
			rest = append(rest, e)
		}
		Expect(rest).NotTo(BeEmpty())
		Expect(rest[len(rest)-1].Type).To(Equal(wire.EventResult), "after interrupt %v", typesOf(rest))
		var res wire.ResultEvent
		Expect(json.Unmarshal(rest[len(rest)-1].Data, &res)).To(Succeed())
		Expect(res.Terminal.Kind).To(Equal(wire.TerminalAborted), "terminal %+v", res.Terminal)
		// Ended: not running any more.
		expectError(post(url, gateway, "{}", map[string]string{wire.TurnTokenHeader: sel.TurnToken}), http.StatusConflict, wire.CodeTurnNotRunning)
	})

	It("drops a turn queued behind another when its client leaves before it starts", func() {
		newSession(ns, "queue", testModel)
		gate := stubmodel.NewGate()
		defer gate.Release()
		stub.When("mu-1", stubmodel.Stall(gate, stubmodel.Text("first done")))
		first := open(sessionURL(ns, "queue")+"/turns", gateway, `{"runId":"run-m1","prompt":"mu-1 long"}`, nil)
		defer func() { _ = first.Body.Close() }()
		_, err := stub.WaitMarker(ctx, "mu-1")
		Expect(err).NotTo(HaveOccurred())

		// The second turn waits for the session lock; its client gives up.
		reqCtx, leave := context.WithCancel(ctx)
		req := newRequest(http.MethodPost, sessionURL(ns, "queue")+"/turns", gateway, `{"runId":"run-m2","prompt":"mu-2 queued"}`, nil)
		sent := make(chan error, 1)
		go func() {
			resp, err := hc.Do(req.WithContext(reqCtx))
			if err == nil {
				_ = resp.Body.Close()
			}
			sent <- err
		}()
		// The dispatcher counts it as waiting once it is queued at the lock.
		Eventually(func() (float64, error) { return turnsWaiting(ns) }, 30*time.Second, 20*time.Millisecond).Should(Equal(1.0))
		leave()
		Eventually(sent, 5*time.Second).Should(Receive())
		Eventually(func() (float64, error) { return turnsWaiting(ns) }, 5*time.Second, 20*time.Millisecond).Should(BeZero(), "the turn whose client left still waits")

		gate.Release()
		evs := scanSSE(first.Body, nil)
		Expect(typesOf(evs)).To(ContainElement(wire.EventResult))
		// Nothing of the dropped turn ran or was journaled; its runId is free.
		Consistently(func() int { return len(stub.RequestsContaining("mu-2")) }, 2*time.Second).Should(BeZero())
		expectError(get(sessionURL(ns, "queue")+"/turns/run-m2", gateway), http.StatusNotFound, wire.CodeRunNotFound)
		again := readSSE(post(sessionURL(ns, "queue")+"/turns", gateway, `{"runId":"run-m2","prompt":"mu-2 queued"}`, nil))
		Expect(typesOf(again)).To(ContainElement(wire.EventResult))
		Expect(stub.RequestsContaining("mu-2")).To(HaveLen(1))
	})

	It("runs exactly one of two concurrent requests with one runId and different bodies; the other gets 409 RunIdConflict, never its stream or turn token", func() {
		newSession(ns, "twins", testModel)
		gate := stubmodel.NewGate()
		defer gate.Release()
		stub.When("nu-0", stubmodel.Stall(gate, stubmodel.Text("blocker done")))
		stub.When("nu-left", stubmodel.Text("left answer"))
		stub.When("nu-right", stubmodel.Text("right answer"))
		blocker := open(sessionURL(ns, "twins")+"/turns", gateway, `{"runId":"run-n0","prompt":"nu-0 hold the session"}`, nil)
		defer func() { _ = blocker.Body.Close() }()
		_, err := stub.WaitMarker(ctx, "nu-0")
		Expect(err).NotTo(HaveOccurred())

		// Both wait for the session, neither journaled yet: whichever gets
		// it first runs, and the other must not be handed its run.
		bodies := map[string]string{
			"left":  `{"runId":"run-n1","prompt":"nu-left twin"}`,
			"right": `{"runId":"run-n1","prompt":"nu-right twin"}`,
		}
		replies := make(chan [2]any, 2)
		for side, body := range bodies {
			go func() {
				defer GinkgoRecover()
				replies <- [2]any{side, post(sessionURL(ns, "twins")+"/turns", gateway, body, nil)}
			}()
		}
		Eventually(func() (float64, error) { return turnsWaiting(ns) }, 30*time.Second, 20*time.Millisecond).Should(Equal(2.0))
		gate.Release()
		_ = scanSSE(blocker.Body, nil)

		got := map[string]reply{}
		for range 2 {
			var r [2]any
			Eventually(replies, 60*time.Second).Should(Receive(&r))
			got[r[0].(string)] = r[1].(reply)
		}
		ran, refused := "left", "right"
		if got["left"].Status != http.StatusOK {
			ran, refused = "right", "left"
		}
		evs := readSSE(got[ran])
		var res wire.ResultEvent
		Expect(json.Unmarshal(evs[len(evs)-1].Data, &res)).To(Succeed(), "events %v", typesOf(evs))
		Expect(res.AssistantTexts).To(Equal([]string{ran + " answer"}))
		e := expectError(got[refused], http.StatusConflict, wire.CodeRunIDConflict)
		Expect(e.Message).To(ContainSubstring("run-n1"))
		Expect(string(got[refused].Body)).NotTo(ContainSubstring("turnToken"))
		Expect(stub.RequestsContaining("nu-"+refused)).To(BeEmpty(), "the refused body reached the model")
		Expect(stub.RequestsContaining("nu-" + ran)).To(HaveLen(1))
	})

	It("answers 401 without a token or with one the API server does not accept", func() {
		url := sessionURL(ns, "text") + "/decide"
		e := expectError(post(url, "", `{}`, nil), http.StatusUnauthorized, wire.CodeUnauthorized)
		Expect(e.Message).To(ContainSubstring("bearer token is required"))
		e = expectError(post(url, "not-a-kubernetes-token", `{}`, nil), http.StatusUnauthorized, wire.CodeUnauthorized)
		Expect(e.Message).To(ContainSubstring("not accepted"))
		expectError(post(sessionURL(ns, "text")+"/turns", "", `{"runId":"r0","prompt":"x"}`, nil), http.StatusUnauthorized, wire.CodeUnauthorized)
		expectError(get(sessionURL(ns, "text")+"/transcript", ""), http.StatusUnauthorized, wire.CodeUnauthorized)
	})

	It("answers 403 to a ServiceAccount without the RBAC grant, and outside the granted namespace", func() {
		before := len(stub.Requests())
		for _, path := range []string{"/turns", "/decide"} {
			e := expectError(post(sessionURL(ns, "text")+path, nobody, `{"prompt":"alpha-1"}`, nil), http.StatusForbidden, wire.CodeForbidden)
			Expect(e.Message).To(ContainSubstring("system:serviceaccount:" + ns + ":nobody"))
			Expect(e.Message).To(ContainSubstring("create agentsessions/turns"))
		}
		expectError(get(sessionURL(ns, "text")+"/turns/run-a1", nobody), http.StatusForbidden, wire.CodeForbidden)
		// The grant is per namespace.
		expectError(post(sessionURL("default", "text")+"/turns", gateway, `{}`, nil), http.StatusForbidden, wire.CodeForbidden)
		Expect(stub.Requests()).To(HaveLen(before), "a refused request reached the model")
	})

	It("accepts a token bound to the dispatcher's audience and refuses another audience", func() {
		var d wire.Decision
		decodeJSON(post(sessionURL(ns, "text")+"/decide", audToken, `{}`, nil), http.StatusOK, &d)
		Expect(d.Runtime).To(Equal("codex"))
		other := serviceAccountToken(ns, "gateway", []string{"someone-else"})
		expectError(post(sessionURL(ns, "text")+"/decide", other, `{}`, nil), http.StatusUnauthorized, wire.CodeUnauthorized)
	})

	It("answers 400, 405 and 413 to malformed requests", func() {
		url := sessionURL(ns, "text") + "/turns"
		e := expectError(post(url, gateway, `{"prompt":"x","bogus":1}`, nil), http.StatusBadRequest, wire.CodeBadRequest)
		Expect(e.Message).To(ContainSubstring("bogus"))
		e = expectError(post(url, gateway, `{"tools":[{"name":""}]}`, nil), http.StatusBadRequest, wire.CodeBadRequest)
		Expect(e.Message).To(ContainSubstring("tools[0].name"))
		for body, field := range map[string]string{
			`{"prompt":"x","timeoutMs":-1}`:                  "timeoutMs",
			`{"prompt":"x","timeoutMs":86400001}`:            "timeoutMs",
			`{"prompt":"x","timeoutMs":9223372036854775808}`: "timeoutMs",
			`{"prompt":"x","toolTimeoutMs":3600001}`:         "toolTimeoutMs",
		} {
			e = expectError(post(url, gateway, body, nil), http.StatusBadRequest, wire.CodeBadRequest)
			Expect(e.Message).To(ContainSubstring(field), body)
		}
		expectError(post(url, gateway, `not json`, nil), http.StatusBadRequest, wire.CodeBadRequest)
		big := `{"prompt":"` + strings.Repeat("a", httpapi.DefaultMaxBodyBytes) + `"}`
		expectError(post(url, gateway, big, nil), http.StatusRequestEntityTooLarge, wire.CodeRequestTooLarge)
		expectError(post(url, gateway, `{}`, map[string]string{"Last-Event-ID": "x"}), http.StatusBadRequest, wire.CodeBadRequest)
		expectError(get(sessionURL(ns, "text")+"/decide", gateway), http.StatusMethodNotAllowed, wire.CodeMethodNotAllowed)
	})

	It("answers 404 for an unknown session, run and endpoint", func() {
		for _, path := range []string{"/turns", "/decide"} {
			expectError(post(sessionURL(ns, "missing")+path, gateway, `{"prompt":"x"}`, nil), http.StatusNotFound, wire.CodeSessionNotFound)
		}
		expectError(get(sessionURL(ns, "missing")+"/transcript", gateway), http.StatusNotFound, wire.CodeSessionNotFound)
		expectError(get(sessionURL(ns, "text")+"/turns/run-nope", gateway), http.StatusNotFound, wire.CodeRunNotFound)
		expectError(get(apiBase+"/v1/nothing", gateway), http.StatusNotFound, wire.CodeNotFound)
	})

	It("answers 409 RunIdConflict and EmbeddedRuntimeSelected", func() {
		before := len(stub.Requests())
		e := expectError(post(sessionURL(ns, "text")+"/turns", gateway, `{"runId":"run-a1","prompt":"something else"}`, nil),
			http.StatusConflict, wire.CodeRunIDConflict)
		Expect(e.Retryable).To(BeFalse())
		newSession(ns, "embedded", "anthropic/claude-x")
		e = expectError(post(sessionURL(ns, "embedded")+"/turns", gateway, `{"runId":"run-e1","prompt":"hello"}`, nil),
			http.StatusConflict, wire.CodeEmbeddedRuntimeSelected)
		Expect(e.Scope).To(Equal(wire.ScopeHarness))
		Expect(e.ReplaySafe).To(BeNil())
		Expect(stub.Requests()).To(HaveLen(before), "a refused turn reached the model")
	})

	It("answers 422 SessionMismatch and HarnessNotRegistered", func() {
		e := expectError(post(sessionURL(ns, "text")+"/turns", gateway, `{"agentId":"someone-else","prompt":"x"}`, nil),
			http.StatusUnprocessableEntity, wire.CodeSessionMismatch)
		Expect(e.Retryable).To(BeFalse())
		empty := newNamespace("api-noharness")
		newSession(empty, "s", testModel)
		e = expectError(post(sessionURL(empty, "s")+"/turns", gateway, `{"prompt":"x"}`, nil),
			http.StatusUnprocessableEntity, wire.CodeHarnessNotRegistered)
		Expect(e.Retryable).To(BeFalse())
	})

	It("answers 503 HarnessUnavailable with Retry-After while the harness's server is down", func() {
		down := newNamespace("api-down")
		registerCodex(down, "ws://127.0.0.1:1", false)
		newSession(down, "s", testModel)
		rep := post(sessionURL(down, "s")+"/turns", gateway, `{"runId":"run-u1","prompt":"x"}`, nil)
		e := expectError(rep, http.StatusServiceUnavailable, wire.CodeHarnessUnavailable)
		Expect(e.Retryable).To(BeTrue())
		Expect(e.Scope).To(Equal(wire.ScopeHarness))
		// Nothing was journaled: the same runId may be retried.
		expectError(get(sessionURL(down, "s")+"/turns/run-u1", gateway), http.StatusNotFound, wire.CodeRunNotFound)
	})
})

// --- HTTP ---

// reply is a whole (non-streamed or ended) answer.
type reply struct {
	Status int
	Header http.Header
	Body   []byte
}

func newRequest(method, url, token, body string, hdr map[string]string) *http.Request {
	GinkgoHelper()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return req
}

// open starts a POST whose 200 event stream the caller reads and closes.
func open(url, token, body string, hdr map[string]string) *http.Response {
	GinkgoHelper()
	resp, err := hc.Do(newRequest(http.MethodPost, url, token, body, hdr))
	Expect(err).NotTo(HaveOccurred())
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		Fail(fmt.Sprintf("POST %s: status %d: %s", url, resp.StatusCode, b))
	}
	return resp
}

func call(method, url, token, body string, hdr map[string]string) reply {
	GinkgoHelper()
	resp, err := hc.Do(newRequest(method, url, token, body, hdr))
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return reply{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

func post(url, token, body string, hdr map[string]string) reply {
	GinkgoHelper()
	return call(http.MethodPost, url, token, body, hdr)
}

func get(url, token string) reply {
	GinkgoHelper()
	return call(http.MethodGet, url, token, "", nil)
}

// decodeJSON checks the status and the JSON Content-Type and decodes the body.
func decodeJSON(rep reply, status int, v any) {
	GinkgoHelper()
	Expect(rep.Status).To(Equal(status), "body: %s", rep.Body)
	Expect(rep.Header.Get("Content-Type")).To(Equal("application/json"))
	Expect(json.Unmarshal(rep.Body, v)).To(Succeed(), "body: %s", rep.Body)
}

// expectError checks an error answer: its status, its code, a message, every
// field of the error shape, Retry-After on 503 and WWW-Authenticate on 401.
func expectError(rep reply, status int, code wire.ErrorCode) wire.Error {
	GinkgoHelper()
	var raw map[string]json.RawMessage
	decodeJSON(rep, status, &raw)
	for _, k := range []string{"code", "message", "scope", "retryable"} {
		Expect(raw).To(HaveKey(k), "error body %s", rep.Body)
	}
	var e wire.Error
	Expect(json.Unmarshal(rep.Body, &e)).To(Succeed())
	Expect(e.Code).To(Equal(code), "error body %s", rep.Body)
	Expect(e.Message).NotTo(BeEmpty())
	switch status {
	case http.StatusServiceUnavailable:
		ra, err := strconv.Atoi(rep.Header.Get("Retry-After"))
		Expect(err).NotTo(HaveOccurred(), "Retry-After %q", rep.Header.Get("Retry-After"))
		Expect(ra).To(BeNumerically(">=", 1))
	case http.StatusUnauthorized:
		Expect(rep.Header.Get("WWW-Authenticate")).To(HavePrefix("Bearer "))
	}
	return e
}

// --- server-sent events ---

type sseEvent struct {
	ID   int64
	Type string
	Data json.RawMessage
}

// nextEvent reads one event, its id as a number.
func nextEvent(sc *sse.Scanner) (sseEvent, bool) {
	if !sc.Next() {
		return sseEvent{}, false
	}
	ev := sc.Event()
	id, _ := strconv.ParseInt(ev.ID, 10, 64)
	return sseEvent{ID: id, Type: ev.Type, Data: ev.Data}, true
}

// readSSE parses an ended 200 event stream.
func readSSE(rep reply) []sseEvent {
	GinkgoHelper()
	Expect(rep.Status).To(Equal(http.StatusOK), "body: %s", rep.Body)
	return scanSSE(bytes.NewReader(rep.Body), nil)
}

// scanSSE reads an event stream to its end; onEvent (if set) sees each event
// as it arrives.
func scanSSE(r io.Reader, onEvent func(sseEvent)) []sseEvent {
	GinkgoHelper()
	sc := sse.NewScanner(r)
	var evs []sseEvent
	for {
		e, ok := nextEvent(sc)
		if !ok {
			break
		}
		Expect(json.Valid(e.Data)).To(BeTrue(), "event %d %s: data is not JSON: %q", e.ID, e.Type, e.Data)
		evs = append(evs, e)
		if onEvent != nil {
			onEvent(e)
		}
	}
	Expect(sc.Err()).NotTo(HaveOccurred())
	Expect(evs).NotTo(BeEmpty(), "empty event stream")
	return evs
}

// checkIDs checks the ids run after+1, after+2, … without a gap.
func checkIDs(evs []sseEvent, after int64) {
	GinkgoHelper()
	for i, e := range evs {
		Expect(e.ID).To(Equal(after+int64(i)+1), "event %d (%s), events %v", i, e.Type, typesOf(evs))
	}
}

// eventData renders events as "type data" lines, for failure messages.
func eventData(evs []sseEvent) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "\n%d %s %s", e.ID, e.Type, e.Data)
	}
	return b.String()
}

func typesOf(evs []sseEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

// partials joins the deltas of the partial events.
func partials(evs []sseEvent) string {
	GinkgoHelper()
	var b strings.Builder
	for _, e := range evs {
		if e.Type == wire.EventPartial {
			var p wire.Partial
			Expect(json.Unmarshal(e.Data, &p)).To(Succeed())
			b.WriteString(p.Delta)
		}
	}
	return b.String()
}

// turnsWaiting reads the dispatcher's harness_dispatcher_turns_waiting gauge
// for namespace (0 when it has no sample yet).
func turnsWaiting(namespace string) (float64, error) {
	plain := &http.Client{Transport: &http.Transport{Proxy: nil}}
	defer plain.CloseIdleConnections()
	resp, err := plain.Get(metricsURL)
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", metricsURL, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, err
	}
	family, ok := families["harness_dispatcher_turns_waiting"]
	if !ok {
		return 0, nil
	}
	for _, m := range family.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "namespace" && l.GetValue() == namespace {
				return m.GetGauge().GetValue(), nil
			}
		}
	}
	return 0, nil
}
