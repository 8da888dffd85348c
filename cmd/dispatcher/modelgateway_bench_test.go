package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/modelcred"
	"github.com/openclaw/harness-operator/internal/dispatcher/turntoken"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/benchhist"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// gatewayAddedMetric is the gateway's own count of the time it adds to a
// forwarded request (internal/dispatcher/modelgateway, metrics.go).
const gatewayAddedMetric = "harness_model_gateway_added_seconds"

// The lease and grant the benchmark's credential rides; the holds endpoint
// says it holds.
const (
	benchLease = "bench/uid-1"
	benchToken = 7
)

// BenchmarkModelGateway measures what `dispatcher model-gateway` adds to a
// model request, the binary in its own process as the chart runs it: in
// front of the stub model (this process), reading the harness and its
// credential Secret from a real kube-apiserver (envtest), asking a holds
// endpoint (this process, over TLS, as the dispatcher's) on every request.
// The client (this process) sends a Codex-sized request (about 26 KB,
// streamed answer) one at a time, alternating between two arms: through
// the gateway (HTTPS, the credential) and straight to the stub (the
// provider key). Each pair's first arm alternates too.
//
// The sub-benchmarks, one gateway process each, differ in the gateway's
// RBAC: rbac=get is the chart's (get on AgentHarnesses and Secrets: both
// are read on every request), rbac=get-watch adds watch, with which the
// gateway keeps a harness's upstream while watches of the two objects see
// no change (modelgateway.WatchedUpstreams). The stub's answers have 11
// events; rbac=get-watch,deltas=200 streams 208 per answer, which puts the
// gateway's CPU per forwarded event beside its CPU per request.
//
// Figures of each (pairs is the number of requests per arm):
//   - added-p50-ms, added-p99-ms and their 95 % intervals (-ci-low-ms,
//     -ci-ms): the gateway's harness_model_gateway_added_seconds over the
//     loop, timestamps taken inside the gateway: from the request's headers
//     to the upstream request's last byte handed to the connection
//     (admission, holds, the harness and its Secret, the dial when there is
//     one), plus from the upstream's response headers to their flush to
//     the client. Quantiles are bucket upper bounds
//     (benchhist.Histogram.Figures);
//   - gateway-cpu-ms/request: the gateway process's CPU time over the loop
//     (/proc, 10 ms ticks) ÷ its requests; apiserver-cpu-ms/request beside
//     it, and events/answer (the gateway writes and flushes what each read
//     of the upstream returns: one event or several);
//   - ttft-diff-p50-ms: the median over pairs of the time to the first
//     output_text delta through the gateway minus direct, with its 95 %
//     bootstrap interval (-ci-low-ms, -ci-ms); ttft-gateway-p50-ms and
//     ttft-direct-p50-ms beside; ttft-diff-p50-block-spread-ms is the
//     largest minus the smallest median of the loop's blocks (its noise
//     within the run, to compare with the goal).
//
// -short runs a few pairs (a check that it works, not a measurement).
func BenchmarkModelGateway(b *testing.B) {
	c := startBenchCluster(b)
	for _, v := range []struct {
		name   string
		watch  bool
		deltas int
	}{{"rbac=get", false, 0}, {"rbac=get-watch", true, 0}, {"rbac=get-watch,deltas=200", true, 200}} {
		b.Run(v.name, func(b *testing.B) { benchGatewayLoop(b, c.startGateway(b, v.name, v.watch), v.deltas) })
	}
}

// benchGatewayLoop runs the paired loop through g and reports its figures.
// With deltas, every answer streams that many text deltas (else the stub's
// default answer, three).
func benchGatewayLoop(b *testing.B, g *benchGateway, deltas int) {
	pairs, blocks, warm := 1500, 3, 100
	if deltas > 0 {
		pairs = 500
	}
	if testing.Short() {
		pairs, blocks, warm = 60, 3, 10
	}
	requests0 := len(g.stub.Requests())
	body := codexSizedBody(b)
	words := make([]string, deltas)
	for i := range words {
		words[i] = "word "
	}
	script := func() {
		if deltas > 0 {
			g.stub.Enqueue(stubmodel.Text(strings.Join(words, ""), words...))
		}
	}
	through := func() (time.Duration, error) {
		script()
		return firstToken(g.gatewayClient, "https://"+g.addr+"/v1/responses", g.credential, body)
	}
	direct := func() (time.Duration, error) {
		script()
		return firstToken(g.directClient, g.stub.BaseURL()+"/responses", benchProviderKey, body)
	}
	for range warm {
		for _, arm := range []func() (time.Duration, error){through, direct} {
			if _, err := arm(); err != nil {
				b.Fatal(err)
			}
		}
	}

	hist0, err := benchhist.Scrape(http.DefaultClient, g.metricsURL, gatewayAddedMetric)
	benchMust(b, err)
	events0 := answerEvents.Load()
	cpu0, api0 := g.cpu(b)
	b.ResetTimer()
	viaGateway, viaDirect, diffs := make([]float64, pairs), make([]float64, pairs), make([]float64, pairs)
	for i := range pairs {
		arms := [2]func() (time.Duration, error){through, direct}
		if i%2 == 1 {
			arms[0], arms[1] = direct, through
		}
		var took [2]time.Duration
		for k, arm := range arms {
			d, err := arm()
			if err != nil {
				b.Fatal(err)
			}
			took[k] = d
		}
		if i%2 == 1 {
			took[0], took[1] = took[1], took[0]
		}
		viaGateway[i], viaDirect[i] = msOf(took[0]), msOf(took[1])
		diffs[i] = viaGateway[i] - viaDirect[i]
	}
	b.StopTimer()
	cpu1, api1 := g.cpu(b)
	hist1, err := benchhist.Scrape(http.DefaultClient, g.metricsURL, gatewayAddedMetric)
	benchMust(b, err)

	if got, want := len(g.stub.Requests())-requests0, 2*(warm+pairs); got != want {
		b.Fatalf("the stub served %d requests, want %d", got, want)
	}
	added := hist1.Minus(hist0).Figures()
	if added.Samples != uint64(pairs) {
		b.Fatalf("the gateway counted %d added times over the loop, want %d (one per forwarded request)", added.Samples, pairs)
	}
	diff, low, high := benchhist.BootstrapMedian(diffs, 2000, 1)
	spread := blockSpread(diffs, blocks)
	b.ReportMetric(float64(pairs), "pairs")
	b.ReportMetric(float64(answerEvents.Load()-events0)/float64(2*pairs), "events/answer")
	b.ReportMetric(added.P50Ms, "added-p50-ms")
	b.ReportMetric(added.P50LowMs, "added-p50-ci-low-ms")
	b.ReportMetric(added.P50HighMs, "added-p50-ci-ms")
	b.ReportMetric(added.P99Ms, "added-p99-ms")
	b.ReportMetric(added.P99LowMs, "added-p99-ci-low-ms")
	b.ReportMetric(added.P99HighMs, "added-p99-ci-ms")
	b.ReportMetric(msOf(cpu1-cpu0)/float64(pairs), "gateway-cpu-ms/request")
	b.ReportMetric(msOf(api1-api0)/float64(pairs), "apiserver-cpu-ms/request")
	b.ReportMetric(benchhist.Median(viaGateway), "ttft-gateway-p50-ms")
	b.ReportMetric(benchhist.Median(viaDirect), "ttft-direct-p50-ms")
	b.ReportMetric(diff, "ttft-diff-p50-ms")
	b.ReportMetric(low, "ttft-diff-p50-ci-low-ms")
	b.ReportMetric(high, "ttft-diff-p50-ci-ms")
	b.ReportMetric(spread, "ttft-diff-p50-block-spread-ms")
	b.Logf("%d pairs: added p50 %.3f ms [%.3f, %.3f], p99 %.3f ms [%.3f, %.3f]%s; gateway CPU %.3f ms/request; TTFT through %.3f, direct %.3f, difference p50 %.3f ms [%.3f, %.3f], blocks' spread %.3f ms",
		pairs, added.P50Ms, added.P50LowMs, added.P50HighMs, added.P99Ms, added.P99LowMs, added.P99HighMs,
		map[bool]string{true: " (a rank past the last bucket)"}[added.Overflowed],
		msOf(cpu1-cpu0)/float64(pairs), benchhist.Median(viaGateway), benchhist.Median(viaDirect), diff, low, high, spread)
}

// blockSpread is the largest minus the smallest median of diffs cut into n
// consecutive blocks.
func blockSpread(diffs []float64, n int) float64 {
	size := len(diffs) / n
	if size == 0 {
		return 0
	}
	lo, hi := 0.0, 0.0
	for k := range n {
		m := benchhist.Median(diffs[k*size : (k+1)*size])
		if k == 0 || m < lo {
			lo = m
		}
		if k == 0 || m > hi {
			hi = m
		}
	}
	return hi - lo
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func benchMust(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

// benchProviderKey is the harness's provider key the gateway injects; the
// direct arm sends it itself.
const benchProviderKey = "sk-bench-provider-key"

// benchCluster is what both gateways share: the control plane, the stub
// model, the holds endpoint, and one harness whose upstream is the stub.
type benchCluster struct {
	env                        *testutil.Env
	apiServerPid               int
	ns                         string
	harness                    *v1alpha1.AgentHarness
	credKey                    *modelcred.Key
	stub                       *stubmodel.Server
	holdsURL, holdsCA, tokenFL string
	bin, dir                   string
}

// benchGateway is one running gateway and what the arms need.
type benchGateway struct {
	addr, metricsURL string
	proc             *testutil.Process
	apiServerPid     int
	stub             *stubmodel.Server
	credential       string
	gatewayClient    *http.Client
	directClient     *http.Client
}

// cpu is the CPU time the gateway and the kube-apiserver used so far.
func (g *benchGateway) cpu(b *testing.B) (gateway, apiServer time.Duration) {
	gateway, err := testutil.CPUTime(g.proc.Pid())
	benchMust(b, err)
	apiServer, err = testutil.CPUTime(g.apiServerPid)
	benchMust(b, err)
	return gateway, apiServer
}

// startBenchCluster starts the control plane, the stub model and a holds
// endpoint, creates the harness, and builds the binary.
func startBenchCluster(b *testing.B) *benchCluster {
	binDir := b.TempDir()
	built := make(chan error, 1)
	go func() { built <- testutil.BuildBinaries(binDir, "./cmd/dispatcher") }()
	env, err := testutil.StartEnv()
	benchMust(b, err)
	b.Cleanup(func() { _ = env.Stop() })
	pids, err := env.ControlPlanePids()
	benchMust(b, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	k8s := env.Client
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "model-gateway-bench-"}}
	benchMust(b, k8s.Create(ctx, nsObj))
	ns := nsObj.Name

	rawKey := []byte(strings.Repeat("b", turntoken.KeyBytes))
	benchMust(b, k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: defaultTurnTokenSecret},
		Data: map[string][]byte{turntoken.DataKey: rawKey}}))
	credKey, err := modelcred.DeriveKey(rawKey)
	benchMust(b, err)
	stub := stubmodel.Start(b)
	benchMust(b, k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "provider"},
		StringData: map[string]string{"api-key": benchProviderKey}}))
	h := &v1alpha1.AgentHarness{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "codex"},
		Spec: v1alpha1.AgentHarnessSpec{
			HarnessID: "codex", Adapter: v1alpha1.AdapterCodexAppServer,
			AppServer: &v1alpha1.AppServerWorkload{Image: "codex@sha256:" + strings.Repeat("a", 64)},
			ModelGateway: &v1alpha1.ModelGateway{BaseURL: stub.BaseURL(),
				CredentialSecretRef: v1alpha1.SecretKeyReference{Name: "provider", Key: "api-key"}},
		},
	}
	benchMust(b, k8s.Create(ctx, h))
	dir := b.TempDir()
	holdsURL, holdsCA, tokenFile := benchHolds(b, dir)
	benchMust(b, <-built)
	return &benchCluster{env: env, apiServerPid: pids[1], ns: ns, harness: h, credKey: credKey, stub: stub,
		holdsURL: holdsURL, holdsCA: holdsCA, tokenFL: tokenFile, bin: filepath.Join(binDir, "dispatcher"), dir: dir}
}

// startGateway starts a gateway as a user of its own with the chart's
// grants in the harness's namespace (get on AgentHarnesses and Secrets),
// plus watch on both when watch is set, and seals a credential of a grant
// that holds.
func (c *benchCluster) startGateway(b *testing.B, name string, watch bool) *benchGateway {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	user := "gateway-bench-" + strings.NewReplacer("=", "-").Replace(name)
	verbs := []string{"get"}
	if watch {
		verbs = append(verbs, "watch")
	}
	benchMust(b, c.env.Client.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: user},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"agentharnesses"}, Verbs: verbs},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: verbs},
		}}))
	benchMust(b, c.env.Client.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}))
	u, err := c.env.AddUser(envtest.User{Name: user})
	benchMust(b, err)
	kc, err := u.KubeConfig()
	benchMust(b, err)
	dir := b.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	benchMust(b, os.WriteFile(kubeconfig, kc, 0o600))
	addr, probe := benchFreeAddr(b), benchFreeAddr(b)
	caOut := filepath.Join(dir, "gateway-ca.pem")
	proc, err := testutil.StartProcess("model-gateway", c.bin, dir, nil,
		modelGatewayCommand, "--kubeconfig="+kubeconfig, "--bind-address="+addr, "--probe-bind-address="+probe,
		"--dispatcher-url="+c.holdsURL, "--dispatcher-ca-file="+c.holdsCA, "--token-file="+c.tokenFL,
		"--turn-token-secret-namespace="+c.ns, "--tls-ca-out="+caOut, "--allow-loopback-upstreams", "--shutdown-grace=5s")
	benchMust(b, err)
	b.Cleanup(func() { proc.Stop(10 * time.Second) })
	if err := proc.WaitReady("http://"+probe+"/readyz", 60*time.Second); err != nil {
		b.Fatalf("%v\n%s", err, proc.Tail(4000))
	}
	caPEM, err := os.ReadFile(caOut)
	benchMust(b, err)
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		b.Fatal("--tls-ca-out holds no certificate")
	}
	now := time.Now()
	cred, err := modelcred.Seal(c.credKey, modelcred.Claims{
		Audience: modelcred.Audience, Lease: benchLease, Token: benchToken, Run: "run-bench",
		Harness: modelcred.Harness{Namespace: c.ns, Name: c.harness.Name, UID: string(c.harness.UID)},
		Models:  []string{benchModel}, ExpiresAt: now.Add(2 * time.Hour),
	}, now)
	benchMust(b, err)
	return &benchGateway{
		addr: addr, metricsURL: "http://" + probe + "/metrics", proc: proc, apiServerPid: c.apiServerPid, stub: c.stub, credential: cred,
		gatewayClient: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}},
		directClient:  &http.Client{Transport: &http.Transport{}},
	}
}

// benchFreeAddr is a free loopback address (dispatchertest.FreeAddr takes
// a *testing.T).
func benchFreeAddr(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	benchMust(b, err)
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// benchHolds is a dispatcher's holds endpoint over TLS: benchLease's grant
// benchToken holds, nothing else does. It returns its URL, its CA file and
// the gateway's token file.
func benchHolds(b *testing.B, dir string) (url, caFile, tokenFile string) {
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != wire.ModelGatewayHoldsPath || r.Header.Get("Authorization") != "Bearer gateway-bench-token" {
			http.Error(w, `{"code":"Forbidden","message":"not the gateway"}`, http.StatusForbidden)
			return
		}
		var q wire.HoldsRequest
		if err := wire.DecodeStrict(r.Body, &q); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_ = json.NewEncoder(w).Encode(wire.HoldsAnswer{Holds: q.Lease == benchLease && q.Token == benchToken})
	}))
	b.Cleanup(ts.Close)
	caFile, tokenFile = filepath.Join(dir, "holds-ca.crt"), filepath.Join(dir, "token")
	benchMust(b, os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o600))
	benchMust(b, os.WriteFile(tokenFile, []byte("gateway-bench-token\n"), 0o600))
	return ts.URL, caFile, tokenFile
}

// benchModel is the model the credential admits and the body names.
const benchModel = "gpt-bench"

// codexSizedBody is a Responses request the size and shape of a Codex
// first turn (about 26 KB: its tools and instructions make most of it).
func codexSizedBody(b *testing.B) []byte {
	tools := make([]map[string]any, 24)
	for i := range tools {
		tools[i] = map[string]any{"type": "function", "name": fmt.Sprintf("tool_%d", i), "strict": false,
			"description": strings.Repeat("Describes what the tool does and when to call it. ", 18),
			"parameters": map[string]any{"type": "object", "properties": map[string]any{
				"command": map[string]any{"type": "string", "description": "the command"}}, "required": []string{"command"}}}
	}
	raw, err := json.Marshal(map[string]any{
		"model": benchModel, "stream": true, "store": false, "parallel_tool_calls": false, "tool_choice": "auto",
		"reasoning": nil, "include": []string{}, "prompt_cache_key": "bench-thread",
		"input": []any{map[string]any{"type": "message", "role": "user",
			"content": []any{map[string]any{"type": "input_text", "text": "through the gateway, or not"}}}},
		"tools": tools,
	})
	benchMust(b, err)
	return raw
}

// answerEvents counts the server-sent events the arms read.
var answerEvents atomic.Int64

// firstToken posts body to url and returns the time from the request's
// start to the first output_text delta read; it reads the answer to its
// end and fails unless the response completed.
func firstToken(c *http.Client, url, bearer string, body []byte) (time.Duration, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+bearer)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1000))
		return 0, fmt.Errorf("%s: %d %s", url, resp.StatusCode, msg)
	}
	var first time.Duration
	completed := false
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadString('\n')
		if strings.HasPrefix(line, "event: ") {
			answerEvents.Add(1)
			switch strings.TrimSpace(line[len("event: "):]) {
			case "response.output_text.delta":
				if first == 0 {
					first = time.Since(start)
				}
			case "response.completed":
				completed = true
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if first == 0 || !completed {
		return 0, fmt.Errorf("%s: the answer had no output_text delta or did not complete", url)
	}
	return first, nil
}
