package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// statusWriter is the writer of an engine under test: it records every
// write that reached the API server (testutil.Calls) and lets a spec hold or
// refuse a status apply first (before; nil lets every apply through).
type statusWriter struct {
	calls  testutil.Calls
	mu     sync.Mutex
	before func() error
}

func (w *statusWriter) client() client.Client {
	counting := testutil.CountingClient[*v1alpha1.AgentSession](k8sClient, &w.calls)
	return interceptor.NewClient(counting.(client.WithWatch), interceptor.Funcs{
		SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			w.mu.Lock()
			before := w.before
			w.mu.Unlock()
			if before != nil {
				if err := before(); err != nil {
					return err
				}
			}
			return c.SubResource(sub).Apply(ctx, obj, opts...)
		},
	})
}

func (w *statusWriter) setBefore(f func() error) {
	w.mu.Lock()
	w.before = f
	w.mu.Unlock()
}

// newWritesEngine is an engine on the suite's journal whose writes go
// through w, with the given activeTurn delay.
func newWritesEngine(w *statusWriter, delay time.Duration) *Engine {
	GinkgoHelper()
	e := New(k8sClient, w.client(), jrnl, Options{Logger: logs.logger(), Owner: "status-writes-dispatcher",
		ActiveTurnDelay: delay, ExternalDial: testutil.LoopbackExternalDial})
	DeferCleanup(e.Close)
	return e
}

var _ = Describe("Status writes of a turn", func() {
	var (
		ns string
		w  *statusWriter
	)
	BeforeEach(func() {
		ns = newNamespace()
		registerCodex(ns, codexSrv.URL, true)
		w = &statusWriter{}
	})
	statusApply := func(name string) string { return "apply/status AgentSession " + ns + "/" + name }

	It("makes one API write for a turn that ends inside the activeTurn delay, and records the turn with it", func() {
		e := newWritesEngine(w, time.Hour) // no turn of the suite runs that long
		newSession(ns, "short", testModel)
		stub.When("sw-short", stubmodel.Text("a short answer"))
		c := &collector{}
		Expect(e.Turn(ctx, ns, "short", textReq("run-sw1", "sw-short reply"), c.sink)).To(Succeed())

		Expect(w.calls.Writes()).To(Equal([]string{statusApply("short")}), "one status write: the turn's end")
		s := getSession(ns, "short")
		Expect(s.Status.ActiveTurn).To(BeNil())
		Expect(s.Status.LastTurn).NotTo(BeNil())
		Expect(s.Status.LastTurn.RunID).To(Equal("run-sw1"))
		Expect(s.Status.LastTurn.Outcome).To(Equal(v1alpha1.TurnSucceeded))
		Expect(s.Status.LastSelection).NotTo(BeNil())
		Expect(s.Status.LastSelection.RunID).To(Equal("run-sw1"))
		Expect(s.Status.NativeBinding).NotTo(BeNil())
	})

	It("writes activeTurn for a turn still running after the delay, then its end: two API writes", func() {
		e := newWritesEngine(w, ActiveTurnImmediately)
		newSession(ns, "long", testModel)
		gate := stubmodel.NewGate()
		DeferCleanup(gate.Release)
		stub.When("sw-long", stubmodel.Stall(gate, stubmodel.Text("a late answer")))
		run, err := e.Start(ctx, ns, "long", textReq("run-sw2", "sw-long a long job"), store.Requester{})
		Expect(err).NotTo(HaveOccurred())
		_, err = stub.WaitMarker(ctx, "sw-long")
		Expect(err).NotTo(HaveOccurred())
		// The model holds the turn: it runs until the gate opens.
		Eventually(func() *v1alpha1.ActiveTurn { return getSession(ns, "long").Status.ActiveTurn }).
			Should(And(HaveField("RunID", "run-sw2"), HaveField("Native.TurnID", Not(BeEmpty()))))
		Expect(w.calls.Writes()).To(Equal([]string{statusApply("long")}), "activeTurn, while the turn runs")

		gate.Release()
		Expect(Follow(ctx, run, (&collector{}).sink)).To(Succeed())
		Expect(w.calls.Writes()).To(Equal([]string{statusApply("long"), statusApply("long")}), "activeTurn, then the turn's end")
		s := getSession(ns, "long")
		Expect(s.Status.ActiveTurn).To(BeNil())
		Expect(s.Status.LastTurn.RunID).To(Equal("run-sw2"))
	})

	It("streams the result before the turn's status is written, and ends the stream only once it landed", func() {
		e := newWritesEngine(w, time.Hour)
		newSession(ns, "ordered", testModel)
		reached, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		w.setBefore(func() error {
			once.Do(func() { close(reached) })
			<-release
			return nil
		})
		DeferCleanup(func() {
			select {
			case <-release:
			default:
				close(release)
			}
		})
		stub.When("sw-ordered", stubmodel.Text("the answer"))
		run, err := e.Start(ctx, ns, "ordered", textReq("run-sw3", "sw-ordered question"), store.Requester{})
		Expect(err).NotTo(HaveOccurred())
		c := &collector{}
		done := make(chan error, 1)
		go func() { done <- Follow(ctx, run, c.sink) }()

		Eventually(reached).Should(BeClosed(), "the turn's status write began")
		Eventually(func() []string { return types(c.events()) }).Should(ContainElement(wire.EventResult),
			"the result is streamed while the status write is held")
		Expect(run.Info().State).To(Equal(store.StateRunning), "the run ends after its status")
		Expect(done).NotTo(Receive(), "the stream ends after the status")
		Expect(getSession(ns, "ordered").Status.LastTurn).To(BeNil())

		close(release)
		Eventually(done).Should(Receive(BeNil()))
		s := getSession(ns, "ordered")
		Expect(s.Status.LastTurn).NotTo(BeNil(), "a client that reads the session after the stream's end finds the turn")
		Expect(s.Status.LastTurn.RunID).To(Equal("run-sw3"))
	})

	It("retries a refused status write of the turn's end until it lands, before the stream ends", func() {
		e := newWritesEngine(w, time.Hour)
		newSession(ns, "retried", testModel)
		var attempts atomic.Int32
		w.setBefore(func() error {
			if attempts.Add(1) <= 2 {
				return apierrors.NewServiceUnavailable("the API server is restarting")
			}
			return nil
		})
		stub.When("sw-retried", stubmodel.Text("kept"))
		Expect(e.Turn(ctx, ns, "retried", textReq("run-sw4", "sw-retried question"), nil)).To(Succeed())

		Expect(attempts.Load()).To(BeEquivalentTo(3), "two refusals, then the write")
		Expect(w.calls.Writes()).To(Equal([]string{statusApply("retried")}))
		s := getSession(ns, "retried")
		Expect(s.Status.LastTurn).NotTo(BeNil())
		Expect(s.Status.LastTurn.RunID).To(Equal("run-sw4"))
		Expect(s.Status.ActiveTurn).To(BeNil())
		Expect(logs.matching("apply turn status failed; retrying", "run-sw4")).To(HaveLen(2))
	})

	It("does not retry a status write that cannot succeed", func() {
		e := newWritesEngine(w, time.Hour)
		newSession(ns, "refused", testModel)
		var attempts atomic.Int32
		w.setBefore(func() error {
			attempts.Add(1)
			return apierrors.NewForbidden(schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: "agentsessions/status"}, "refused", nil)
		})
		stub.When("sw-refused", stubmodel.Text("not recorded"))
		done := make(chan error, 1)
		go func() { done <- e.Turn(ctx, ns, "refused", textReq("run-sw5", "sw-refused question"), nil) }()
		Eventually(done).Should(Receive(BeNil()), "the turn ends without waiting on a write that cannot succeed")
		Expect(attempts.Load()).To(BeEquivalentTo(1))
		Expect(logs.matching("apply turn status failed; not retried", "run-sw5")).To(HaveLen(1))
	})

	// The webhook refuses a model change only while activeTurn is set: one
	// made inside the delay is admitted (this suite runs no webhook, as if
	// it admitted every change).
	It("keeps a turn on the model it started with when the spec changes inside the delay; the next turn uses the new one", func() {
		e := newWritesEngine(w, time.Hour)
		newSession(ns, "switched", testModel)
		gate := stubmodel.NewGate()
		DeferCleanup(gate.Release)
		stub.When("sw-switched", stubmodel.Stall(gate, stubmodel.Text("answered by the first model")))
		run, err := e.Start(ctx, ns, "switched", textReq("run-sw7", "sw-switched a question"), store.Requester{})
		Expect(err).NotTo(HaveOccurred())
		first, err := stub.WaitMarker(ctx, "sw-switched")
		Expect(err).NotTo(HaveOccurred())
		Expect(first.Model).To(Equal("stub-model"))
		Expect(getSession(ns, "switched").Status.ActiveTurn).To(BeNil(), "inside the delay")
		Eventually(func() error {
			s := getSession(ns, "switched")
			s.Spec.Model = "openai/stub-model-b"
			return k8sClient.Update(ctx, s)
		}).Should(Succeed())

		gate.Release()
		Expect(Follow(ctx, run, (&collector{}).sink)).To(Succeed())
		Expect(stub.RequestsContaining("sw-switched")).To(HaveEach(HaveField("Model", "stub-model")), "the running turn kept its model")
		s := getSession(ns, "switched")
		Expect(s.Status.LastTurn.RunID).To(Equal("run-sw7"))
		Expect(s.Status.LastTurn.Outcome).To(Equal(v1alpha1.TurnSucceeded))

		stub.When("sw-after-switch", stubmodel.Text("answered by the second model"))
		Expect(e.Turn(ctx, ns, "switched", textReq("run-sw8", "sw-after-switch next question"), nil)).To(Succeed())
		Expect(stub.RequestsContaining("sw-after-switch")).To(HaveEach(HaveField("Model", "stub-model-b")), "the next turn decides with the new spec")
	})

	It("recovers a turn whose dispatcher died inside the delay, before the session showed it: the restart records it failed", func() {
		newSession(ns, "crashed", testModel)
		dir := suiteT.TempDir()
		j1, err := journal.Open(dir, journal.Options{})
		Expect(err).NotTo(HaveOccurred())
		killed := newDeadStore(j1)
		var dead atomic.Bool
		w.setBefore(func() error {
			if dead.Load() { // a dead process writes nothing
				return apierrors.NewForbidden(schema.GroupResource{Resource: "agentsessions/status"}, "crashed", nil)
			}
			return nil
		})
		const owner = "crashing-dispatcher"
		gone := New(k8sClient, w.client(), killed, Options{Logger: logs.logger(), Owner: owner,
			ActiveTurnDelay: time.Hour, ExternalDial: testutil.LoopbackExternalDial})
		gate := stubmodel.NewGate()
		DeferCleanup(func() {
			gate.Release()
			_ = j1.Close()
			killed.bury()
			gone.Close()
		})
		stub.When("sw-crashed", stubmodel.Stall(gate, stubmodel.Text("nobody reads this")))
		_, err = gone.Start(ctx, ns, "crashed", textReq("run-sw6", "sw-crashed a long job"), store.Requester{})
		Expect(err).NotTo(HaveOccurred())
		_, err = stub.WaitMarker(ctx, "sw-crashed")
		Expect(err).NotTo(HaveOccurred())
		Expect(w.calls.Writes()).To(BeEmpty(), "inside the delay the turn has written no status")
		Expect(getSession(ns, "crashed").Status.ActiveTurn).To(BeNil())

		killed.kill()
		dead.Store(true)
		Expect(j1.Close()).To(Succeed())
		j2, err := journal.Open(dir, journal.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(j2.Close)
		restarted := New(k8sClient, k8sClient, j2, Options{Logger: logs.logger(), Owner: owner, ExternalDial: testutil.LoopbackExternalDial})
		Expect(restarted.Recover(ctx)).To(Succeed())

		s := getSession(ns, "crashed")
		Expect(s.Status.ActiveTurn).To(BeNil())
		Expect(s.Status.LastTurn).NotTo(BeNil())
		Expect(s.Status.LastTurn.RunID).To(Equal("run-sw6"))
		Expect(s.Status.LastTurn.Outcome).To(Equal(v1alpha1.TurnFailed))
		Expect(s.Status.LastTurn.ErrorCode).To(Equal(string(wire.CodeHarnessUnavailable)))
		Expect(s.Status.Counters).NotTo(BeNil())
		Expect(s.Status.Counters.FailedTurns).To(BeEquivalentTo(1))
		run, err := j2.Lookup(keyOf(ns, "crashed"), "run-sw6")
		Expect(err).NotTo(HaveOccurred())
		Expect(run.Info().State).To(Equal(journal.StateFailed))
	})
})
