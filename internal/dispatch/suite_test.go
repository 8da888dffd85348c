package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/codextest"
	"github.com/openclaw/harness-operator/internal/journal"
	"github.com/openclaw/harness-operator/internal/selection"
	"github.com/openclaw/harness-operator/test/stubmodel"
)

// The suite runs the engine in-process against a real kube-apiserver and
// etcd (envtest, with the CRDs) and real `codex app-server`s on 127.0.0.x,
// registered as external AgentHarnesses `codex` with a token Secret, all
// answering from one stub model. There is no manager: the specs write the
// harness status the agentharness controller would (Ready, or not), and the
// engine reads through a direct client (the dispatcher reads an informer
// cache; the engine is written against client.Reader either way).

var (
	suiteT    *testing.T
	testEnv   *envtest.Environment
	k8sClient client.Client
	ctx       context.Context
	cancel    context.CancelFunc
	stub      *stubmodel.Server
	codexSrv  *codextest.Server
	jrnl      *journal.Journal
	eng       *Engine
	logs      = &logRecorder{}
	nsCounter atomic.Int32
)

const (
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
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	Expect(os.Getenv("KUBEBUILDER_ASSETS")).NotTo(BeEmpty(),
		"KUBEBUILDER_ASSETS must point at the etcd and kube-apiserver binaries: run `make test` (hack/setup-envtest.sh builds them)")
	Expect(os.Getenv(codextest.EnvBin)).NotTo(BeEmpty(), "CODEX_BIN must name the real codex binary: CODEX_BIN=$(hack/setup-codex.sh)")

	var err error
	stub, err = stubmodel.New()
	Expect(err).NotTo(HaveOccurred())
	codexSrv = startServer("127.0.0.2", "", 0)

	ctx, cancel = context.WithCancel(context.Background())
	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(v1alpha1.AddToScheme(scheme)).To(Succeed())
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	// The Codex-only sample policy (config/samples/10_runtimepolicy_codex_only.yaml).
	Expect(k8sClient.Create(ctx, &v1alpha1.RuntimePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "codex-only"},
		Spec: v1alpha1.RuntimePolicySpec{
			Providers:        []v1alpha1.ProviderRuntimePolicy{{Provider: "openai", Runtime: "codex"}},
			SessionOverrides: v1alpha1.SessionOverridesDeny,
		},
	})).To(Succeed())

	jrnl, err = journal.Open(suiteT.TempDir(), journal.Options{})
	Expect(err).NotTo(HaveOccurred())
	eng = New(k8sClient, k8sClient, jrnl, Options{Logger: logs.logger(), ReattachTimeout: 3 * time.Second})
})

var _ = AfterSuite(func() {
	if eng != nil {
		eng.Close()
	}
	if jrnl != nil {
		_ = jrnl.Close()
	}
	if cancel != nil {
		cancel()
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
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
	name := fmt.Sprintf("dispatch-%d", nsCounter.Add(1))
	Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	return name
}

// registerCodex creates the external AgentHarness `codex` at url with its
// token Secret, and writes the status the manager would: Ready when ready.
func registerCodex(ns, url string, ready bool) *v1alpha1.AgentHarness {
	GinkgoHelper()
	Expect(k8sClient.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "codex-token"},
		Data:       map[string][]byte{"token": []byte(serverToken)},
	})).To(Succeed())
	h := &v1alpha1.AgentHarness{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "codex"},
		Spec: v1alpha1.AgentHarnessSpec{
			HarnessID: "codex", Label: "Codex", Adapter: v1alpha1.AdapterCodexAppServer,
			External: &v1alpha1.ExternalServer{URL: url, TokenSecretRef: v1alpha1.SecretKeyReference{Name: "codex-token", Key: "token"}},
		},
	}
	Expect(k8sClient.Create(ctx, h)).To(Succeed())
	setHarnessReady(h, ready)
	return h
}

func setHarnessReady(h *v1alpha1.AgentHarness, ready bool) {
	GinkgoHelper()
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(h), h)).To(Succeed())
	now := metav1.Now()
	cond := func(typ string, ok bool, reason string) metav1.Condition {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: "set by the test", LastTransitionTime: now, ObservedGeneration: h.Generation}
	}
	workload := "ProbeSucceeded"
	if !ready {
		workload = "ProbeFailed"
	}
	readyReason := "Ready"
	if !ready {
		readyReason = "WorkloadNotReady"
	}
	h.Status = v1alpha1.AgentHarnessStatus{
		ObservedGeneration: h.Generation,
		Conditions: []metav1.Condition{
			cond(v1alpha1.HarnessConditionWorkloadReady, ready, workload),
			cond(v1alpha1.HarnessConditionVersionSupported, true, "VersionAccepted"),
			cond(v1alpha1.HarnessConditionAttested, false, "ExternalServer"),
			cond(v1alpha1.HarnessConditionReady, ready, readyReason),
		},
	}
	Expect(k8sClient.Status().Update(ctx, h)).To(Succeed())
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
func turn(ns, name string, req *TurnRequest) ([]event, error) {
	c := &collector{}
	err := eng.Turn(ctx, ns, name, req, c.sink)
	return c.events(), err
}

func textReq(runID, prompt string) *TurnRequest {
	return &TurnRequest{Attempt: attempt(runID), Prompt: prompt}
}

func attempt(runID string) selection.Attempt { return selection.Attempt{RunID: runID} }

func resultOf(evs []event) ResultEvent {
	GinkgoHelper()
	raw := lastOf(evs, EventResult)
	Expect(raw).NotTo(BeNil(), "no result event in %v", types(evs))
	var r ResultEvent
	Expect(json.Unmarshal(raw, &r)).To(Succeed())
	return r
}

func errorOf(evs []event) TurnError {
	GinkgoHelper()
	raw := lastOf(evs, EventError)
	Expect(raw).NotTo(BeNil(), "no error event in %v", types(evs))
	var te TurnError
	Expect(json.Unmarshal(raw, &te)).To(Succeed())
	return te
}

func transcript(ns, name string) string {
	GinkgoHelper()
	var b strings.Builder
	_, err := jrnl.ReadTranscript(journal.SessionName(ns, name), &b)
	Expect(err).NotTo(HaveOccurred())
	return b.String()
}
