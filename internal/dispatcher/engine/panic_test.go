package engine

import (
	"encoding/json"
	"errors"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// panickingStore is the journal, except that the first `partial` event a
// run appends panics — a defect anywhere in a turn's goroutine.
type panickingStore struct {
	*journal.Journal
	armed atomic.Bool
}

func (s *panickingStore) Claim(lease store.Lease, runID string, digest [32]byte, by store.Requester) (store.Run, store.BeginOutcome, error) {
	run, outcome, err := s.Journal.Claim(lease, runID, digest, by)
	if err != nil || outcome != store.BeginNew {
		return run, outcome, err
	}
	return panickingRun{Run: run, armed: &s.armed}, outcome, nil
}

type panickingRun struct {
	store.Run
	armed *atomic.Bool
}

func (r panickingRun) Append(typ string, payload json.RawMessage) (int64, error) {
	if typ == wire.EventPartial && r.armed.CompareAndSwap(true, false) {
		panic("a defect while relaying a partial")
	}
	return r.Run.Append(typ, payload)
}

var _ = Describe("A panic while a turn runs", func() {
	It("fails only that turn, visibly, interrupts its native turn, and the engine and session go on", func() {
		ns := newNamespace()
		srv := startServer("127.0.0.14", "", 0)
		DeferCleanup(srv.Kill)
		registerCodex(ns, srv.URL, true)
		c := serverClient(srv.URL)
		newSession(ns, "panics", testModel)
		j, err := journal.Open(suiteT.TempDir(), journal.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(j.Close)
		s := &panickingStore{Journal: j}
		s.armed.Store(true)
		e := New(k8sClient, k8sClient, s, Options{Logger: logs.logger(), ExternalDial: testutil.LoopbackExternalDial})
		DeferCleanup(e.Close)

		gate := stubmodel.NewGate()
		DeferCleanup(gate.Release)
		stub.When("panic-1", stubmodel.Text("one two three four five").HoldBefore(2, gate))
		col := &collector{}
		err = e.Turn(ctx, ns, "panics", textReq("run-p1", "panic-1 answer slowly"), col.sink)
		var we *wire.Error
		Expect(errors.As(err, &we)).To(BeTrue(), "%v", err)
		Expect(we.Code).To(Equal(wire.CodeHarnessUnavailable))
		Expect(we.Message).To(ContainSubstring("failed while running the turn"))
		Expect(errorOf(col.events()).Code).To(Equal(wire.CodeHarnessUnavailable), "the stream does not end with the error")
		thread := getSession(ns, "panics").Status.LastTurn
		Expect(thread.RunID).To(Equal("run-p1"))
		res := getSession(ns, "panics").Status
		Expect(res.ActiveTurn).To(BeNil())
		Expect(res.NativeBinding).NotTo(BeNil())
		Eventually(func() appserver.TurnStatus { return latestTurn(c, res.NativeBinding.ThreadID) }, 20*time.Second).
			Should(Equal(appserver.TurnInterrupted), "the native turn runs on after its turn failed")

		stub.When("panic-2", stubmodel.Text("still here"))
		evs := &collector{}
		Expect(e.Turn(ctx, ns, "panics", textReq("run-p2", "panic-2 are you there?"), evs.sink)).To(Succeed())
		Expect(resultOf(evs.events()).AssistantTexts).To(Equal([]string{"still here"}))
	})
})
