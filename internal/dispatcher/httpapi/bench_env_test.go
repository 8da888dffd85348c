package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/controllers/agentharness"
	"github.com/openclaw/harness-operator/internal/contract/sse"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/engine"
	"github.com/openclaw/harness-operator/internal/dispatcher/httpapi"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/appserverdouble"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// The dispatcher benchmarks (BenchmarkDispatcherOverhead,
// BenchmarkDispatcherConcurrency, and BenchmarkDispatcherStoreOverhead on
// PostgreSQL) share this setup: one envtest control plane, one real `codex
// app-server` (WebSocket) behind an external AgentHarness of namespace
// benchNS that the real agentharness controller makes Ready, the stub model
// answering every turn with a short text, and a gateway ServiceAccount whose
// token is checked by TokenReview and SubjectAccessReview, allowed to run
// turns in benchNS and doubleNS. A benchmark that measures the dispatcher
// alone adds the zero-latency app-server double as the harness of doubleNS
// (startDouble). Each benchmark adds its arms (an engine on a store, its
// Handler behind a TLS server) and its sessions.
const (
	benchNS      = "latency"
	doubleNS     = "double" // the harness there is internal/testutil/appserverdouble
	benchWSToken = "httpapi-latency-token-3f9a"
	benchModel   = "openai/stub-model"
	benchAud     = "harness-dispatcher"
	benchMarker  = "latency-bench"
	benchReply   = "ok."
	benchPrompt  = benchMarker + ": reply ok"
)

type benchEnv struct {
	ctx context.Context
	k8s client.Client // direct: the benchmark's own writes and reads
	// cached reads AgentSessions, harnesses and policies from the manager's
	// informer cache and Secrets from the API server, and writes to the API
	// server: the engine's and the Handler's client, as cmd/dispatcher
	// gives them (its secretsUncached reader over the manager's cache).
	cached  client.Client
	cs      kubernetes.Interface
	saToken string // the gateway's
	tenv    *testutil.Env
}

// startBenchEnv starts the shared setup, the stub model scripted to answer
// turns turns; everything stops at b's end. usage is the command that runs
// the benchmark, for the error when an input is missing.
func startBenchEnv(b *testing.B, turns int, usage string) *benchEnv {
	b.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" || os.Getenv(codextest.EnvBin) == "" {
		b.Fatal("KUBEBUILDER_ASSETS and CODEX_BIN must be set: " + usage)
	}
	stub, err := stubmodel.New()
	benchMust(b, err)
	b.Cleanup(stub.Close)
	replies := make([]stubmodel.Reply, turns)
	for i := range replies {
		replies[i] = stubmodel.Text(benchReply)
	}
	stub.When(benchMarker, replies...)
	codex, err := codextest.StartErr(b, codextest.Options{
		ProviderURL: stub.BaseURL(), Transport: codextest.WebSocket, WSToken: benchWSToken,
	})
	benchMust(b, err)
	e := startControlPlane(b, usage)
	e.addHarness(b, benchNS, codex.URL)
	return e
}

// startControlPlane is startBenchEnv without Codex: the control plane, the
// policy, the namespaces and the gateway, and no harness yet.
func startControlPlane(b *testing.B, usage string) *benchEnv {
	b.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		b.Fatal("KUBEBUILDER_ASSETS must be set: " + usage)
	}
	// The manager's records are not what a benchmark reports (and without
	// a logger controller-runtime prints a stack trace in its output).
	ctrl.SetLogger(logr.Discard())
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)

	env, err := testutil.StartEnv()
	benchMust(b, err)
	b.Cleanup(func() { _ = env.Stop() })
	k8s := env.Client
	cs, err := kubernetes.NewForConfig(env.Config)
	benchMust(b, err)
	namespaces := []string{benchNS, doubleNS}
	var informers cache.Cache
	mgr, err := testutil.StartManager(ctx, env, func(m ctrl.Manager) error {
		informers = m.GetCache()
		return (&agentharness.Reconciler{Client: m.GetClient(), MaxConcurrentReconciles: 4,
			HarnessNamespaces: namespaces, ExternalDial: testutil.LoopbackExternalDial}).SetupWithManager(m)
	})
	benchMust(b, err)
	b.Cleanup(func() { _ = mgr.Stop() })
	cached, err := client.New(env.Config, client.Options{Scheme: env.Scheme,
		Cache: &client.CacheOptions{Reader: informers, DisableFor: []client.Object{&corev1.Secret{}}}})
	benchMust(b, err)

	// The policy, the namespaces, the gateway ServiceAccount with the turns
	// grant in each, the harness.
	benchMust(b, k8s.Create(ctx, &v1alpha1.RuntimePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "codex-only"},
		Spec: v1alpha1.RuntimePolicySpec{
			Providers:        []v1alpha1.ProviderRuntimePolicy{{Provider: "openai", Runtime: "codex"}},
			SessionOverrides: v1alpha1.SessionOverridesDeny,
		},
	}))
	benchMust(b, k8s.Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "harness-gateway-latency"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{httpapi.APIGroup}, Resources: []string{"agentsessions/turns"}, Verbs: []string{"create", "get"}}},
	}))
	for _, ns := range namespaces {
		benchMust(b, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
		benchMust(b, k8s.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gateway"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "harness-gateway-latency"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: benchNS, Name: "gateway"}},
		}))
	}
	saToken, err := testutil.ServiceAccountToken(ctx, k8s, cs, benchNS, "gateway")
	benchMust(b, err)
	return &benchEnv{ctx: ctx, k8s: k8s, cached: cached, cs: cs, saToken: saToken, tenv: env}
}

// addHarness creates the external Codex harness of ns on the app-server at
// url and waits until the controller made it Ready.
func (e *benchEnv) addHarness(b *testing.B, ns, url string) {
	b.Helper()
	h, err := testutil.ExternalCodex(e.ctx, e.k8s, ns, url, benchWSToken)
	benchMust(b, err)
	_, err = testutil.WaitHarnessCondition(e.ctx, e.k8s, h, v1alpha1.HarnessConditionReady, metav1.ConditionTrue, 40*time.Second)
	benchMust(b, err)
}

// startDouble starts the zero-latency app-server double (it answers every
// turn with benchReply) as the harness of doubleNS; it stops at b's end.
func (e *benchEnv) startDouble(b *testing.B) *appserverdouble.Server {
	b.Helper()
	double, err := appserverdouble.New(appserverdouble.Options{Token: benchWSToken, Reply: benchReply})
	benchMust(b, err)
	b.Cleanup(double.Close)
	e.addHarness(b, doubleNS, double.URL)
	return double
}

// maxBenchStreams bounds the turns a benchmark runs at once on one arm.
const maxBenchStreams = 256

// benchSession is an AgentSession of a benchmark namespace: its turns run on
// that namespace's harness.
type benchSession struct {
	ns, name string
	key      string // the store's key (engine.SessionKey)
}

func (e *benchEnv) newSession(b *testing.B, ns, name string) benchSession {
	b.Helper()
	as := &v1alpha1.AgentSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.AgentSessionSpec{AgentID: "main", SessionKey: "agent:main:" + name, SessionID: name + "-id", Model: benchModel},
	}
	benchMust(b, e.k8s.Create(e.ctx, as))
	// Its first turn must find it in the informer cache.
	for e.cached.Get(e.ctx, client.ObjectKeyFromObject(as), &v1alpha1.AgentSession{}) != nil {
		benchMust(b, e.ctx.Err())
		time.Sleep(time.Millisecond)
	}
	return benchSession{ns: ns, name: name, key: engine.SessionKey(as)}
}

// benchArm is one dispatcher: an engine on a store, and its Handler behind
// httptest.NewTLSServer with the real KubeAuthorizer (and the Handler's
// default verdict cache). Its client is the test server's (it trusts the
// certificate; HTTP/1.1, kept-alive connections, as many kept idle as
// turns run at once: a gateway's pool, not a new TLS handshake per turn).
type benchArm struct {
	env    *benchEnv
	store  store.Store
	eng    *engine.Engine
	url    string
	client *http.Client
}

// newArm builds an arm on st (which the caller closes after the arm: its
// Cleanup is registered first).
func (e *benchEnv) newArm(b *testing.B, st store.Store, opts engine.Options) *benchArm {
	b.Helper()
	opts.ExternalDial = testutil.LoopbackExternalDial
	eng := engine.New(e.cached, e.cached, st, opts)
	b.Cleanup(eng.Close)
	handler, err := httpapi.NewHandler(httpapi.Config{
		Engine: eng, Store: st, Sessions: e.cached,
		Authorizer: httpapi.NewKubeAuthorizer(e.cs, benchAud),
	})
	benchMust(b, err)
	srv := httptest.NewTLSServer(handler)
	b.Cleanup(srv.Close)
	srv.Client().Transport.(*http.Transport).MaxIdleConnsPerHost = maxBenchStreams
	return &benchArm{env: e, store: st, eng: eng, url: srv.URL, client: srv.Client()}
}

// httpTiming is one turn through the API, each time from before the POST.
type httpTiming struct {
	start   time.Time
	result  time.Duration // the `result` event read: what a gateway waits for
	end     time.Duration // the stream's end: the run's end is in the store
	settled time.Duration // the session's lease free: the engine's turn is over (settle)
}

// viaHTTP posts a turn of s with runID as the gateway does and reads its
// SSE stream to `result`, then to its end, then waits for the turn to
// settle. It returns errors rather than failing b: concurrent turns call it
// from goroutines of their own.
func (a *benchArm) viaHTTP(s benchSession, runID string) (httpTiming, error) {
	t, err := a.post(s, runID)
	if err != nil {
		return t, err
	}
	if err := a.settle(s); err != nil {
		return t, err
	}
	t.settled = time.Since(t.start)
	return t, nil
}

// post is viaHTTP without the wait for the turn to settle (t.settled is
// zero).
func (a *benchArm) post(s benchSession, runID string) (httpTiming, error) {
	var t httpTiming
	body := fmt.Sprintf(`{"runId":%q,"prompt":%q}`, runID, benchPrompt)
	start := time.Now()
	t.start = start
	req, err := http.NewRequestWithContext(a.env.ctx, http.MethodPost,
		a.url+"/v1/namespaces/"+s.ns+"/agentsessions/"+s.name+"/turns", strings.NewReader(body))
	if err != nil {
		return t, err
	}
	req.Header.Set("Authorization", "Bearer "+a.env.saToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		return t, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return t, fmt.Errorf("http turn %s: status %d: %s", runID, resp.StatusCode, msg)
	}
	typ, data, err := readUntilResult(resp.Body)
	t.result = time.Since(start)
	if err != nil {
		return t, fmt.Errorf("http turn %s: %w", runID, err)
	}
	if err := checkResult(typ, data); err != nil {
		return t, fmt.Errorf("http turn %s: %w", runID, err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return t, fmt.Errorf("http turn %s: read the stream to its end: %w", runID, err)
	}
	t.end = time.Since(start)
	return t, nil
}

// directTiming is one turn through Engine.Turn, each time from the call.
type directTiming struct {
	result time.Duration // the `result` event reached the Sink (the end point of httpTiming.result)
	ret    time.Duration // Turn returned: the run's end is in the store
}

// direct runs a turn of s with runID by a direct Engine.Turn on the arm's
// engine (no HTTP, no authentication, no SSE), checks its result, then waits
// for the turn to settle as viaHTTP does. It returns errors rather than
// failing b, like viaHTTP.
func (a *benchArm) direct(s benchSession, runID string) (directTiming, error) {
	t, err := a.turn(s, runID)
	if err != nil {
		return t, err
	}
	return t, a.settle(s)
}

// turn is direct without the wait for the turn to settle.
func (a *benchArm) turn(s benchSession, runID string) (directTiming, error) {
	var t directTiming
	var result json.RawMessage
	start := time.Now()
	err := a.eng.Turn(a.env.ctx, s.ns, s.name, &wire.TurnRequest{Attempt: wire.Attempt{RunID: runID}, Prompt: benchPrompt},
		func(typ string, payload json.RawMessage) {
			if typ == wire.EventResult {
				t.result, result = time.Since(start), payload
			}
		})
	t.ret = time.Since(start)
	if err != nil {
		return t, fmt.Errorf("direct turn %s: %w", runID, err)
	}
	if err := checkResult(wire.EventResult, result); err != nil {
		return t, fmt.Errorf("direct turn %s: %w", runID, err)
	}
	return t, nil
}

// settle waits until the engine released the session's lease — the last
// thing a turn does, after its status writes, the run's end and the
// transcript's sync — by taking the lease and giving it back: the next timed
// turn starts with this one fully over.
func (a *benchArm) settle(s benchSession) error {
	lease, err := a.store.Acquire(a.env.ctx, s.key, "bench-settle", time.Minute)
	if err != nil {
		return fmt.Errorf("settle %s: %w", s.name, err)
	}
	return a.store.Release(a.env.ctx, lease)
}

// checkResult says whether an event is the stub's trivial turn ending well.
func checkResult(typ string, data []byte) error {
	var got wire.ResultEvent
	if typ != wire.EventResult || json.Unmarshal(data, &got) != nil ||
		got.Terminal.Kind != wire.TerminalOK || !slices.Equal(got.AssistantTexts, []string{benchReply}) {
		return fmt.Errorf("want a result with the text %q, got %s %s", benchReply, typ, data)
	}
	return nil
}

// readUntilResult reads SSE events until `result` or `error` and returns its
// type and data.
func readUntilResult(r io.Reader) (string, []byte, error) {
	var typ string
	var data []byte
	err := sse.Read(r, func(ev sse.Event) bool {
		if ev.Type == wire.EventResult || ev.Type == wire.EventError {
			typ, data = ev.Type, ev.Data
			return false
		}
		return true
	})
	if err != nil {
		return "", nil, err
	}
	if typ == "" {
		return "", nil, errors.New("event stream ended without result")
	}
	return typ, data, nil
}

// percentile is the nearest-rank p-th percentile of xs (ms).
func percentile(xs []float64, p float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	k := int(math.Ceil(float64(len(s))*p/100)) - 1
	k = max(0, min(k, len(s)-1))
	return s[k]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func benchMust(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}
