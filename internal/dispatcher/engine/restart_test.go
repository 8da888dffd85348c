package engine

import (
	"errors"
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

// latestTurn is the status of a thread's latest turn, as the app-server
// reports it.
func latestTurn(c *appserver.Client, threadID string) appserver.TurnStatus {
	GinkgoHelper()
	var res struct {
		Data []appserver.TurnInfo `json:"data"`
	}
	Expect(c.Call(ctx, "thread/turns/list", map[string]any{"threadId": threadID, "limit": 1}, &res)).To(Succeed())
	Expect(res.Data).To(HaveLen(1))
	return res.Data[0].Status
}

// abandonedTurn starts a turn of ns/name on an engine of its own whose model
// stalls, and then kills that engine's store as a dispatcher that died
// would: the native turn keeps running on the app-server with nobody
// following it (the dead engine writes nothing more, and does not interrupt
// it). It returns the native turn as status.activeTurn records it.
func abandonedTurn(ns, name, runID, marker string) *v1alpha1.NativeTurn {
	GinkgoHelper()
	dead, err := journal.Open(suiteT.TempDir(), journal.Options{})
	Expect(err).NotTo(HaveOccurred())
	killed := newDeadStore(dead)
	gone := New(k8sClient, k8sClient, killed, Options{Logger: logs.logger(), ExternalDial: testutil.LoopbackExternalDial})
	gate := stubmodel.NewGate()
	DeferCleanup(func() {
		gate.Release()
		// The journal closes first, so the writes that were waiting fail,
		// as a dead process's would never land.
		_ = dead.Close()
		killed.bury()
		gone.Close()
	})
	stub.When(marker, stubmodel.Stall(gate, stubmodel.Text("nobody reads this")))
	_, err = gone.Start(ctx, ns, name, textReq(runID, marker+" a long job"), journal.Requester{})
	Expect(err).NotTo(HaveOccurred())
	_, err = stub.WaitMarker(ctx, marker)
	Expect(err).NotTo(HaveOccurred())
	var native *v1alpha1.NativeTurn
	Eventually(func() *v1alpha1.NativeTurn {
		if a := getSession(ns, name).Status.ActiveTurn; a != nil {
			native = a.Native
		}
		return native
	}).ShouldNot(BeNil())
	Expect(native.TurnID).NotTo(BeEmpty())
	killed.kill() // the store as the process left it: the run running
	return native
}

var _ = Describe("A dispatcher that restarts while a turn runs", func() {
	It("interrupts the native turn left running on its app-server, and records the turn failed", func() {
		ns := newNamespace()
		srv := startServer("127.0.0.11", "", 0)
		DeferCleanup(srv.Kill)
		registerCodex(ns, srv.URL, true)
		c := serverClient(srv.URL)
		newSession(ns, "restarted", testModel)
		native := abandonedTurn(ns, "restarted", "run-rs1", "restart-1")
		Expect(latestTurn(c, native.ThreadID)).To(Equal(appserver.TurnInProgress), "precondition: the native turn runs on")

		eng.forget(getSession(ns, "restarted").UID) // a new process remembers nothing
		Expect(eng.Recover(ctx)).To(Succeed())
		Eventually(func() appserver.TurnStatus { return latestTurn(c, native.ThreadID) }, 20*time.Second).
			Should(Equal(appserver.TurnInterrupted), "the native turn still runs after the restart")
		s := getSession(ns, "restarted")
		Expect(s.Status.ActiveTurn).To(BeNil())
		Expect(s.Status.LastTurn.RunID).To(Equal("run-rs1"))
		Expect(s.Status.LastTurn.Outcome).To(Equal(v1alpha1.TurnFailed))
	})

	It("does not start the session's next turn on a thread that still runs an abandoned turn: it interrupts that turn and refuses, retryable", func() {
		ns := newNamespace()
		srv := startServer("127.0.0.12", "", 0)
		DeferCleanup(srv.Kill)
		registerCodex(ns, srv.URL, true)
		c := serverClient(srv.URL)
		newSession(ns, "busy", testModel)
		stub.When("busy-0", stubmodel.Text("bound"))
		_, err := turn(ns, "busy", textReq("run-bz0", "busy-0 bind a thread"))
		Expect(err).NotTo(HaveOccurred())
		native := abandonedTurn(ns, "busy", "run-bz1", "busy-1")
		// The app-server lists a turn it has started a moment later: until
		// then its latest is run-bz0's, completed.
		Eventually(func() appserver.TurnStatus { return latestTurn(c, native.ThreadID) }).
			Should(Equal(appserver.TurnInProgress), "precondition: the abandoned turn runs on")

		// No recovery ran (or it could not reach the server): the next turn
		// finds the thread busy.
		before := len(stub.RequestsContaining("busy-2"))
		next := textReq("run-bz2", "busy-2 next question")
		next.TimeoutMs = 20000 // a turn that waited behind the abandoned one ends, and the spec fails
		_, err = turn(ns, "busy", next)
		var te *wire.Error
		Expect(errors.As(err, &te)).To(BeTrue(), "%v", err)
		Expect(te.Code).To(Equal(wire.CodeHarnessUnavailable))
		Expect(te.Retryable).To(BeTrue())
		Expect(te.Message).To(ContainSubstring("still ran an earlier turn"))
		Expect(stub.RequestsContaining("busy-2")).To(HaveLen(before), "the next turn reached the model while the abandoned one ran")
		Eventually(func() appserver.TurnStatus { return latestTurn(c, native.ThreadID) }, 20*time.Second).
			Should(Equal(appserver.TurnInterrupted))

		stub.When("busy-3", stubmodel.Text("after the interrupt"))
		evs, err := turn(ns, "busy", textReq("run-bz3", "busy-3 again"))
		Expect(err).NotTo(HaveOccurred())
		Expect(resultOf(evs).ThreadID).To(Equal(native.ThreadID))
	})
})
