package main

import (
	"context"
	"encoding/pem"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/controllers/agentharness"
	"github.com/openclaw/harness-operator/internal/dispatcher/engine"
	"github.com/openclaw/harness-operator/internal/dispatcher/httpapi"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

const e2eServerToken = "kubectl-harness-e2e-token-41d2"

// TestTurnEndToEnd runs `turn`, `transcript` and `status` through the built
// binary against a httpapi.Handler over TLS in front of the real engine:
// envtest's kube-apiserver (TokenRequest, TokenReview, SubjectAccessReview,
// RBAC), the agentharness controller making an external AgentHarness Ready,
// a real `codex app-server` and the stub model. The CLI requests a
// dispatcher-audience token for harness-cli and announces it on stderr.
func TestTurnEndToEnd(t *testing.T) {
	t.Parallel() // a control plane of its own (startCluster)
	if os.Getenv(codextest.EnvBin) == "" {
		t.Fatal("CODEX_BIN must be set: CODEX_BIN=$(hack/setup-codex.sh) go test ./cmd/kubectl-harness/")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stub, err := stubmodel.New()
	if err != nil {
		t.Fatal(err)
	}
	defer stub.Close()
	// danger-full-access, as the harness's pods run Codex (the pod is the
	// sandbox): an approved command then runs as approved. Under the
	// read-only sandbox it fails, and whether Codex then asks again to run it
	// unsandboxed varied between runs (the approval spec below flaked).
	codex, err := codextest.StartErr(t, codextest.Options{ProviderURL: stub.BaseURL(), Transport: codextest.WebSocket, WSToken: e2eServerToken,
		ExtraArgs: []string{"-c", `sandbox_mode="danger-full-access"`}})
	if err != nil {
		t.Fatal(err)
	}

	te, kubeconfig := startCluster(t)
	c := te.Client
	cs, err := kubernetes.NewForConfig(te.Config)
	if err != nil {
		t.Fatal(err)
	}
	jrnl, err := journal.Open(t.TempDir(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = jrnl.Close() }()
	eng := engine.New(c, c, jrnl, engine.Options{ReattachTimeout: 3 * time.Second, ExternalDial: testutil.LoopbackExternalDial})
	defer eng.Close()
	const ns = "e2e" // the manager's one harness namespace
	mgr, err := testutil.StartManager(ctx, te, func(m ctrl.Manager) error {
		return (&agentharness.Reconciler{Client: m.GetClient(), MaxConcurrentReconciles: 2,
			HarnessNamespaces: []string{ns}, ExternalDial: testutil.LoopbackExternalDial}).SetupWithManager(m)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = mgr.Stop() }()
	h, err := httpapi.NewHandler(httpapi.Config{Engine: eng, Store: jrnl, Sessions: c, Authorizer: httpapi.NewKubeAuthorizer(cs, "harness-dispatcher")})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(h)
	defer srv.Close()
	caPath := filepath.Join(t.TempDir(), "dispatcher-ca.pem")
	if err := os.WriteFile(caPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	must(c.Create(ctx, &v1alpha1.RuntimePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "codex-only"},
		Spec: v1alpha1.RuntimePolicySpec{
			Providers:        []v1alpha1.ProviderRuntimePolicy{{Provider: "openai", Runtime: "codex"}},
			SessionOverrides: v1alpha1.SessionOverridesDeny,
		},
	}))
	// The CLI's identity: ServiceAccount harness-cli with the gateway grant.
	must(c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: defaultServiceAccount}}))
	must(c.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "harness-turns"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{httpapi.APIGroup}, Resources: []string{"agentsessions/turns"}, Verbs: []string{"create", "get"}}},
	}))
	must(c.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "harness-cli"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "harness-turns"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: defaultServiceAccount}},
	}))
	harness, err := testutil.ExternalCodex(ctx, c, ns, codex.URL, e2eServerToken)
	must(err)
	_, err = testutil.WaitHarnessCondition(ctx, c, harness, v1alpha1.HarnessConditionReady, metav1.ConditionTrue, 40*time.Second)
	must(err)

	kc := "--kubeconfig=" + kubeconfig
	env := []string{envDispatcherURL + "=" + srv.URL, envDispatcherCA + "=" + caPath}
	out, errOut, exit := runCLI(t, env, "session", "create", kc, "-n", ns, "--model", "openai/stub-model", "--key", "agent:main:e2e", "--session-id", "e2e-1")
	if exit != exitOK || out != "e2e-1\n" {
		t.Fatalf("session create: exit %d, stdout %q, stderr %s", exit, out, errOut)
	}

	stub.When("e2e-alpha", stubmodel.Text("The answer is forty-two.", "The answer ", "is forty-two."))
	out, errOut, exit = runCLI(t, env, "turn", "e2e-1", kc, "-n", ns, "--prompt", "e2e-alpha: what is the answer?", "--run-id", "run-e2e-1")
	if exit != exitOK || out != "The answer is forty-two.\n" {
		t.Fatalf("turn: exit %d, stdout %q, stderr %s", exit, out, errOut)
	}
	if !strings.Contains(errOut, "using system:serviceaccount:e2e:harness-cli (token for audience harness-dispatcher, valid 10m)\n") ||
		!strings.Contains(errOut, "run run-e2e-1: runtime codex, harness codex") || strings.Contains(errOut, "waiting") {
		t.Fatalf("turn stderr %q (no spinner when stderr is not a terminal)", errOut)
	}

	// The same runId again resumes the journaled run: same answer, no model request.
	before := len(stub.Requests())
	out, errOut, exit = runCLI(t, env, "turn", "e2e-1", kc, "-n", ns, "--prompt", "e2e-alpha: what is the answer?", "--run-id", "run-e2e-1")
	if exit != exitOK || out != "The answer is forty-two.\n" || len(stub.Requests()) != before {
		t.Fatalf("replayed turn: exit %d, stdout %q, stderr %s, model requests %d -> %d", exit, out, errOut, before, len(stub.Requests()))
	}

	out, errOut, exit = runCLI(t, env, "transcript", "e2e-1", kc, "-n", ns, "--dispatcher-ca", caPath)
	if exit != exitOK || !strings.Contains(out, "forty-two") || !strings.Contains(out, "e2e-alpha: what is the answer?") {
		t.Fatalf("transcript: exit %d, stdout %q, stderr %s", exit, out, errOut)
	}

	out, errOut, exit = runCLI(t, nil, "status", "e2e-1", kc, "-n", ns)
	if exit != exitOK || !strings.Contains(out, "runtime codex") || !strings.Contains(out, "Thread:") || strings.Contains(out, "Thread:            <none>") {
		t.Fatalf("status after a turn: exit %d, stderr %s\n%s", exit, errOut, out)
	}

	// Approvals through the CLI: in untrusted mode Codex asks before the
	// command runs; --approve always lets it run once, --approve never
	// denies it and the marker stays as it was.
	marker := filepath.Join(codex.Workdir, "approved.txt")
	approveCall := stubmodel.CallJSON("exec_command", map[string]string{"cmd": "echo x >> " + marker})
	stub.When("e2e-approve", approveCall)
	out, errOut, exit = runCLI(t, env, "turn", "e2e-1", kc, "-n", ns, "--prompt", "e2e-approve: write the marker",
		"--approval-mode", "untrusted", "--approve", "always")
	if got, _ := os.ReadFile(marker); exit != exitOK || string(got) != "x\n" || !strings.Contains(out, "[approval]") {
		t.Fatalf("approved turn: exit %d, marker %q, stdout %q, stderr %s", exit, got, out, errOut)
	}
	stub.When("e2e-deny", approveCall)
	out, errOut, exit = runCLI(t, env, "turn", "e2e-1", kc, "-n", ns, "--prompt", "e2e-deny: write the marker again",
		"--approval-mode", "untrusted", "--approve", "never")
	if got, _ := os.ReadFile(marker); exit != exitOK || string(got) != "x\n" || !strings.Contains(out, "denied") {
		t.Fatalf("denied turn: exit %d, marker %q, stdout %q, stderr %s", exit, got, out, errOut)
	}

	// A fail-closed decision: an override the Deny policy refuses.
	must(c.Create(ctx, &v1alpha1.AgentSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "denied"},
		Spec:       v1alpha1.AgentSessionSpec{AgentID: "main", SessionKey: "agent:main:denied", SessionID: "denied", Model: "openai/stub-model", RuntimeOverride: "openclaw"},
	}))
	before = len(stub.Requests())
	out, errOut, exit = runCLI(t, env, "turn", "denied", kc, "-n", ns, "--prompt", "hello")
	if exit != exitFailClosed || out != "" || !strings.Contains(errOut, "OverrideDenied") || len(stub.Requests()) != before {
		t.Fatalf("fail-closed turn: exit %d, stdout %q, stderr %q", exit, out, errOut)
	}

	// Without trusting the dispatcher's CA the TLS handshake fails (exit 1).
	_, errOut, exit = runCLI(t, []string{envDispatcherURL + "=" + srv.URL, envDispatcherCA + "="}, "turn", "e2e-1", kc, "-n", ns, "--prompt", "x")
	if exit != exitFailure || !strings.Contains(errOut, "certificate") {
		t.Fatalf("untrusted dispatcher: exit %d, stderr %q", exit, errOut)
	}
	// A ServiceAccount without the grant is refused by the dispatcher (403, exit 1).
	must(c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nobody"}}))
	_, errOut, exit = runCLI(t, env, "transcript", "e2e-1", kc, "-n", ns, "--service-account", "nobody")
	if exit != exitFailure || !strings.Contains(errOut, "403") {
		t.Fatalf("no grant: exit %d, stderr %q", exit, errOut)
	}

	// Without a dispatcher URL the CLI goes through the API server's service
	// proxy to the labeled dispatcher Service (exposeThroughServiceProxy says
	// how the test points it at srv): the turn streams through the proxy,
	// the harness-cli token travels in X-Harness-Authorization.
	must(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: defaultDispatcherNamespace}}))
	exposeThroughServiceProxy(t, c, defaultDispatcherNamespace, "harness-operator-dispatcher",
		map[string]string{"app.kubernetes.io/name": "harness-operator", "app.kubernetes.io/component": "dispatcher"}, srv.URL)
	stub.When("e2e-proxied", stubmodel.Text("Proxied answer.", "Proxied ", "answer."))
	out, errOut, exit = runCLI(t, noDispatcherEnv, "turn", "e2e-1", kc, "-n", ns, "--prompt", "e2e-proxied: through the API server?", "--run-id", "run-e2e-proxy")
	if exit != exitOK || out != "Proxied answer.\n" || !strings.Contains(errOut, "run run-e2e-proxy: runtime codex, harness codex") {
		t.Fatalf("turn through the service proxy: exit %d, stdout %q, stderr %s", exit, out, errOut)
	}
	out, errOut, exit = runCLI(t, noDispatcherEnv, "transcript", "e2e-1", kc, "-n", ns)
	if exit != exitOK || !strings.Contains(out, "Proxied answer.") {
		t.Fatalf("transcript through the service proxy: exit %d, stdout %q, stderr %s", exit, out, errOut)
	}
}
