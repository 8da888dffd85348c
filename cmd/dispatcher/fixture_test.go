package main

import (
	"context"
	"os"
	"testing"

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
	"github.com/openclaw/harness-operator/test/stubmodel"
)

// turnFixture is what a turn through a dispatcher needs: envtest's
// kube-apiserver, the real agentharness controller making an external
// AgentHarness `codex` Ready, a real `codex app-server` behind it on the stub
// model, and a namespace with AgentSessions and a gateway ServiceAccount
// allowed to run turns. The test's cleanups stop it all.
type turnFixture struct {
	env     *testutil.Env
	k8s     client.Client
	stub    *stubmodel.Server
	codex   *codextest.Server
	ns      string
	gateway string // the gateway's bearer token, for the dispatcher's audience
}

// fixtureOptions change the fixture.
type fixtureOptions struct {
	// harnessURL is where the AgentHarness points, given Codex's URL (nil:
	// at Codex itself), e.g. a proxy the test controls.
	harnessURL func(codexURL string) string
	// codexArgs are appended to `codex app-server` (codextest's ExtraArgs).
	codexArgs []string
	// controllers, when set, runs what reconciles ns (e.g. manager
	// processes with their webhooks) in place of the in-process
	// agentharness controller, once the control plane is up.
	controllers func(env *testutil.Env, ns string)
}

// newTurnFixture starts the fixture with an AgentSession per name in ns.
func newTurnFixture(ctx context.Context, t *testing.T, ns string, sessions ...string) *turnFixture {
	t.Helper()
	return newTurnFixtureWith(ctx, t, ns, fixtureOptions{}, sessions...)
}

// newTurnFixtureWith is newTurnFixture with options.
func newTurnFixtureWith(ctx context.Context, t *testing.T, ns string, opts fixtureOptions, sessions ...string) *turnFixture {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" || os.Getenv(codextest.EnvBin) == "" {
		t.Fatal("KUBEBUILDER_ASSETS and CODEX_BIN must be set: KUBEBUILDER_ASSETS=... CODEX_BIN=$(hack/setup-codex.sh) go test ./cmd/dispatcher/")
	}
	stub, err := stubmodel.New()
	must(t, err)
	t.Cleanup(stub.Close)
	cdx, err := codextest.StartErr(t, codextest.Options{
		ProviderURL: stub.BaseURL(), Transport: codextest.WebSocket, WSToken: serverToken, ExtraArgs: opts.codexArgs,
	})
	must(t, err)

	env, err := testutil.StartEnv()
	must(t, err)
	t.Cleanup(func() { _ = env.Stop() })
	k8s := env.Client
	cs, err := kubernetes.NewForConfig(env.Config)
	must(t, err)
	if opts.controllers != nil {
		opts.controllers(env, ns)
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
	gateway, err := testutil.ServiceAccountToken(ctx, k8s, cs, ns, "gateway", audience)
	must(t, err)
	harnessURL := cdx.URL
	if opts.harnessURL != nil {
		harnessURL = opts.harnessURL(cdx.URL)
	}
	registerCodex(ctx, t, k8s, ns, harnessURL)
	for _, name := range sessions {
		must(t, k8s.Create(ctx, &v1alpha1.AgentSession{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       v1alpha1.AgentSessionSpec{AgentID: "main", SessionKey: "agent:main:" + name, SessionID: name + "-id", Model: testModel},
		}))
	}
	return &turnFixture{env: env, k8s: k8s, stub: stub, codex: cdx, ns: ns, gateway: gateway}
}
