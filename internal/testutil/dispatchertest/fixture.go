// Package dispatchertest is what a test of the dispatcher binary needs: a
// turn fixture (envtest, the real agentharness controller, a real `codex
// app-server` on the stub model, AgentSessions and a gateway token) and
// dispatcher processes on it. cmd/dispatcher's tests and the fault
// campaigns in test/faults share it, so both drive the same setup.
package dispatchertest

import (
	"context"
	"os"
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
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

const (
	// ServerToken is the app-server's capability token.
	ServerToken = "dispatcher-capability-token-41d9"
	// TestModel is the sessions' model, answered by the stub model.
	TestModel = "openai/stub-model"
	// Audience is the dispatcher's token audience.
	Audience = "harness-dispatcher"
)

// TurnFixture is what a turn through a dispatcher needs: envtest's
// kube-apiserver, the real agentharness controller making an external
// AgentHarness `codex` Ready, a real `codex app-server` behind it on the stub
// model, and a namespace with AgentSessions and a gateway ServiceAccount
// allowed to run turns. The test's cleanups stop it all.
type TurnFixture struct {
	Env     *testutil.Env
	K8s     client.Client
	Stub    *stubmodel.Server
	Codex   *codextest.Server
	NS      string
	Gateway string // the gateway's bearer token, for the dispatcher's audience
}

// Options change the fixture.
type Options struct {
	// HarnessURL is where the AgentHarness points, given Codex's URL (nil:
	// at Codex itself), e.g. a proxy the test controls.
	HarnessURL func(codexURL string) string
	// CodexArgs are appended to `codex app-server` (codextest's ExtraArgs).
	CodexArgs []string
	// Controllers, when set, runs what reconciles ns (e.g. manager
	// processes with their webhooks) in place of the in-process
	// agentharness controller, once the control plane is up.
	Controllers func(env *testutil.Env, ns string)
}

// NewTurnFixture starts the fixture with an AgentSession per name in ns.
func NewTurnFixture(ctx context.Context, t *testing.T, ns string, sessions ...string) *TurnFixture {
	t.Helper()
	return NewTurnFixtureWith(ctx, t, ns, Options{}, sessions...)
}

// NewTurnFixtureWith is NewTurnFixture with options.
func NewTurnFixtureWith(ctx context.Context, t *testing.T, ns string, opts Options, sessions ...string) *TurnFixture {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" || os.Getenv(codextest.EnvBin) == "" {
		t.Fatal("KUBEBUILDER_ASSETS and CODEX_BIN must be set: KUBEBUILDER_ASSETS=... CODEX_BIN=$(hack/setup-codex.sh) go test <package>")
	}
	stub, err := stubmodel.New()
	must(t, err)
	t.Cleanup(stub.Close)
	cdx, err := codextest.StartErr(t, codextest.Options{
		ProviderURL: stub.BaseURL(), Transport: codextest.WebSocket, WSToken: ServerToken, ExtraArgs: opts.CodexArgs,
	})
	must(t, err)

	env, err := testutil.StartEnv()
	must(t, err)
	t.Cleanup(func() { _ = env.Stop() })
	k8s := env.Client
	cs, err := kubernetes.NewForConfig(env.Config)
	must(t, err)
	if opts.Controllers != nil {
		opts.Controllers(env, ns)
	} else {
		// ns is the manager's one harness namespace.
		mgr, err := testutil.StartManager(ctx, env, func(m ctrl.Manager) error {
			return (&agentharness.Reconciler{Client: m.GetClient(), MaxConcurrentReconciles: 2,
				HarnessNamespaces: []string{ns}, ExternalDial: testutil.LoopbackExternalDial}).SetupWithManager(m)
		})
		must(t, err)
		t.Cleanup(func() { _ = mgr.Stop() })
	}

	must(t, k8s.Create(ctx, &v1alpha1.RuntimePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "codex-only"},
		Spec: v1alpha1.RuntimePolicySpec{
			Providers:        []v1alpha1.ProviderRuntimePolicy{{Provider: "openai", Runtime: "codex"}},
			SessionOverrides: v1alpha1.SessionOverridesDeny,
		},
	}))
	must(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	must(t, k8s.Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "harness-gateway-test"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"harness.openclaw.dev"}, Resources: []string{"agentsessions/turns"}, Verbs: []string{"create", "get"}}},
	}))
	must(t, k8s.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gateway"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "harness-gateway-test"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "gateway"}},
	}))
	gateway, err := testutil.ServiceAccountToken(ctx, k8s, cs, ns, "gateway", Audience)
	must(t, err)
	harnessURL := cdx.URL
	if opts.HarnessURL != nil {
		harnessURL = opts.HarnessURL(cdx.URL)
	}
	RegisterCodex(ctx, t, k8s, ns, harnessURL)
	for _, name := range sessions {
		must(t, k8s.Create(ctx, &v1alpha1.AgentSession{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       v1alpha1.AgentSessionSpec{AgentID: "main", SessionKey: "agent:main:" + name, SessionID: name + "-id", Model: TestModel},
		}))
	}
	return &TurnFixture{Env: env, K8s: k8s, Stub: stub, Codex: cdx, NS: ns, Gateway: gateway}
}

// RegisterCodex creates the external AgentHarness codex at url (and its
// token Secret) and waits for the controller to make it Ready.
func RegisterCodex(ctx context.Context, t *testing.T, k8s client.Client, ns, url string) {
	t.Helper()
	h, err := testutil.ExternalCodex(ctx, k8s, ns, url, ServerToken)
	must(t, err)
	_, err = testutil.WaitHarnessCondition(ctx, k8s, h, v1alpha1.HarnessConditionReady, metav1.ConditionTrue, 40*time.Second)
	must(t, err)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
