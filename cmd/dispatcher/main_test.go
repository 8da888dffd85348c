package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
	"github.com/openclaw/harness-operator/internal/dispatcher/turntoken"
	"github.com/openclaw/harness-operator/internal/platform/netguard"
	"github.com/openclaw/harness-operator/internal/testutil/dispatchertest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// The suite runs the dispatcher's run() against envtest's kube-apiserver
// (real TokenReview, SubjectAccessReview, RBAC, leader-election Lease), with
// the real agentharness controller making an external AgentHarness `codex`
// Ready, a real `codex app-server` behind it and the stub model, and drives
// it over real HTTPS trusting only the CA the dispatcher wrote. It covers
// what run() adds around the API: probes, TLS, the journal lock, leader
// election and draining on shutdown. The API itself (turns, tool results,
// reconnects, every error answer) is driven against the dispatcher binary,
// as its own process, by test/dispatcher.

const (
	serverToken = dispatchertest.ServerToken
	testModel   = dispatchertest.TestModel
	audience    = dispatchertest.Audience
)

// elections counts the lost leader-election attempts of the dispatchers
// this process runs.
var elections = &leaseLosses{changed: make(chan struct{})}

// TestMain sets the process's logger, with elections counting through it:
// ctrl.SetLogger takes effect only the first time it is called in a
// process, so it is called here, before any test (later calls are no-ops).
func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.New(elections.sink(zap.New(zap.WriteTo(os.Stderr)).GetSink())))
	os.Exit(m.Run())
}

func TestDispatcher(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The namespace of the codex harness, the manager's one harness namespace.
	const ns = "dispatcher-main"
	fx := dispatchertest.NewTurnFixture(ctx, t, ns, "drain")
	env, k8s, stub, gateway := fx.Env, fx.K8s, fx.Stub, fx.Gateway

	dir := t.TempDir()
	opts := testOptions(t, filepath.Join(dir, "journal"), filepath.Join(dir, "ca.pem"))
	passesBefore := promtestutil.ToFloat64(retentionPasses.WithLabelValues("ok"))
	leader := start(ctx, env.Config, opts)
	defer leader.stop(t)
	probe := "http://" + opts.probeAddr
	waitStatus(t, leader, probe+"/readyz", http.DefaultClient, http.StatusOK, 60*time.Second)

	caPEM, err := os.ReadFile(opts.tls.caOut)
	must(t, err)
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatalf("--tls-ca-out holds no certificate: %q", caPEM)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
	api := "https://" + opts.bindAddr
	sessionURL := func(name string) string {
		return api + "/v1/namespaces/" + ns + "/agentsessions/" + name
	}

	t.Run("probes: healthz, readyz with its checks, Prometheus metrics", func(t *testing.T) {
		for _, path := range []string{"/healthz", "/readyz?verbose"} {
			st, body := do(t, http.DefaultClient, http.MethodGet, probe+path, "", "", nil)
			if st != http.StatusOK {
				t.Fatalf("%s: %d %s", path, st, body)
			}
			if path == "/readyz?verbose" {
				for _, check := range []string{"informers", "leader", "journal", "api"} {
					if !strings.Contains(body, "[+]"+check+" ok") {
						t.Fatalf("readyz without check %s: %s", check, body)
					}
				}
			}
		}
		st, body := do(t, http.DefaultClient, http.MethodGet, "http://"+opts.metricsAddr+"/metrics", "", "", nil)
		if st != http.StatusOK || !strings.Contains(body, "controller_runtime_reconcile_total") {
			t.Fatalf("/metrics: %d %.300s", st, body)
		}
		// Journal retention runs periodically while the dispatcher is up
		// (this process's passes, counted from before it started).
		eventually(t, "two retention passes", func() bool {
			return promtestutil.ToFloat64(retentionPasses.WithLabelValues("ok")) >= passesBefore+2
		})
		waitStatusBody(t, leader, "http://"+opts.metricsAddr+"/metrics", http.StatusOK, `harness_dispatcher_journal_retention_passes_total{result="ok"}`, 20*time.Second)
	})

	t.Run("the CA file verifies the served certificate; an untrusting client is refused", func(t *testing.T) {
		for _, name := range []string{"localhost", "127.0.0.1"} {
			conn, err := tls.Dial("tcp", opts.bindAddr, &tls.Config{RootCAs: roots, ServerName: name, MinVersion: tls.VersionTLS12})
			if err != nil {
				t.Fatalf("TLS with ServerName %s: %v", name, err)
			}
			leaf := conn.ConnectionState().PeerCertificates[0]
			_ = conn.Close()
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name}); err != nil {
				t.Fatalf("served certificate does not verify for %s: %v", name, err)
			}
		}
		resp, err := http.Get(api + "/healthz")
		if err == nil {
			_ = resp.Body.Close()
		}
		var unknown x509.UnknownAuthorityError
		if !errors.As(err, &unknown) {
			t.Fatalf("a client without the CA: %v, want an unknown-authority error", err)
		}
	})

	t.Run("a second dispatcher on the same journal directory fails: journal locked", func(t *testing.T) {
		o := testOptions(t, opts.journalDir, "")
		rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
		defer rcancel()
		err := run(rctx, env.Config, o)
		if !errors.Is(err, journal.ErrLocked) || !strings.Contains(err.Error(), opts.journalDir) {
			t.Fatalf("second run: %v, want journal.ErrLocked naming %s", err, opts.journalDir)
		}
	})

	t.Run("a turn-token Secret without a usable key stops the start, naming the Secret", func(t *testing.T) {
		o := testOptions(t, filepath.Join(t.TempDir(), "journal"), "")
		o.turnToken = turnTokenOptions{secretName: "damaged-turn-token", secretNS: ns}
		must(t, k8s.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: o.turnToken.secretName},
			Data:       map[string][]byte{turntoken.DataKey: []byte("too short")},
		}))
		rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
		defer rcancel()
		err := run(rctx, env.Config, o)
		if want := ns + "/" + o.turnToken.secretName; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("run with an unusable turn-token Secret: %v, want an error naming %s", err, want)
		}
	})

	t.Run("a replica that does not lead is not ready and does not serve the API", func(t *testing.T) {
		o := testOptions(t, filepath.Join(t.TempDir(), "journal"), "")
		lost := elections.count()
		follower := start(ctx, env.Config, o)
		defer follower.stop(t)
		// Proof that it is a running replica that lost the election, not
		// one still starting: its caches have synced (runnables that do not
		// need leadership have started), and its leader elector has found
		// the lease held by the leader twice — a retry period apart, so an
		// API that did not wait for leadership would be listening by then.
		waitStatusBody(t, follower, "http://"+o.probeAddr+"/readyz?verbose", http.StatusInternalServerError, "[+]informers ok", 30*time.Second)
		elections.wait(t, lost+2, 60*time.Second)
		st, body := do(t, http.DefaultClient, http.MethodGet, "http://"+o.probeAddr+"/readyz?verbose", "", "", nil)
		if st != http.StatusInternalServerError || !strings.Contains(body, "[-]leader failed") || !strings.Contains(body, "[-]api failed") {
			t.Fatalf("follower readyz: %d %s", st, body)
		}
		if conn, err := net.DialTimeout("tcp", o.bindAddr, time.Second); err == nil {
			_ = conn.Close()
			t.Fatalf("a follower listens on %s", o.bindAddr)
		}
	})

	t.Run("graceful shutdown: a running turn finishes, new connections are refused", func(t *testing.T) {
		gate := stubmodel.NewGate()
		defer gate.Release()
		stub.When("drain-1", stubmodel.Stall(gate, stubmodel.Text("drained in time", "drained ", "in time")))
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, sessionURL("drain")+"/turns", strings.NewReader(`{"runId":"run-d1","prompt":"drain-1 go"}`))
		must(t, err)
		req.Header.Set("Authorization", "Bearer "+gateway)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		must(t, err)
		defer func() { _ = resp.Body.Close() }()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("turn: %d %s", resp.StatusCode, b)
		}
		_, err = stub.WaitMarker(ctx, "drain-1")
		must(t, err)

		leader.cancel()
		waitRefused(t, opts.bindAddr, 10*time.Second)
		select {
		case err := <-leader.done:
			t.Fatalf("run returned with a turn still running: %v", err)
		default:
		}
		gate.Release()
		evs := dispatchertest.ParseSSE(t, resp.Body)
		if evs[len(evs)-1].Type != wire.EventResult {
			t.Fatalf("drained turn ended with %v", typesOf(evs))
		}
		select {
		case err := <-leader.done:
			leader.done <- err
			if err != nil {
				t.Fatalf("run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("run did not return after the turn finished")
		}
	})
}

// --- helpers ---

type running struct {
	cancel context.CancelFunc
	done   chan error
}

// start runs the dispatcher in a goroutine; stop cancels it and waits.
func start(ctx context.Context, cfg *rest.Config, opts options) *running {
	rctx, cancel := context.WithCancel(ctx)
	r := &running{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- run(rctx, cfg, opts) }()
	return r
}

func (r *running) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err
		if err != nil {
			t.Errorf("run: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Error("run did not return within 60s")
	}
}

// waitStatus polls url until it answers want; run ending first fails.
func waitStatus(t *testing.T, r *running, url string, hc *http.Client, want int, timeout time.Duration) {
	t.Helper()
	pollStatus(t, r, url, hc, want, "", timeout)
}

// waitStatusBody polls url until it answers want with a body containing
// substr; run ending first fails.
func waitStatusBody(t *testing.T, r *running, url string, want int, substr string, timeout time.Duration) {
	t.Helper()
	pollStatus(t, r, url, http.DefaultClient, want, substr, timeout)
}

func pollStatus(t *testing.T, r *running, url string, hc *http.Client, want int, substr string, timeout time.Duration) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	var last string
	for {
		if resp, err := hc.Get(url); err == nil {
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == want && strings.Contains(string(b), substr) {
				return
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, b)
		} else {
			last = err.Error()
		}
		select {
		case err := <-r.done:
			r.done <- err
			t.Fatalf("run returned while waiting for %s: %v", url, err)
		case <-deadline.C:
			t.Fatalf("%s did not answer %d (with %q) within %s: %s", url, want, substr, timeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitRefused waits until addr refuses TCP connections.
func waitRefused(t *testing.T, addr string, timeout time.Duration) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return
		}
		_ = conn.Close()
		select {
		case <-deadline.C:
			t.Fatalf("%s still accepts connections after %s", addr, timeout)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// leaseLosses counts, for every manager in the process, the leader
// elector's "lease held by another" findings: client-go logs them at V(4)
// through the manager's logger, named "leaderelection". Only a replica that
// does not lead logs them.
type leaseLosses struct {
	mu      sync.Mutex
	n       int
	changed chan struct{} // closed and replaced when n changes
}

// leaseHeldMsg is client-go's message (tools/leaderelection) when a
// candidate finds the lease held by another holder that has not expired.
const leaseHeldMsg = "Lease is held by and has not yet expired"

func (l *leaseLosses) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

func (l *leaseLosses) wait(t *testing.T, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		got, changed := l.n, l.changed
		l.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("%d lost leader-election attempts within %s, want %d", got, timeout, n)
		}
	}
}

func (l *leaseLosses) lost() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	close(l.changed)
	l.changed = make(chan struct{})
}

// sink wraps the test's log sink: leader-election lines are counted at any
// verbosity; everything is passed on as the wrapped sink decides.
func (l *leaseLosses) sink(next logr.LogSink) logr.LogSink {
	return &countingSink{LogSink: next, losses: l}
}

type countingSink struct {
	logr.LogSink
	losses   *leaseLosses
	election bool // named "leaderelection"
}

func (s *countingSink) Enabled(level int) bool {
	return s.election || s.LogSink.Enabled(level)
}

func (s *countingSink) Info(level int, msg string, kv ...any) {
	if s.election && msg == leaseHeldMsg {
		s.losses.lost()
	}
	if s.LogSink.Enabled(level) {
		s.LogSink.Info(level, msg, kv...)
	}
}

func (s *countingSink) WithName(name string) logr.LogSink {
	return &countingSink{LogSink: s.LogSink.WithName(name), losses: s.losses, election: s.election || name == "leaderelection"}
}

func (s *countingSink) WithValues(kv ...any) logr.LogSink {
	return &countingSink{LogSink: s.LogSink.WithValues(kv...), losses: s.losses, election: s.election}
}

// do sends a request and returns the status and the whole body.
func do(t *testing.T, hc *http.Client, method, url, token, body string, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	must(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	must(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp.StatusCode, string(b)
}

func typesOf(evs []dispatchertest.SSEEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func testOptions(t *testing.T, journalDir, caOut string) options {
	t.Helper()
	return options{
		bindAddr: dispatchertest.FreeAddr(t), probeAddr: dispatchertest.FreeAddr(t), metricsAddr: dispatchertest.FreeAddr(t), insecureMetrics: true,
		leaderElect: true, leaderElectionNS: "default", turnToken: turnTokenOptions{secretName: defaultTurnTokenSecret},
		store: storeOptions{kind: storeFiles, secretKey: defaultPostgresSecretKey}, journalDir: journalDir,
		tokenAudience: audience, shutdownGrace: 20 * time.Second,
		retention:     retentionOptions{interval: 100 * time.Millisecond},
		sweepInterval: defaultSweepInterval,
		tls:           tlsOptions{dnsNames: "localhost", ipAddresses: "127.0.0.1", caOut: caOut},
		// The external app-server is a Codex process on loopback.
		externalDial: netguard.Flags{AllowInsecureLoopback: true},
		// Several dispatchers run in this one process.
		skipControllerNameValidation: true,
	}
}
