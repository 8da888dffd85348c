package dispatcher_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// An AgentSession's identity is its UID: a session deleted and created again
// under its name is another session, and what the deleted one left — its
// native thread, the files in its working directory on the app-server, its
// journal — is removed, by the dispatcher's finalizer or, when that was
// removed by hand, by its garbage collection. These specs check it from the
// outside: over the dispatcher's HTTPS API, the Kubernetes API, the
// app-server's own API and the dispatcher's --journal-dir.
var _ = Describe("A session's identity across deletion, served by the dispatcher process", Serial, func() {
	It("gives a session re-created under a deleted one's name a new thread, counters from one, a transcript and working directory of its own, and refuses the deleted session's turn token; the deleted session's thread is archived and its directory gone on the app-server", func() {
		ns := newNamespace("identity")
		registerCodex(ns, codex.URL, true)
		srv := appServerClient()
		turns := sessionURL(ns, "again") + "/turns"

		newSession(ns, "again", testModel)
		first := sessionObject(ns, "again")
		stub.When("idn-1a", stubmodel.Text("the first user's secret is 7"))
		evs := readSSE(post(turns, gateway, `{"runId":"run-1","prompt":"idn-1a: remember my secret"}`, nil))
		firstToken := turnTokenOf(evs)
		firstThread := resultOf(evs).ThreadID
		firstDir := threadCwd(srv, firstThread)
		Expect(srv.Call(ctx, "fs/writeFile", map[string]any{"path": path.Join(firstDir, "secret.txt"), "dataBase64": "Nw=="}, nil)).To(Succeed())
		scriptListing("idn-1b", nil)
		readSSE(post(turns, gateway, `{"runId":"run-2","prompt":"idn-1b: what is in your directory?"}`, nil))
		Expect(listed("idn-1b")).To(ConsistOf("secret.txt"), "the listing turn does not show the session's working directory")

		Expect(k8s.Delete(ctx, first)).To(Succeed())
		Eventually(sessionGone(ns, "again")).WithTimeout(30*time.Second).Should(BeTrue(), "the dispatcher's finalizer never let the session go")
		Expect(nativeState(srv, firstDir, firstThread)).To(Equal(native{Archived: true}),
			"the deleted session's thread is not archived, or its working directory is still on the app-server")

		newSession(ns, "again", testModel)
		second := sessionObject(ns, "again")
		Expect(second.UID).NotTo(Equal(first.UID))
		// The successor reuses the runId "run-1": while its turn runs, the
		// deleted session's token of run-1 must not act on it.
		evs = listRefusingToken(ns, "again", "run-1", "idn-2", firstToken)
		Expect(turnTokenOf(evs)).NotTo(Equal(firstToken))
		res := resultOf(evs)
		Expect(res.ThreadID).NotTo(Equal(firstThread), "the successor continued the deleted session's native thread")
		Expect(listed("idn-2")).To(BeEmpty(), "the successor's working directory holds files")
		Expect(threadCwd(srv, res.ThreadID)).NotTo(Equal(firstDir), "the successor works in the deleted session's directory")
		for _, req := range stub.RequestsContaining("idn-2") {
			Expect(req.UserTexts()).NotTo(ContainElement(ContainSubstring("idn-1")), "the model saw the deleted session's conversation")
			Expect(req.AssistantTexts()).NotTo(ContainElement(ContainSubstring("secret is 7")), "the model saw the deleted session's conversation")
		}

		Eventually(func(g Gomega) {
			s := sessionObject(ns, "again")
			g.Expect(s.Status.Counters).NotTo(BeNil())
			g.Expect(s.Status.Counters.Turns).To(Equal(int64(1)), "the counters continued from the deleted session")
			g.Expect(s.Status.NativeBinding).NotTo(BeNil())
			g.Expect(s.Status.NativeBinding.ThreadID).To(Equal(res.ThreadID))
			g.Expect(s.Status.NativeBinding.SessionUID).To(Equal(string(second.UID)))
		}).WithTimeout(20 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		tr := get(sessionURL(ns, "again")+"/transcript", gateway)
		Expect(tr.Status).To(Equal(http.StatusOK), "%s", tr.Body)
		Expect(string(tr.Body)).To(ContainSubstring("idn-2"))
		Expect(string(tr.Body)).NotTo(Or(ContainSubstring("idn-1"), ContainSubstring("secret")), "the transcript continued the deleted session's")
	})

	It("removes, at the dispatcher's start, the thread, working directory and journal of a session whose finalizer was removed by hand while it was down", func() {
		ns := newNamespace("identity-gc")
		registerCodex(ns, codex.URL, true)
		srv := appServerClient()
		newSession(ns, "orphan", testModel)
		s := sessionObject(ns, "orphan")
		stub.When("idn-gc", stubmodel.Text("soon an orphan"))
		evs := readSSE(post(sessionURL(ns, "orphan")+"/turns", gateway, `{"runId":"run-gc","prompt":"idn-gc hello"}`, nil))
		thread := resultOf(evs).ThreadID
		dir := threadCwd(srv, thread)
		journaled := filepath.Join(launch.journalDir, "by-uid", ns, string(s.UID))

		// Nothing of the dispatcher runs while the session goes: an admin
		// removes its finalizer by hand.
		stopDispatcher()
		Expect(k8s.Delete(ctx, s)).To(Succeed())
		removeFinalizerByHand(ns, "orphan", v1alpha1.JournalFinalizer)
		Eventually(sessionGone(ns, "orphan")).WithTimeout(30 * time.Second).Should(BeTrue())
		Expect(nativeState(srv, dir, thread)).To(Equal(native{Unarchived: true, DirExists: true}), "precondition: nothing cleaned up while the dispatcher was down")
		Expect(journaled).To(BeADirectory(), "precondition: the journal keeps the session at by-uid/<ns>/<uid>")

		startDispatcher()
		Eventually(func() native { return nativeState(srv, dir, thread) }).WithTimeout(30*time.Second).WithPolling(200*time.Millisecond).
			Should(Equal(native{Archived: true}), "garbage collection at start left the session's thread unarchived or its working directory on the app-server")
		Eventually(func() error { _, err := os.Stat(journaled); return err }).WithTimeout(30*time.Second).WithPolling(200*time.Millisecond).
			Should(MatchError(os.ErrNotExist), "garbage collection at start left the session's journal in --journal-dir")
	})
})

// sessionObject reads the AgentSession namespace/name from the API server.
func sessionObject(namespace, name string) *v1alpha1.AgentSession {
	GinkgoHelper()
	s := &v1alpha1.AgentSession{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, s)).To(Succeed())
	return s
}

// sessionGone reports whether the AgentSession namespace/name no longer exists.
func sessionGone(namespace, name string) func() bool {
	return func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &v1alpha1.AgentSession{}))
	}
}

// removeFinalizerByHand removes finalizer from the AgentSession's
// metadata.finalizers with a JSON patch, as an admin would with kubectl
// patch --type=json; the test operation makes it remove exactly that entry.
func removeFinalizerByHand(namespace, name, finalizer string) {
	GinkgoHelper()
	s := sessionObject(namespace, name)
	i := -1
	for j, f := range s.Finalizers {
		if f == finalizer {
			i = j
		}
	}
	Expect(i).To(BeNumerically(">=", 0), "AgentSession %s/%s has no finalizer %s: %v", namespace, name, finalizer, s.Finalizers)
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": fmt.Sprintf("/metadata/finalizers/%d", i), "value": finalizer},
		{"op": "remove", "path": fmt.Sprintf("/metadata/finalizers/%d", i)},
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(k8s.Patch(ctx, s, client.RawPatch(types.JSONPatchType, patch))).To(Succeed())
}

// turnTokenOf is the turn token of a turn's selected event.
func turnTokenOf(evs []sseEvent) string {
	GinkgoHelper()
	Expect(evs).NotTo(BeEmpty())
	Expect(evs[0].Type).To(Equal(wire.EventSelected), "events %v", typesOf(evs))
	var sel struct{ TurnToken string }
	Expect(json.Unmarshal(evs[0].Data, &sel)).To(Succeed())
	Expect(sel.TurnToken).NotTo(BeEmpty())
	return sel.TurnToken
}

// resultOf is a turn's result event.
func resultOf(evs []sseEvent) wire.ResultEvent {
	GinkgoHelper()
	last := evs[len(evs)-1]
	Expect(last.Type).To(Equal(wire.EventResult), "events %v", typesOf(evs))
	var res wire.ResultEvent
	Expect(json.Unmarshal(last.Data, &res)).To(Succeed())
	Expect(res.ThreadID).NotTo(BeEmpty())
	return res
}

// --- the session's working directory, listed by Codex ---

const (
	listingStart = "START-OF-LISTING"
	listingEnd   = "END-OF-LISTING"
)

// scriptListing makes the model answer a prompt containing marker by asking
// Codex's shell tool to list the session's working directory; with hold set,
// the model's request waits until hold is released.
func scriptListing(marker string, hold *stubmodel.Gate) {
	reply := stubmodel.CallJSON("exec_command", map[string]string{"cmd": "echo " + listingStart + "; ls -A; echo " + listingEnd})
	if hold != nil {
		reply = stubmodel.Stall(hold, reply)
	}
	stub.When(marker, reply)
}

// listed is what the listing turn of marker found in the working directory,
// as Codex returned the shell's output to the model.
func listed(marker string) []string {
	GinkgoHelper()
	reqs := stub.RequestsContaining(marker)
	Expect(reqs).NotTo(BeEmpty())
	outs := reqs[len(reqs)-1].FunctionCallOutputs()
	Expect(outs).To(HaveLen(1), "the model's listing never ran, or the thread holds another turn's")
	out := outs[0].Output
	start := strings.LastIndex(out, listingStart+"\n")
	end := strings.LastIndex(out, listingEnd)
	Expect(start).To(BeNumerically(">=", 0), "listing output %q", out)
	Expect(end).To(BeNumerically(">", start), "listing output %q", out)
	return strings.Fields(out[start+len(listingStart)+1 : end])
}

// listRefusingToken runs a listing turn (scriptListing) of the session as
// runID over the API and, while it runs, presents token to interrupt it: the
// dispatcher must refuse it (403 TurnTokenInvalid) and the turn goes on. It
// returns the turn's events.
func listRefusingToken(namespace, name, runID, marker, token string) []sseEvent {
	GinkgoHelper()
	gate := stubmodel.NewGate()
	defer gate.Release()
	scriptListing(marker, gate)
	url := sessionURL(namespace, name) + "/turns"
	resp := open(url, gateway, fmt.Sprintf(`{"runId":%q,"prompt":"%s: what is in your directory?"}`, runID, marker), nil)
	defer func() { _ = resp.Body.Close() }()
	return scanSSE(resp.Body, func(e sseEvent) {
		if e.Type != wire.EventSelected {
			return
		}
		_, err := stub.WaitMarker(ctx, marker)
		Expect(err).NotTo(HaveOccurred())
		rep := post(url+"/"+runID+"/interrupt", gateway, "", map[string]string{wire.TurnTokenHeader: token})
		Expect(rep.Status).To(Equal(http.StatusForbidden), "another session's turn token acted on %s of %s/%s: %s", runID, namespace, name, rep.Body)
		expectError(rep, http.StatusForbidden, wire.CodeTurnTokenInvalid)
		gate.Release()
	})
}

// --- the app-server's own view ---

// appServerClient connects to the suite's app-server as the dispatcher does,
// with the server's capability token.
func appServerClient() *appserver.Client {
	GinkgoHelper()
	t, err := appserver.DialWebSocket(ctx, codex.URL, appserver.WebSocketOptions{Token: serverToken})
	Expect(err).NotTo(HaveOccurred())
	c, err := appserver.Connect(ctx, t, appserver.Options{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(c.Close)
	return c
}

// threadCwd is the working directory the app-server records for a thread.
func threadCwd(c *appserver.Client, threadID string) string {
	GinkgoHelper()
	cwd, err := codextest.ThreadCwd(ctx, c, threadID)
	Expect(err).NotTo(HaveOccurred())
	return cwd
}

// native is what the app-server says about a session's thread and directory.
type native = codextest.NativeState

// nativeState asks the app-server about threadID and dir.
func nativeState(c *appserver.Client, dir, threadID string) native {
	GinkgoHelper()
	st, err := codextest.Native(ctx, c, dir, threadID)
	Expect(err).NotTo(HaveOccurred())
	return st
}
