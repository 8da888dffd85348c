package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/sessionfinalizer"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
	"github.com/openclaw/harness-operator/internal/testutil/tmpfs"
)

var _ = Describe("A turn whose journal's disk runs full", func() {
	It("fails visibly: the native turn is interrupted, the stream ends with an error naming the journal, the run reads failed, and the session is deleted while the disk is still full", func() {
		ns := newNamespace()
		registerCodex(ns, codexSrv.URL, true)
		s := newSession(ns, "disk-full", testModel)
		session := SessionKey(s)

		// An engine whose journal lives on a 2 MiB tmpfs. The lease lasts
		// the whole spec: a renewal refused by the full disk would
		// interrupt the turn for another reason than the one under test.
		dir := tmpfs.Mount(GinkgoT(), 2<<20)
		full, err := journal.Open(dir, journal.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(full.Close)
		fullEng := New(k8sClient, k8sClient, full, Options{Logger: logs.logger(), LeaseTTL: time.Hour, ExternalDial: testutil.LoopbackExternalDial})
		DeferCleanup(fullEng.Close)

		// Many small deltas: once the disk is full, the partials still
		// fill what is left of the run file's last page, so the event that
		// fails leaves no room for the `error` event or the end record.
		deltas := make([]string, 300)
		for i := range deltas {
			deltas[i] = fmt.Sprintf("word-%03d ", i)
		}
		// The stream also holds before its last delta until the spec ends:
		// Codex cannot complete the turn before the dispatcher's interrupt
		// reaches it (under -race it once did, and the native turn read
		// completed instead of interrupted).
		gate, tail := stubmodel.NewGate(), stubmodel.NewGate()
		DeferCleanup(gate.Release)
		DeferCleanup(tail.Release)
		stub.When("diskfull-1", stubmodel.Text(strings.Join(deltas, ""), deltas...).HoldBefore(1, gate).HoldBefore(len(deltas)-1, tail))
		c := &collector{}
		done := make(chan error, 1)
		go func() {
			defer GinkgoRecover()
			done <- fullEng.Turn(ctx, ns, "disk-full", textReq("run-df1", "diskfull-1 a long answer"), c.sink)
		}()
		Eventually(gate.Reached()).Should(BeClosed())
		tmpfs.Fill(GinkgoT(), dir, "filler")
		gate.Release()

		var turnErr error
		Eventually(done, 30*time.Second).Should(Receive(&turnErr), "the turn did not end: a journal that refused its writes left it running")
		var te *wire.Error
		Expect(errors.As(turnErr, &te)).To(BeTrue(), "%v", turnErr)
		Expect(te.Code).To(Equal(wire.CodeHarnessUnavailable))
		Expect(te.Message).To(And(ContainSubstring("its journal refused a write"), ContainSubstring("no space left on device")))
		evs := c.events()
		Expect(evs[len(evs)-1].Type).To(Equal(wire.EventError), "the stream does not end with the error: %v", types(evs))
		Expect(errorOf(evs).Code).To(Equal(wire.CodeHarnessUnavailable))

		// What GET …/turns/{runId} reads.
		run, err := full.FindRun(session, "run-df1")
		Expect(err).NotTo(HaveOccurred())
		info := run.Info()
		Expect(info.State).To(Equal(store.StateFailed))
		Expect(string(info.Result)).To(ContainSubstring(`"code":"HarnessUnavailable"`))

		// The native turn was interrupted, not left running unrecorded.
		binding := getSession(ns, "disk-full").Status.NativeBinding
		Expect(binding).NotTo(BeNil())
		server := serverClient(codexSrv.URL)
		Eventually(func() appserver.TurnStatus { return latestTurn(server, binding.ThreadID) }).Should(Equal(appserver.TurnInterrupted))

		// The finalizer's cleanup, as it runs for the deleted session, on
		// the disk that is still full.
		deleted := getSession(ns, "disk-full")
		deleted.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		fin := &sessionfinalizer.Reconciler{Client: k8sClient, Store: full, Engine: fullEng}
		Expect(fin.CleanUp(ctx, deleted)).To(Succeed())
		_, err = full.FindRun(session, "run-df1")
		Expect(err).To(MatchError(journal.ErrNotFound))
		_, err = os.Stat(filepath.Join(dir, "by-uid", ns, string(s.UID)))
		Expect(err).To(MatchError(os.ErrNotExist), "the session's journal directory is still on the disk")
		Expect(k8sClient.Delete(ctx, s)).To(Succeed())
		Eventually(gone(ns, "disk-full")).Should(BeTrue())
	})
})
