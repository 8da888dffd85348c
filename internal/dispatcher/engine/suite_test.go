package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/controllers/agentharness"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/sessionfinalizer"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// The suite runs the engine in-process against a real kube-apiserver and
// etcd (envtest, with the CRDs) and real `codex app-server`s on 127.0.0.x,
// registered as external AgentHarnesses `codex` with a token Secret, all
// answering from one stub model. A manager runs the real agentharness
// controller — each harness's status comes from its real /readyz probe and
// initialize handshake (a harness that must not be Ready points at a dead
// port) — and the dispatcher's AgentSession finalizer (sessionfinalizer). The engine reads through
// a direct client (the dispatcher reads an informer cache; the engine is
// written against client.Reader either way).

var (
	suiteT    *testing.T
	env       *testutil.Env
	mgr       *testutil.RunningManager
	k8sClient client.Client
	ctx       context.Context
	cancel    context.CancelFunc
	stub      *stubmodel.Server
	codexSrv  *codextest.Server
	jrnl      *journal.Journal
	jrnlDir   string
	eng       *Engine
	logs      = &logRecorder{}
	nsCounter atomic.Int32
	// appPort is the app-server port of managed harnesses' pods (their
	// servers listen on 127.0.0.x:appPort).
	appPort int32
)

const (
	// nsPrefix names the suite's namespaces, the manager's harness namespaces.
	nsPrefix    = "dispatch"
	serverToken = "suite-capability-token-3b9f"
	testModel   = "openai/stub-model"
)

func TestDispatchEngine(t *testing.T) {
	suiteT = t
	RegisterFailHandler(Fail)
	RunSpecs(t, "Turn engine suite (envtest + real codex app-server + stub model)")
}

// logRecorder keeps the engine's log lines.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *logRecorder) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		r.mu.Lock()
		r.lines = append(r.lines, args)
		r.mu.Unlock()
		_, _ = fmt.Fprintln(GinkgoWriter, prefix, args)
	}, funcr.Options{})
}

func (r *logRecorder) matching(parts ...string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
next:
	for _, l := range r.lines {
		for _, p := range parts {
			if !strings.Contains(l, p) {
				continue next
			}
		}
		out = append(out, l)
	}
	return out
}

func (r *logRecorder) all() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.lines, "\n")
}

var _ = BeforeSuite(func() {
	SetDefaultEventuallyTimeout(30 * time.Second)
	// What the specs wait for (the manager's finalizer on a new session, a
	// turn's end, a status write) mostly arrives within tens of
	// milliseconds; a poll of 100 ms added up to 100 ms to each of the
	// suite's waits (over a hundred: one per new session alone). Polling
	// every 20 ms, for one wait at a time, costs little.
	SetDefaultEventuallyPollingInterval(20 * time.Millisecond)
	Expect(os.Getenv("KUBEBUILDER_ASSETS")).NotTo(BeEmpty(),
		"KUBEBUILDER_ASSETS must point at the etcd and kube-apiserver binaries: run `make test` (hack/setup-envtest.sh builds them)")
	Expect(os.Getenv(codextest.EnvBin)).NotTo(BeEmpty(), "CODEX_BIN must name the real codex binary: CODEX_BIN=$(hack/setup-codex.sh)")

	var err error
	stub, err = stubmodel.New()
	Expect(err).NotTo(HaveOccurred())
	codexSrv = startServer("127.0.0.2", "", 0)
	port, err := testutil.FreePort()
	Expect(err).NotTo(HaveOccurred())
	appPort = int32(port)

	ctx, cancel = context.WithCancel(context.Background())
	env, err = testutil.StartEnv()
	Expect(err).NotTo(HaveOccurred())
	k8sClient = env.Client

	// The Codex-only sample policy (config/samples/10_runtimepolicy_codex_only.yaml).
	Expect(k8sClient.Create(ctx, &v1alpha1.RuntimePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "codex-only"},
		Spec: v1alpha1.RuntimePolicySpec{
			Providers:        []v1alpha1.ProviderRuntimePolicy{{Provider: "openai", Runtime: "codex"}},
			SessionOverrides: v1alpha1.SessionOverridesDeny,
		},
	})).To(Succeed())

	jrnlDir = suiteT.TempDir()
	jrnl, err = journal.Open(jrnlDir, journal.Options{})
	Expect(err).NotTo(HaveOccurred())
	eng = New(k8sClient, k8sClient, jrnl, Options{Logger: logs.logger(), ReattachTimeout: 3 * time.Second, ExternalDial: testutil.LoopbackExternalDial})

	mgr, err = testutil.StartManager(ctx, env, func(m ctrl.Manager) error {
		if err := (&agentharness.Reconciler{Client: m.GetClient(), MaxConcurrentReconciles: 4,
			AppServerPort: appPort, HarnessNamespaces: testutil.SuiteNamespaces(nsPrefix), ExternalDial: testutil.LoopbackExternalDial}).SetupWithManager(m); err != nil {
			return err
		}
		return (&sessionfinalizer.Reconciler{Client: m.GetClient(), Store: jrnl, Engine: eng}).SetupWithManager(m)
	})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if mgr != nil {
		Expect(mgr.Stop()).To(Succeed())
	}
	if eng != nil {
		eng.Close()
	}
	if jrnl != nil {
		_ = jrnl.Close()
	}
	if cancel != nil {
		cancel()
	}
	Expect(env.Stop()).To(Succeed())
	if stub != nil {
		stub.Close()
	}
})

// --- helpers ---

// startServer starts a real app-server on host (a fresh directory unless
// dir is given, a free port unless port is given) with the suite's token.
func startServer(host, dir string, port int) *codextest.Server {
	GinkgoHelper()
	srv, err := codextest.StartErr(suiteT, codextest.Options{
		ProviderURL: stub.BaseURL(), Transport: codextest.WebSocket,
		ListenHost: host, Port: port, Dir: dir, WSToken: serverToken,
	})
	Expect(err).NotTo(HaveOccurred())
	return srv
}

// newNamespace creates a namespace for one spec.
func newNamespace() string {
	GinkgoHelper()
	name := testutil.SuiteNamespace(nsPrefix, int(nsCounter.Add(1)))
	Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	return name
}

// deadURL is a WebSocket URL nothing listens on: a harness there is never
// Ready (its /readyz probe is refused).
const deadURL = "ws://127.0.0.1:1"

// registerCodex creates the external AgentHarness `codex` at url with its
// token Secret, and waits for the agentharness controller's verdict: Ready
// when ready, else WorkloadReady False.
func registerCodex(ns, url string, ready bool) *v1alpha1.AgentHarness {
	GinkgoHelper()
	h := createCodex(ns, url)
	if ready {
		waitHarness(h, v1alpha1.HarnessConditionReady, metav1.ConditionTrue)
	} else {
		waitHarness(h, v1alpha1.HarnessConditionWorkloadReady, metav1.ConditionFalse)
	}
	return h
}

// createCodex creates the external AgentHarness `codex` at url with its
// token Secret; the controller's verdict is the caller's to wait for.
func createCodex(ns, url string) *v1alpha1.AgentHarness {
	GinkgoHelper()
	h, err := testutil.ExternalCodex(ctx, k8sClient, ns, url, serverToken)
	Expect(err).NotTo(HaveOccurred())
	return h
}

// waitHarness waits until the controller observed the harness's current
// generation and condition typ has status want; it returns the condition.
func waitHarness(h *v1alpha1.AgentHarness, typ string, want metav1.ConditionStatus) *metav1.Condition {
	GinkgoHelper()
	cond, err := testutil.WaitHarnessCondition(ctx, k8sClient, h, typ, want, 40*time.Second)
	Expect(err).NotTo(HaveOccurred())
	return cond
}

// updateHarness changes the harness's spec and waits for the controller to
// find it Ready (or, when ready is false, its workload not ready).
func updateHarness(h *v1alpha1.AgentHarness, ready bool, change func(*v1alpha1.AgentHarness)) {
	GinkgoHelper()
	Eventually(func() error {
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(h), h); err != nil {
			return err
		}
		change(h)
		return k8sClient.Update(ctx, h)
	}).Should(Succeed())
	if ready {
		waitHarness(h, v1alpha1.HarnessConditionReady, metav1.ConditionTrue)
	} else {
		waitHarness(h, v1alpha1.HarnessConditionWorkloadReady, metav1.ConditionFalse)
	}
}

func newSession(ns, name, model string) *v1alpha1.AgentSession {
	GinkgoHelper()
	s := &v1alpha1.AgentSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.AgentSessionSpec{
			AgentID: "main", SessionKey: "agent:main:" + name, SessionID: name + "-id", Model: model,
		},
	}
	Expect(k8sClient.Create(ctx, s)).To(Succeed())
	// The dispatcher's finalizer is added first, so the specs' own updates
	// never race with it.
	Eventually(func() []string { return getSession(ns, name).Finalizers }).Should(ContainElement(v1alpha1.JournalFinalizer))
	return s
}

func getSession(ns, name string) *v1alpha1.AgentSession {
	GinkgoHelper()
	s := &v1alpha1.AgentSession{}
	Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s)).To(Succeed())
	return s
}

// event is one streamed event.
type event struct {
	Type    string
	Payload json.RawMessage
}

func types(evs []event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

func lastOf(evs []event, typ string) json.RawMessage {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == typ {
			return evs[i].Payload
		}
	}
	return nil
}

func ofType(evs []event, typ string) []json.RawMessage {
	var out []json.RawMessage
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e.Payload)
		}
	}
	return out
}

// collector is a Sink that records events; onEvent, when set, sees each.
type collector struct {
	mu      sync.Mutex
	evs     []event
	onEvent func(typ string, payload json.RawMessage)
}

func (c *collector) sink(typ string, payload json.RawMessage) {
	c.mu.Lock()
	c.evs = append(c.evs, event{typ, append(json.RawMessage(nil), payload...)})
	c.mu.Unlock()
	if c.onEvent != nil {
		c.onEvent(typ, payload)
	}
}

func (c *collector) events() []event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]event(nil), c.evs...)
}

// turn runs one turn and returns its events and error.
func turn(ns, name string, req *wire.TurnRequest) ([]event, error) {
	c := &collector{}
	err := eng.Turn(ctx, ns, name, req, c.sink)
	return c.events(), err
}

func textReq(runID, prompt string) *wire.TurnRequest {
	return &wire.TurnRequest{Attempt: attempt(runID), Prompt: prompt}
}

func attempt(runID string) wire.Attempt { return wire.Attempt{RunID: runID} }

func resultOf(evs []event) wire.ResultEvent {
	GinkgoHelper()
	raw := lastOf(evs, wire.EventResult)
	Expect(raw).NotTo(BeNil(), "no result event in %v", types(evs))
	var r wire.ResultEvent
	Expect(json.Unmarshal(raw, &r)).To(Succeed())
	return r
}

func errorOf(evs []event) wire.Error {
	GinkgoHelper()
	raw := lastOf(evs, wire.EventError)
	Expect(raw).NotTo(BeNil(), "no error event in %v", types(evs))
	var te wire.Error
	Expect(json.Unmarshal(raw, &te)).To(Succeed())
	return te
}

func transcript(ns, name string) string {
	GinkgoHelper()
	return transcriptOf(keyOf(ns, name))
}

// transcriptOf is the transcript mirror of a session key, whether or not
// its AgentSession still exists.
func transcriptOf(session string) string {
	GinkgoHelper()
	var b strings.Builder
	_, err := jrnl.ReadTranscript(session, &b)
	Expect(err).NotTo(HaveOccurred())
	return b.String()
}

// keyOf is the journal key of the AgentSession ns/name that exists now.
func keyOf(ns, name string) string {
	GinkgoHelper()
	return SessionKey(getSession(ns, name))
}

// gone reports whether the AgentSession ns/name no longer exists.
func gone(ns, name string) func() bool {
	return func() bool {
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &v1alpha1.AgentSession{})
		return apierrors.IsNotFound(err)
	}
}
