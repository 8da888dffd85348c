package dispatchapi_test

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

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/controllers/agentharness"
	"github.com/openclaw/harness-operator/internal/codextest"
	"github.com/openclaw/harness-operator/internal/dispatch"
	"github.com/openclaw/harness-operator/internal/dispatchapi"
	"github.com/openclaw/harness-operator/internal/journal"
	"github.com/openclaw/harness-operator/internal/sse"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/wire"
	"github.com/openclaw/harness-operator/test/stubmodel"
)

// BenchmarkDispatcherOverhead measures the latency the dispatcher's HTTP API
// adds over a direct Engine.Turn (issue 7: "the dispatcher's added latency
// over a direct engine call for 200 trivial turns (p50/p99, measured side by
// side in one run)").
//
// One run has one envtest control plane, one real `codex app-server`
// (WebSocket) behind an external AgentHarness that the real agentharness
// controller makes Ready, the stub model answering every turn with a short
// text, one journal and one real dispatch.Engine. Both arms use that same
// engine:
//
//   - direct: Engine.Turn with a fresh runId; the time is from the call to
//     the `result` event reaching the Sink (the same end point as the HTTP
//     arm). The time to Turn's return (which adds the status writes after
//     `result`) is reported too.
//   - http: POST …/turns on httptest.NewTLSServer(Handler) with a real
//     ServiceAccount token (TokenReview and SubjectAccessReview through
//     KubeAuthorizer, the Handler's default verdict cache), a plain
//     http.Client (the test server's, which trusts its certificate; kept-alive
//     connections), reading the SSE stream up to the `result` event.
//
// The turns are interleaved (direct, http, direct, http, …) so drifts in
// load hit both arms alike. The engine serializes the turns of one session,
// so each arm has its own session ("direct" and "http"): no turn waits for
// the other arm's lock, and both arms' Codex threads grow by the same
// history. Every timed turn starts with the previous one fully finished:
// Engine.Turn returned, or (untimed) the HTTP stream read to its end and the
// session's status showing the run as lastTurn with no activeTurn, so the
// engine's status writes after `result` never overlap the next timed turn. One untimed warm-up turn per arm
// first creates its Codex thread, its pool connection and the first auth
// verdict. The difference of medians (http p50 − direct p50) is the added
// latency; the paired per-turn differences are reported too. Timings are
// reported, never asserted.
//
// Run it (it does not run under plain `go test`):
//
//	KUBEBUILDER_ASSETS=… CODEX_BIN=$(hack/setup-codex.sh) go test -run '^$' \
//	  -bench BenchmarkDispatcherOverhead -benchtime 1x ./internal/dispatchapi/
func BenchmarkDispatcherOverhead(b *testing.B) {
	const (
		turns     = 200
		benchNS   = "latency"
		token     = "dispatchapi-latency-token-3f9a"
		model     = "openai/stub-model"
		aud       = "harness-dispatcher"
		marker    = "latency-bench"
		replyText = "ok."
	)
	if os.Getenv("KUBEBUILDER_ASSETS") == "" || os.Getenv(codextest.EnvBin) == "" {
		b.Fatal("KUBEBUILDER_ASSETS and CODEX_BIN must be set: KUBEBUILDER_ASSETS=... CODEX_BIN=$(hack/setup-codex.sh) go test -run '^$' -bench BenchmarkDispatcherOverhead -benchtime 1x ./internal/dispatchapi/")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	stub, err := stubmodel.New()
	benchMust(b, err)
	defer stub.Close()
	replies := make([]stubmodel.Reply, 2*(turns+1)*b.N)
	for i := range replies {
		replies[i] = stubmodel.Text(replyText)
	}
	stub.When(marker, replies...)
	codex, err := codextest.StartErr(b, codextest.Options{
		ProviderURL: stub.BaseURL(), Transport: codextest.WebSocket, WSToken: token,
	})
	benchMust(b, err)

	env, err := testutil.StartEnv()
	benchMust(b, err)
	defer func() { _ = env.Stop() }()
	k8s := env.Client
	cs, err := kubernetes.NewForConfig(env.Config)
	benchMust(b, err)

	benchMust(b, k8s.Create(ctx, &v1alpha1.RuntimePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "codex-only"},
		Spec: v1alpha1.RuntimePolicySpec{
			Providers:        []v1alpha1.ProviderRuntimePolicy{{Provider: "openai", Runtime: "codex"}},
			SessionOverrides: v1alpha1.SessionOverridesDeny,
		},
	}))
	jrnl, err := journal.Open(b.TempDir(), journal.Options{})
	benchMust(b, err)
	defer func() { _ = jrnl.Close() }()
	eng := dispatch.New(k8s, k8s, jrnl, dispatch.Options{ExternalDial: testutil.LoopbackExternalDial})
	defer eng.Close()
	mgr, err := testutil.StartManager(ctx, env, func(m ctrl.Manager) error {
		return (&agentharness.Reconciler{Client: m.GetClient(), MaxConcurrentReconciles: 4,
			HarnessNamespaces: []string{benchNS}, ExternalDial: testutil.LoopbackExternalDial}).SetupWithManager(m)
	})
	benchMust(b, err)
	defer func() { _ = mgr.Stop() }()

	handler, err := dispatchapi.NewHandler(dispatchapi.Config{
		Engine: eng, Store: jrnl, Sessions: k8s,
		Authorizer: dispatchapi.NewKubeAuthorizer(cs, aud),
	})
	benchMust(b, err)
	srv := httptest.NewTLSServer(handler)
	defer srv.Close()
	httpClient := srv.Client()

	// Namespace, gateway ServiceAccount with the turns grant, the harness.
	benchMust(b, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNS}}))
	benchMust(b, k8s.Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "harness-gateway-latency"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{dispatchapi.APIGroup}, Resources: []string{"agentsessions/turns"}, Verbs: []string{"create", "get"}}},
	}))
	benchMust(b, k8s.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: benchNS, Name: "gateway"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "harness-gateway-latency"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: benchNS, Name: "gateway"}},
	}))
	saToken, err := testutil.ServiceAccountToken(ctx, k8s, cs, benchNS, "gateway")
	benchMust(b, err)
	h, err := testutil.ExternalCodex(ctx, k8s, benchNS, codex.URL, token)
	benchMust(b, err)
	_, err = testutil.WaitHarnessCondition(ctx, k8s, h, v1alpha1.HarnessConditionReady, metav1.ConditionTrue, 40*time.Second)
	benchMust(b, err)
	for _, name := range []string{"direct", "http"} {
		benchMust(b, k8s.Create(ctx, &v1alpha1.AgentSession{
			ObjectMeta: metav1.ObjectMeta{Namespace: benchNS, Name: name},
			Spec:       v1alpha1.AgentSessionSpec{AgentID: "main", SessionKey: "agent:main:" + name, SessionID: name + "-id", Model: model},
		}))
	}

	prompt := marker + ": reply ok"
	direct := func(runID string) (toResult, toReturn time.Duration) {
		var res time.Duration
		var got wire.ResultEvent
		start := time.Now()
		err := eng.Turn(ctx, benchNS, "direct", &wire.TurnRequest{Attempt: wire.Attempt{RunID: runID}, Prompt: prompt},
			func(typ string, payload json.RawMessage) {
				if typ == wire.EventResult {
					res = time.Since(start)
					_ = json.Unmarshal(payload, &got)
				}
			})
		ret := time.Since(start)
		benchMust(b, err)
		if res == 0 || got.Terminal.Kind != wire.TerminalOK || !slices.Equal(got.AssistantTexts, []string{replyText}) {
			b.Fatalf("direct turn %s: result %+v", runID, got)
		}
		return res, ret
	}
	turnURL := srv.URL + "/v1/namespaces/" + benchNS + "/agentsessions/http/turns"
	viaHTTP := func(runID string) time.Duration {
		body := fmt.Sprintf(`{"runId":%q,"prompt":%q}`, runID, prompt)
		start := time.Now()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, turnURL, strings.NewReader(body))
		benchMust(b, err)
		req.Header.Set("Authorization", "Bearer "+saToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := httpClient.Do(req)
		benchMust(b, err)
		defer func() { _ = resp.Body.Close() }()
		if resp.StatusCode != http.StatusOK {
			msg, _ := io.ReadAll(resp.Body)
			b.Fatalf("http turn %s: status %d: %s", runID, resp.StatusCode, msg)
		}
		typ, data, err := readUntilResult(resp.Body)
		elapsed := time.Since(start)
		benchMust(b, err)
		var got wire.ResultEvent
		benchMust(b, json.Unmarshal(data, &got))
		if typ != wire.EventResult || got.Terminal.Kind != wire.TerminalOK || !slices.Equal(got.AssistantTexts, []string{replyText}) {
			b.Fatalf("http turn %s: %s %s", runID, typ, data)
		}
		// Drain the stream, then (untimed) wait for the engine's status
		// writes after `result` to land, as a direct turn's return does:
		// the next turn of either arm starts with this one fully finished.
		_, _ = io.Copy(io.Discard, resp.Body)
		waitTurnSettled(ctx, b, k8s, client.ObjectKey{Namespace: benchNS, Name: "http"}, runID)
		return elapsed
	}

	// Warm-up (untimed): Codex threads, pool connection, auth verdict.
	direct("warm-direct")
	viaHTTP("warm-http")

	var directRes, directRet, httpRes, diffs []float64
	b.ResetTimer()
	for n := range b.N {
		for i := range turns {
			dRes, dRet := direct(fmt.Sprintf("direct-%d-%d", n, i))
			hRes := viaHTTP(fmt.Sprintf("http-%d-%d", n, i))
			directRes = append(directRes, ms(dRes))
			directRet = append(directRet, ms(dRet))
			httpRes = append(httpRes, ms(hRes))
			diffs = append(diffs, ms(hRes)-ms(dRes))
		}
	}
	b.StopTimer()

	dP50, dP99 := percentile(directRes, 50), percentile(directRes, 99)
	rP50, rP99 := percentile(directRet, 50), percentile(directRet, 99)
	hP50, hP99 := percentile(httpRes, 50), percentile(httpRes, 99)
	pP50, pP99 := percentile(diffs, 50), percentile(diffs, 99)
	b.ReportMetric(dP50, "direct-p50-ms")
	b.ReportMetric(dP99, "direct-p99-ms")
	b.ReportMetric(rP50, "direct-return-p50-ms")
	b.ReportMetric(rP99, "direct-return-p99-ms")
	b.ReportMetric(hP50, "http-p50-ms")
	b.ReportMetric(hP99, "http-p99-ms")
	b.ReportMetric(hP50-dP50, "added-p50-ms")
	b.ReportMetric(hP99-dP99, "added-p99-ms")
	b.ReportMetric(pP50, "paired-diff-p50-ms")
	b.ReportMetric(pP99, "paired-diff-p99-ms")
	b.Logf("%d turns per arm, interleaved; one session per arm; the same engine, codex app-server and stub model", len(directRes))
	b.Logf("direct Engine.Turn to result:  p50 %.3f ms  p99 %.3f ms", dP50, dP99)
	b.Logf("direct Engine.Turn to return:  p50 %.3f ms  p99 %.3f ms", rP50, rP99)
	b.Logf("HTTPS + SSE to result:         p50 %.3f ms  p99 %.3f ms", hP50, hP99)
	b.Logf("added (http - direct):         p50 %.3f ms  p99 %.3f ms (difference of the arms' percentiles)", hP50-dP50, hP99-dP99)
	b.Logf("paired per-turn difference:    p50 %.3f ms  p99 %.3f ms", pP50, pP99)
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

// waitTurnSettled waits until the session's status shows runID as its last
// turn and no active turn (the engine's final status write).
func waitTurnSettled(ctx context.Context, b *testing.B, k8s client.Client, key client.ObjectKey, runID string) {
	b.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var sess v1alpha1.AgentSession
	for {
		benchMust(b, k8s.Get(ctx, key, &sess))
		if sess.Status.ActiveTurn == nil && sess.Status.LastTurn != nil && sess.Status.LastTurn.RunID == runID {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("AgentSession %s: turn %s not settled: %+v", key, runID, sess.Status)
		}
		time.Sleep(2 * time.Millisecond)
	}
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
