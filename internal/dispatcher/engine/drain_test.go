package engine

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

var _ = Describe("Shutting down with a host tool call waiting for its client", func() {
	It("ends within the grace: the turn is interrupted on its app-server and recorded as aborted, and the tool call no longer waits", func() {
		ns := newNamespace()
		srv := startServer("127.0.0.13", "", 0)
		DeferCleanup(srv.Kill)
		registerCodex(ns, srv.URL, true)
		c := serverClient(srv.URL)
		newSession(ns, "drained", testModel)
		j, err := journal.Open(suiteT.TempDir(), journal.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(j.Close)
		leaving := New(k8sClient, k8sClient, j, Options{Logger: logs.logger(), ExternalDial: testutil.LoopbackExternalDial})
		DeferCleanup(leaving.Close)

		stub.When("drain-1", stubmodel.CallJSON("lookup_weather", map[string]any{"city": "Oslo"}))
		req := textReq("run-dr1", "drain-1: weather in Oslo?")
		req.Tools = []wire.HostTool{{Name: "lookup_weather", Description: "Weather by city",
			Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}}
		run, err := leaving.Start(ctx, ns, "drained", req, journal.Requester{})
		Expect(err).NotTo(HaveOccurred())
		var call wire.ToolCall
		for ev, err := range run.Events(ctx, 0) {
			Expect(err).NotTo(HaveOccurred())
			if ev.Type == wire.EventToolCall {
				Expect(json.Unmarshal(ev.Payload, &call)).To(Succeed())
				break
			}
		}
		Expect(call.CallID).NotTo(BeEmpty(), "the run ended before its tool call")
		// activeTurn shows the turn once it has run for the engine's
		// activeTurn delay.
		var native *v1alpha1.NativeTurn
		Eventually(func() *v1alpha1.NativeTurn {
			if a := getSession(ns, "drained").Status.ActiveTurn; a != nil {
				native = a.Native
			}
			return native
		}).ShouldNot(BeNil())

		// The grace is over at once: nobody answers the tool call.
		over, cancel := context.WithCancel(ctx)
		cancel()
		Expect(leaving.Drain(over)).To(BeTrue(), "a turn still runs after the drain")
		Eventually(run.Done()).Should(BeClosed())
		c2 := &collector{}
		Expect(Follow(ctx, run, c2.sink)).To(Succeed())
		Expect(resultOf(c2.events()).Terminal.Kind).To(Equal(wire.TerminalAborted), "the turn was not recorded as interrupted")
		Expect(leaving.SubmitToolResult(SessionKey(getSession(ns, "drained")), "run-dr1", call.CallID, wire.TextAnswer("too late"))).
			To(MatchError(ErrNoPendingToolCall))
		Eventually(func() appserver.TurnStatus { return latestTurn(c, native.ThreadID) }, 20*time.Second).
			Should(Equal(appserver.TurnInterrupted), "the native turn runs on after the dispatcher shut down")
		Expect(getSession(ns, "drained").Status.ActiveTurn).To(BeNil())
	})
})
