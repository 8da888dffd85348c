package engine

import (
	"errors"
	"path"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// listing is what the model asks Codex to run in the session's working
// directory; the marker ends the listing so an empty directory is visible.
const listing = "ls -A; echo END-OF-LISTING"

// listWorkDir runs a turn whose model lists the session's working directory
// through Codex's shell tool, and returns the listing.
func listWorkDir(ns, name, runID, marker string) (wire.ResultEvent, string) {
	GinkgoHelper()
	stub.When(marker, stubmodel.CallJSON("exec_command", map[string]string{"cmd": listing}))
	evs, err := turn(ns, name, textReq(runID, marker+": what is in your directory?"))
	Expect(err).NotTo(HaveOccurred())
	reqs := stub.RequestsContaining(marker)
	Expect(reqs).NotTo(BeEmpty())
	outs := reqs[len(reqs)-1].FunctionCallOutputs()
	Expect(outs).To(HaveLen(1), "the model's listing never ran")
	Expect(outs[0].Output).To(ContainSubstring("END-OF-LISTING"))
	return resultOf(evs), outs[0].Output
}

// serverClient connects to an app-server as the dispatcher does.
func serverClient(url string) *appserver.Client {
	GinkgoHelper()
	t, err := appserver.DialWebSocket(ctx, url, appserver.WebSocketOptions{Token: serverToken})
	Expect(err).NotTo(HaveOccurred())
	c, err := appserver.Connect(ctx, t, appserver.Options{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(c.Close)
	return c
}

// nativeState is what an app-server's own API says about a session's
// thread and working directory.
func nativeState(c *appserver.Client, dir, threadID string) (archived, unarchived bool, dirExists bool) {
	GinkgoHelper()
	st, err := codextest.Native(ctx, c, dir, threadID)
	Expect(err).NotTo(HaveOccurred())
	return st.Archived, st.Unarchived, st.DirExists
}

// threadCwd is the working directory the app-server records for a thread.
func threadCwd(c *appserver.Client, threadID string) string {
	GinkgoHelper()
	cwd, err := codextest.ThreadCwd(ctx, c, threadID)
	Expect(err).NotTo(HaveOccurred())
	return cwd
}

var _ = Describe("A session deleted and created again under its name", func() {
	It("starts empty: a new native thread, counters from zero, an empty transcript and an empty working directory; the deleted session's thread is archived and its directory gone", func() {
		ns := newNamespace()
		registerCodex(ns, codexSrv.URL, true)
		c := serverClient(codexSrv.URL)
		first := newSession(ns, "again", testModel)
		stub.When("uid-1", stubmodel.Text("the first user's secret is 7"))
		evs, err := turn(ns, "again", textReq("run-u1", "uid-1: remember my secret"))
		Expect(err).NotTo(HaveOccurred())
		firstThread := resultOf(evs).ThreadID
		firstDir := threadCwd(c, firstThread)
		Expect(c.Call(ctx, "fs/writeFile", map[string]any{"path": path.Join(firstDir, "secret.txt"), "dataBase64": "Nw=="}, nil)).To(Succeed())
		_, seen := listWorkDir(ns, "again", "run-u1b", "uid-1b")
		Expect(seen).To(ContainSubstring("secret.txt"), "the listing shows the session's files")
		Expect(getSession(ns, "again").Status.Counters.Turns).To(Equal(int64(2)))

		Expect(k8sClient.Delete(ctx, first)).To(Succeed())
		Eventually(gone(ns, "again")).Should(BeTrue())
		archived, unarchived, dirExists := nativeState(c, firstDir, firstThread)
		Expect(archived).To(BeTrue(), "the deleted session's thread is not archived on the app-server")
		Expect(unarchived).To(BeFalse())
		Expect(dirExists).To(BeFalse(), "the deleted session's working directory is still on the app-server")

		second := newSession(ns, "again", testModel)
		Expect(second.UID).NotTo(Equal(first.UID))
		res, seen := listWorkDir(ns, "again", "run-u2", "uid-2")
		Expect(res.ThreadID).NotTo(Equal(firstThread), "the successor continued the deleted session's native thread")
		Expect(strings.TrimSpace(seen)).To(HaveSuffix("END-OF-LISTING"))
		Expect(seen).NotTo(ContainSubstring("secret.txt"), "the successor's working directory holds the deleted session's files")
		req, err := stub.WaitMarker(ctx, "uid-2")
		Expect(err).NotTo(HaveOccurred())
		Expect(req.AssistantTexts()).NotTo(ContainElement(ContainSubstring("secret is 7")), "the model saw the deleted session's conversation")
		s := getSession(ns, "again")
		Expect(s.Status.Counters.Turns).To(Equal(int64(1)), "counters continued from the deleted session")
		Expect(s.Status.NativeBinding.ThreadID).To(Equal(res.ThreadID))
		Expect(s.Status.NativeBinding.SessionUID).To(Equal(string(second.UID)))
		tr := transcript(ns, "again")
		Expect(tr).NotTo(ContainSubstring("uid-1"), "the transcript continued the deleted session's")
		Expect(tr).To(ContainSubstring("uid-2"))
	})
})

var _ = Describe("A native binding not written for this AgentSession", func() {
	It("is refused with NativeThreadLost before anything runs, and a reset starts a new thread", func() {
		ns := newNamespace()
		registerCodex(ns, codexSrv.URL, true)
		newSession(ns, "copied", testModel)
		stub.When("bind-1", stubmodel.Text("bound"))
		_, err := turn(ns, "copied", textReq("run-b1", "bind-1 hello"))
		Expect(err).NotTo(HaveOccurred())
		// Someone with status rights points the binding at another
		// object's thread (or it predates sessionUID).
		s := getSession(ns, "copied")
		s.Status.NativeBinding.SessionUID = "8b0f6d8e-0000-4000-8000-000000000000"
		Expect(k8sClient.Status().Update(ctx, s)).To(Succeed())
		eng.forget(s.UID) // the dispatcher learns the status from the API server
		Eventually(func() string { return getSession(ns, "copied").Status.NativeBinding.SessionUID }).Should(HavePrefix("8b0f"))

		before := len(stub.Requests())
		_, err = turn(ns, "copied", textReq("run-b2", "bind-2 continue"))
		var te *wire.Error
		Expect(errors.As(err, &te)).To(BeTrue(), "%v", err)
		Expect(te.Code).To(Equal(wire.CodeNativeThreadLost))
		Expect(te.Message).To(ContainSubstring("was written for session UID 8b0f6d8e"))
		Expect(stub.Requests()).To(HaveLen(before), "the refused turn reached the model")
		_, lookErr := jrnl.Lookup(keyOf(ns, "copied"), "run-b2")
		Expect(lookErr).To(MatchError(journal.ErrNotFound), "a refused turn is not journaled")

		s = getSession(ns, "copied")
		s.Spec.ResetGeneration++
		Expect(k8sClient.Update(ctx, s)).To(Succeed())
		stub.When("bind-3", stubmodel.Text("fresh"))
		Eventually(func() error { _, err := turn(ns, "copied", textReq("run-b3", "bind-3 after reset")); return err }).Should(Succeed())
		Expect(getSession(ns, "copied").Status.NativeBinding.SessionUID).To(Equal(string(s.UID)))
	})
})

var _ = Describe("The garbage collector", func() {
	It("removes the journal, thread and working directory of a session deleted without its cleanup", func() {
		ns := newNamespace()
		srv := startServer("127.0.0.9", "", 0)
		DeferCleanup(srv.Kill)
		h := registerCodex(ns, srv.URL, true)
		c := serverClient(srv.URL)
		// A second engine and journal that the finalizer does not know:
		// their state outlives the session as after a hand-removed finalizer.
		j2, err := journal.Open(suiteT.TempDir(), journal.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(j2.Close)
		eng2 := New(k8sClient, k8sClient, j2, Options{Logger: logs.logger(), ExternalDial: testutil.LoopbackExternalDial})
		DeferCleanup(eng2.Close)
		gc := &GarbageCollector{Engine: eng2, Store: j2, Sessions: k8sClient}

		s := newSession(ns, "orphan", testModel)
		kept := newSession(ns, "kept", testModel)
		stub.When("gc-1", stubmodel.Text("orphaned answer"))
		stub.When("gc-2", stubmodel.Text("kept answer"))
		var orphanThread, keptThread string
		for _, x := range []struct {
			s      *v1alpha1.AgentSession
			prompt string
			thread *string
		}{{s, "gc-1 hello", &orphanThread}, {kept, "gc-2 hello", &keptThread}} {
			c := &collector{}
			Expect(eng2.Turn(ctx, ns, x.s.Name, textReq("run-"+x.s.Name, x.prompt), c.sink)).To(Succeed())
			*x.thread = resultOf(c.events()).ThreadID
		}
		orphanDir, keptDir := threadCwd(c, orphanThread), threadCwd(c, keptThread)

		// The app-server is out of reach while the session goes: nothing
		// cleans up then (the harness is deleted first).
		Expect(k8sClient.Delete(ctx, h)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(h), &v1alpha1.AgentHarness{}))
		}).Should(BeTrue())
		Expect(k8sClient.Delete(ctx, s)).To(Succeed())
		Eventually(gone(ns, "orphan")).Should(BeTrue())
		_, _, dirExists := nativeState(c, orphanDir, orphanThread)
		Expect(dirExists).To(BeTrue(), "precondition: the cleanup had no server to reach")
		back := &v1alpha1.AgentHarness{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: h.Name}, Spec: h.Spec}
		Expect(k8sClient.Create(ctx, back)).To(Succeed())
		waitHarness(back, v1alpha1.HarnessConditionReady, metav1.ConditionTrue)

		// Other specs' servers may be unreachable: their errors are
		// reported, and do not stop the collection of this one.
		var rep GCReport
		Eventually(func(g Gomega) {
			var err error
			rep, err = gc.Collect(ctx)
			g.Expect(rep.Native).To(ContainElement(HaveSuffix(orphanDir)), "collection error: %v", err)
		}, 20*time.Second).Should(Succeed())
		Expect(rep.Journal).To(ConsistOf(SessionKey(s)))
		_, err = j2.Lookup(SessionKey(s), "run-orphan")
		Expect(err).To(MatchError(journal.ErrNotFound))
		archived, unarchived, dirExists := nativeState(c, orphanDir, orphanThread)
		Expect([]bool{archived, unarchived, dirExists}).To(Equal([]bool{true, false, false}), "archived, unarchived, directory exists")

		// The live session keeps everything.
		_, err = j2.Lookup(SessionKey(kept), "run-kept")
		Expect(err).NotTo(HaveOccurred())
		archived, unarchived, dirExists = nativeState(c, keptDir, keptThread)
		Expect([]bool{archived, unarchived, dirExists}).To(Equal([]bool{false, true, true}), "the live session's thread and directory")
	})
})
