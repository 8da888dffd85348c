package sessionfinalizer

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/controllers/agentharness"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/engine"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// The suite runs the finalizer with the real turn engine in-process against
// a real kube-apiserver and etcd (envtest, with the CRDs) and a real `codex
// app-server` on 127.0.0.2 answering from the stub model, registered as the
// external AgentHarness `codex` that the real agentharness controller makes
// Ready. The finalizer's cleanup is only worth testing with real turns to
// clean up after.

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
	eng       *engine.Engine
	nsCounter atomic.Int32
)

const (
	// nsPrefix names the suite's namespaces, the manager's harness namespaces.
	nsPrefix    = "finalizer"
	serverToken = "suite-capability-token-7c1e"
	testModel   = "openai/stub-model"
)

func TestSessionFinalizer(t *testing.T) {
	suiteT = t
	RegisterFailHandler(Fail)
	RunSpecs(t, "AgentSession finalizer suite (envtest + turn engine + real codex app-server + stub model)")
}

var _ = BeforeSuite(func() {
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(20 * time.Millisecond)
	Expect(os.Getenv("KUBEBUILDER_ASSETS")).NotTo(BeEmpty(),
		"KUBEBUILDER_ASSETS must point at the etcd and kube-apiserver binaries: run `make test` (hack/setup-envtest.sh builds them)")
	Expect(os.Getenv(codextest.EnvBin)).NotTo(BeEmpty(), "CODEX_BIN must name the real codex binary: CODEX_BIN=$(hack/setup-codex.sh)")

	var err error
	stub, err = stubmodel.New()
	Expect(err).NotTo(HaveOccurred())
	codexSrv, err = codextest.StartErr(suiteT, codextest.Options{
		ProviderURL: stub.BaseURL(), Transport: codextest.WebSocket, ListenHost: "127.0.0.2", WSToken: serverToken,
	})
	Expect(err).NotTo(HaveOccurred())

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
	eng = engine.New(k8sClient, k8sClient, jrnl, engine.Options{Logger: GinkgoLogr, ReattachTimeout: 3 * time.Second, ExternalDial: testutil.LoopbackExternalDial})

	mgr, err = testutil.StartManager(ctx, env, func(m ctrl.Manager) error {
		if err := (&agentharness.Reconciler{Client: m.GetClient(), MaxConcurrentReconciles: 2,
			HarnessNamespaces: testutil.SuiteNamespaces(nsPrefix), ExternalDial: testutil.LoopbackExternalDial}).SetupWithManager(m); err != nil {
			return err
		}
		return (&Reconciler{Client: m.GetClient(), Store: jrnl, Engine: eng}).SetupWithManager(m)
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

// newNamespace creates a namespace for one spec.
func newNamespace() string {
	GinkgoHelper()
	name := testutil.SuiteNamespace(nsPrefix, int(nsCounter.Add(1)))
	Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	return name
}

// registerCodex creates the external AgentHarness `codex` at url with its
// token Secret, and waits for the agentharness controller to find it Ready
// (or, when ready is false, its workload not ready).
func registerCodex(ns, url string, ready bool) {
	GinkgoHelper()
	h, err := testutil.ExternalCodex(ctx, k8sClient, ns, url, serverToken)
	Expect(err).NotTo(HaveOccurred())
	typ, want := v1alpha1.HarnessConditionReady, metav1.ConditionTrue
	if !ready {
		typ, want = v1alpha1.HarnessConditionWorkloadReady, metav1.ConditionFalse
	}
	_, err = testutil.WaitHarnessCondition(ctx, k8sClient, h, typ, want, 40*time.Second)
	Expect(err).NotTo(HaveOccurred())
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
	// The finalizer is added first, so the specs' own updates never race
	// with it.
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

// collector is a Sink that records events.
type collector struct {
	mu  sync.Mutex
	evs []event
}

func (c *collector) sink(typ string, payload json.RawMessage) {
	c.mu.Lock()
	c.evs = append(c.evs, event{typ, append(json.RawMessage(nil), payload...)})
	c.mu.Unlock()
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
	return &wire.TurnRequest{Attempt: wire.Attempt{RunID: runID}, Prompt: prompt}
}

func resultOf(evs []event) wire.ResultEvent {
	GinkgoHelper()
	var raw json.RawMessage
	for i := len(evs) - 1; i >= 0 && raw == nil; i-- {
		if evs[i].Type == wire.EventResult {
			raw = evs[i].Payload
		}
	}
	Expect(raw).NotTo(BeNil(), "no result event in %v", evs)
	var r wire.ResultEvent
	Expect(json.Unmarshal(raw, &r)).To(Succeed())
	return r
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
	return engine.SessionKey(getSession(ns, name))
}

// gone reports whether the AgentSession ns/name no longer exists.
func gone(ns, name string) func() bool {
	return func() bool {
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &v1alpha1.AgentSession{})
		return apierrors.IsNotFound(err)
	}
}

// turnsWaiting is the engine's gauge of the turns of ns queued behind
// another turn of their session, read from the registry /metrics serves.
func turnsWaiting(ns string) float64 {
	GinkgoHelper()
	families, err := metrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != "harness_dispatcher_turns_waiting" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "namespace" && l.GetValue() == ns {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return 0
}
