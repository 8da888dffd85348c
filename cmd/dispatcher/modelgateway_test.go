package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/modelcred"
	"github.com/openclaw/harness-operator/internal/dispatcher/turntoken"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/dispatchertest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// parseGatewayFlags parses args as the subcommand does.
func parseGatewayFlags(t *testing.T, args ...string) modelGatewayOptions {
	t.Helper()
	fs := flag.NewFlagSet("model-gateway", flag.ContinueOnError)
	var o modelGatewayOptions
	bindModelGatewayFlags(fs, &o)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return o
}

// The defaults are the design's limits; a setting that cannot work is
// refused before anything starts, naming its flag.
func TestModelGatewayFlags(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "harness-operator-system")
	o := parseGatewayFlags(t, "--dispatcher-url=https://dispatcher:8443")
	if err := o.validate(); err != nil {
		t.Fatalf("the defaults with a dispatcher URL: %v", err)
	}
	if o.bindAddr != ":8443" || o.tokenFile != "/var/run/secrets/kubernetes.io/serviceaccount/token" || o.holdsTimeout != 2*time.Second ||
		o.turnToken.secretName != defaultTurnTokenSecret || o.limits.MaxBodyBytes != 64<<20 || o.limits.MaxConnections != 1024 ||
		o.limits.MaxInFlightPerLease != 8 || o.allowPrivate || o.allowLoopback {
		t.Fatalf("defaults: %+v", o)
	}
	if p := o.dialPolicy(); len(p.ClusterCIDRs) == 0 || p.AllowLoopback {
		t.Fatalf("the default dial policy %+v must refuse private ranges and loopback", p)
	}
	if p := parseGatewayFlags(t, "--allow-private-upstreams", "--allow-loopback-upstreams").dialPolicy(); len(p.ClusterCIDRs) != 0 || !p.AllowLoopback {
		t.Fatalf("with both flags the dial policy %+v must admit private ranges and loopback", p)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--dispatcher-url is required"},
		{[]string{"--dispatcher-url=https://d", "--holds-timeout=0s"}, "--holds-timeout must be positive"},
		{[]string{"--dispatcher-url=https://d", "--max-body-bytes=0"}, "--max-body-bytes must be positive"},
		{[]string{"--dispatcher-url=https://d", "--max-in-flight-per-session=-1"}, "--max-in-flight-per-session must be positive"},
		{[]string{"--dispatcher-url=https://d", "--turn-token-secret-name="}, "--turn-token-secret-name must not be empty"},
	} {
		if err := parseGatewayFlags(t, tc.args...).validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error naming %q", tc.args, err, tc.want)
		}
	}
	t.Setenv("POD_NAMESPACE", "")
	if err := parseGatewayFlags(t, "--dispatcher-url=https://d").validate(); err == nil || !strings.Contains(err.Error(), "--turn-token-secret-namespace") {
		t.Errorf("without a namespace: %v, want an error naming --turn-token-secret-namespace", err)
	}
}

// holdsStub is a dispatcher's holds endpoint over TLS that says token 7 of
// lease team-a/uid-1 holds and nothing else does, to the gateway's token.
func holdsStub(t *testing.T) (url, caFile, tokenFile string) {
	t.Helper()
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != wire.ModelGatewayHoldsPath || r.Header.Get("Authorization") != "Bearer gateway-sa-token" {
			http.Error(w, `{"code":"Forbidden","message":"not the gateway"}`, http.StatusForbidden)
			return
		}
		var q wire.HoldsRequest
		if err := wire.DecodeStrict(r.Body, &q); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_ = json.NewEncoder(w).Encode(wire.HoldsAnswer{Holds: q.Lease == "team-a/uid-1" && q.Token == 7})
	}))
	t.Cleanup(ts.Close)
	dir := t.TempDir()
	caFile, tokenFile = filepath.Join(dir, "ca.crt"), filepath.Join(dir, "token")
	must(t, os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o600))
	must(t, os.WriteFile(tokenFile, []byte("gateway-sa-token\n"), 0o600))
	return ts.URL, caFile, tokenFile
}

// TestModelGatewaySubcommand runs `dispatcher model-gateway` against a
// real API server, in front of the stub model, with a holds endpoint of
// the test's own. Its start fails without the turn-token Secret, naming the
// flag, and does not create it; it serves the dispatcher's TLS Secret read
// only. Then the binary itself, as the chart runs it: a credential whose
// grant holds reaches the stub with the harness's provider key in place of
// the credential; one whose grant ended is refused 401 without reaching
// the stub; SIGTERM ends it cleanly.
func TestModelGatewaySubcommand(t *testing.T) {
	binDir := t.TempDir()
	built := make(chan error, 1)
	go func() { built <- testutil.BuildBinaries(binDir, "./cmd/dispatcher") }()
	env, err := testutil.StartEnv()
	must(t, err)
	t.Cleanup(func() { _ = env.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	k8s := env.Client
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "model-gateway-"}}
	must(t, k8s.Create(ctx, nsObj))
	ns := nsObj.Name
	t.Setenv("POD_NAMESPACE", ns)

	dispatcherURL, caFile, tokenFile := holdsStub(t)
	dir := t.TempDir()
	o := modelGatewayOptions{
		bindAddr: dispatchertest.FreeAddr(t), probeAddr: dispatchertest.FreeAddr(t),
		dispatcherURL: dispatcherURL, dispatcherCA: caFile, tokenFile: tokenFile, holdsTimeout: 2 * time.Second,
		turnToken:     turnTokenOptions{secretName: defaultTurnTokenSecret},
		tls:           tlsOptions{dnsNames: "localhost", ipAddresses: "127.0.0.1", caOut: filepath.Join(dir, "gateway-ca.pem")},
		allowLoopback: true, shutdownGrace: 5 * time.Second,
	}
	o.limits = parseGatewayFlags(t).limits

	t.Run("no turn-token Secret: the start fails naming the flag, and creates nothing", func(t *testing.T) {
		err := runModelGateway(ctx, env.Config, o)
		if err == nil || !strings.Contains(err.Error(), "--turn-token-secret-name") || !strings.Contains(err.Error(), "does not exist") {
			t.Fatalf("run without the turn-token Secret: %v; want an error naming --turn-token-secret-name", err)
		}
		var s corev1.Secret
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: defaultTurnTokenSecret}, &s); !apierrors.IsNotFound(err) {
			t.Fatalf("the gateway created the turn-token Secret (get: %v)", err)
		}
	})

	t.Run("--tls-secret-name: the dispatcher's certificate, read only", func(t *testing.T) {
		o := tlsOptions{secretName: "dispatcher-tls"}
		if _, err := gatewayTLS(ctx, k8s, o, logr.Discard()); err == nil || !strings.Contains(err.Error(), "--tls-secret-name") ||
			!strings.Contains(err.Error(), "does not exist") {
			t.Fatalf("a missing TLS Secret: %v; want an error naming --tls-secret-name", err)
		}
		cert, _, err := selfManagedCert([]string{"localhost"}, nil, time.Now())
		must(t, err)
		keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
		must(t, err)
		must(t, k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: o.secretName}, Data: map[string][]byte{
			corev1.TLSCertKey:       pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}),
			corev1.TLSPrivateKeyKey: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		}}))
		cfg, err := gatewayTLS(ctx, k8s, o, logr.Discard())
		must(t, err)
		served, err := cfg.GetCertificate(&tls.ClientHelloInfo{ServerName: "localhost"})
		if err != nil || served == nil || !bytes.Equal(served.Certificate[0], cert.Certificate[0]) {
			t.Fatalf("served %v, %v; want the Secret's certificate", served, err)
		}
	})

	rawKey := []byte(strings.Repeat("k", turntoken.KeyBytes))
	must(t, k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: defaultTurnTokenSecret},
		Data: map[string][]byte{turntoken.DataKey: rawKey}}))
	credKey, err := modelcred.DeriveKey(rawKey)
	must(t, err)
	stub := stubmodel.Start(t)
	must(t, k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "provider"},
		StringData: map[string]string{"api-key": "sk-provider-key\n"}}))
	h := &v1alpha1.AgentHarness{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "codex"},
		Spec: v1alpha1.AgentHarnessSpec{
			HarnessID: "codex", Adapter: v1alpha1.AdapterCodexAppServer,
			AppServer: &v1alpha1.AppServerWorkload{Image: "codex@sha256:" + strings.Repeat("a", 64)},
			ModelGateway: &v1alpha1.ModelGateway{BaseURL: stub.BaseURL(),
				CredentialSecretRef: v1alpha1.SecretKeyReference{Name: "provider", Key: "api-key"}},
		},
	}
	must(t, k8s.Create(ctx, h))

	admin, err := env.AddUser(envtest.User{Name: "gateway-test-admin", Groups: []string{"system:masters"}})
	must(t, err)
	kc, err := admin.KubeConfig()
	must(t, err)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	must(t, os.WriteFile(kubeconfig, kc, 0o600))
	must(t, <-built)
	proc, err := testutil.StartProcess("model-gateway", filepath.Join(binDir, "dispatcher"), dir, nil,
		modelGatewayCommand, "--kubeconfig="+kubeconfig, "--bind-address="+o.bindAddr, "--probe-bind-address="+o.probeAddr,
		"--dispatcher-url="+dispatcherURL, "--dispatcher-ca-file="+caFile, "--token-file="+tokenFile,
		"--turn-token-secret-namespace="+ns, "--tls-ca-out="+o.tls.caOut, "--allow-loopback-upstreams", "--shutdown-grace=5s")
	must(t, err)
	stopped := false
	defer func() {
		if !stopped {
			proc.Stop(10 * time.Second)
		}
	}()
	if err := proc.WaitReady("http://"+o.probeAddr+"/readyz", 60*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, proc.Tail(4000))
	}

	caPEM, err := os.ReadFile(o.tls.caOut)
	must(t, err)
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatalf("--tls-ca-out holds no certificate")
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
	now := time.Now()
	credential := func(token int64) string {
		c, err := modelcred.Seal(credKey, modelcred.Claims{
			Audience: modelcred.Audience, Lease: "team-a/uid-1", Token: token, Run: "run-1",
			Harness: modelcred.Harness{Namespace: ns, Name: h.Name, UID: string(h.UID)},
			Models:  []string{"gpt-test"}, ExpiresAt: now.Add(time.Hour),
		}, now)
		must(t, err)
		return c
	}
	ask := func(cred string) (int, string) {
		body := `{"model":"gpt-test","stream":true,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"through the gateway"}]}]}`
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+o.bindAddr+"/v1/responses", strings.NewReader(body))
		must(t, err)
		req.Header.Set("Authorization", "Bearer "+cred)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		must(t, err)
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	if st, body := ask(credential(7)); st != http.StatusOK || !strings.Contains(body, "response.completed") {
		t.Fatalf("a credential whose turn runs: %d %.300s; want the stub's stream", st, body)
	}
	reqs := stub.Requests()
	if len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "Bearer sk-provider-key" {
		t.Fatalf("the stub saw %d requests; want 1 carrying the harness's provider key in place of the credential", len(reqs))
	}
	if st, body := ask(credential(8)); st != http.StatusUnauthorized || !strings.Contains(body, "turn_not_running") {
		t.Fatalf("a credential whose turn ended: %d %.300s; want 401 turn_not_running", st, body)
	}
	if n := len(stub.Requests()); n != 1 {
		t.Fatalf("the refused request reached the stub (%d requests)", n)
	}
	st, metrics := do(t, http.DefaultClient, http.MethodGet, "http://"+o.probeAddr+"/metrics", "", "", nil)
	if st != http.StatusOK || !strings.Contains(metrics, `harness_model_gateway_requests_total{code="forwarded"} 1`) ||
		!strings.Contains(metrics, `harness_model_gateway_requests_total{code="turn_not_running"} 1`) {
		t.Fatalf("/metrics: %d, want one forwarded and one turn_not_running request:\n%.2000s", st, metrics)
	}
	stopped = true
	if what := proc.Stop(10 * time.Second); !strings.HasSuffix(what, "after SIGTERM: <nil>") {
		t.Fatalf("SIGTERM: %s; want a clean exit\n%s", what, proc.Tail(4000))
	}
	log, err := os.ReadFile(proc.LogPath)
	must(t, err)
	for _, secret := range []string{"sk-provider-key", modelcred.Prefix, "gateway-sa-token"} {
		if strings.Contains(string(log), secret) {
			t.Fatalf("the gateway's log holds %q", secret)
		}
	}
}
