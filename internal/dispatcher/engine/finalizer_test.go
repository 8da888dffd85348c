package engine

import (
	"path/filepath"
	"time"

	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

var _ = Describe("The dispatcher's AgentSession finalizer", func() {
	It("deletes the session's journal runs and transcript before the AgentSession goes", func() {
		ns := newNamespace()
		registerCodex(ns, codexSrv.URL, true)
		s := newSession(ns, "fin", testModel)
		session := keyOf(ns, "fin")
		stub.When("fin-1", stubmodel.Text("finalized answer"))
		_, err := turn(ns, "fin", textReq("run-f1", "fin-1 remember me"))
		Expect(err).NotTo(HaveOccurred())
		Expect(transcript(ns, "fin")).To(ContainSubstring("finalized answer"))
		_, err = jrnl.Lookup(session, "run-f1")
		Expect(err).NotTo(HaveOccurred())

		Expect(k8sClient.Delete(ctx, s)).To(Succeed())
		Eventually(gone(ns, "fin")).Should(BeTrue())
		_, err = jrnl.Lookup(session, "run-f1")
		Expect(err).To(MatchError(journal.ErrNotFound), "the run is gone from the journal")
		// Nothing of the session is left on the journal's volume.
		matches, err := filepath.Glob(filepath.Join(jrnlDir, "*", ns, string(s.UID)))
		Expect(err).NotTo(HaveOccurred())
		Expect(matches).To(BeEmpty())
		Expect(transcriptOf(session)).To(BeEmpty(), "the transcript mirror is gone")
	})

	It("interrupts a turn of a session deleted mid-turn, records it, then deletes the journal", func() {
		ns := newNamespace()
		registerCodex(ns, codexSrv.URL, true)
		s := newSession(ns, "fin-busy", testModel)
		session := keyOf(ns, "fin-busy")
		gate := stubmodel.NewGate()
		DeferCleanup(gate.Release)
		stub.When("finbusy-1", stubmodel.Stall(gate, stubmodel.Text("too late")))
		c := &collector{}
		done := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			done <- eng.Turn(ctx, ns, "fin-busy", textReq("run-fb1", "finbusy-1 long job"), c.sink)
		}()
		_, err := stub.WaitMarker(ctx, "finbusy-1")
		Expect(err).NotTo(HaveOccurred())
		// A second turn queues for the session lock behind the running one.
		queued := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			queued <- eng.Turn(ctx, ns, "fin-busy", textReq("run-fb2", "finbusy-2 queued"), nil)
		}()
		Eventually(func() float64 { return promtestutil.ToFloat64(turnsWaiting.WithLabelValues(ns)) }).Should(Equal(1.0))

		Expect(k8sClient.Delete(ctx, s)).To(Succeed())
		var turnErr error
		Eventually(done, 20*time.Second).Should(Receive(&turnErr))
		Expect(turnErr).NotTo(HaveOccurred())
		Eventually(queued, 20*time.Second).Should(Receive(MatchError(ErrSessionNotFound)), "nothing starts on a session being deleted")
		Expect(stub.RequestsContaining("finbusy-2")).To(BeEmpty())
		Expect(resultOf(c.events()).Terminal.Kind).To(Equal(wire.TerminalAborted))
		Eventually(gone(ns, "fin-busy")).Should(BeTrue())
		_, err = jrnl.Lookup(session, "run-fb1")
		Expect(err).To(MatchError(journal.ErrNotFound))
		Expect(transcriptOf(session)).To(BeEmpty())
	})
})
