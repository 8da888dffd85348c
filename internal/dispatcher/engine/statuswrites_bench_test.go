package engine

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/controllers/agentharness"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/appserverdouble"
)

// BenchmarkTurnStatusWrites counts the API writes of a short turn — one
// that ends inside the activeTurn delay — as the engine makes them with its
// default options: envtest's kube-apiserver, the zero-latency app-server
// double behind an external AgentHarness the real agentharness controller
// makes Ready, the file journal. Every write of the engine's writer counts
// (status applies, and anything else it would write). It reports
// api-writes/turn; the figure is a count, not a timing. A turn that outlives
// the delay (a machine so loaded that a turn of the double takes a second)
// adds its activeTurn write, and shows in the figure.
//
//	make test-packages TEST_PACKAGES=./internal/dispatcher/engine/ \
//	  GO_TEST_FLAGS="-run '^$$' -bench TurnStatusWrites -benchtime 50x -count=1"
func BenchmarkTurnStatusWrites(b *testing.B) {
	const (
		ns    = "status-writes"
		token = "status-writes-token-5d1e"
		name  = "bench"
	)
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		b.Fatal("KUBEBUILDER_ASSETS must point at the etcd and kube-apiserver binaries: run it through make test-packages (hack/setup-envtest.sh builds them)")
	}
	ctrl.SetLogger(logr.Discard())
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	must := func(err error) {
		b.Helper()
		if err != nil {
			b.Fatal(err)
		}
	}

	env, err := testutil.StartEnv()
	must(err)
	b.Cleanup(func() { _ = env.Stop() })
	k8s := env.Client
	mgr, err := testutil.StartManager(ctx, env, func(m ctrl.Manager) error {
		return (&agentharness.Reconciler{Client: m.GetClient(), MaxConcurrentReconciles: 2,
			HarnessNamespaces: []string{ns}, ExternalDial: testutil.LoopbackExternalDial}).SetupWithManager(m)
	})
	must(err)
	b.Cleanup(func() { _ = mgr.Stop() })
	double, err := appserverdouble.New(appserverdouble.Options{Token: token})
	must(err)
	b.Cleanup(double.Close)

	must(k8s.Create(ctx, &v1alpha1.RuntimePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "codex-only"},
		Spec: v1alpha1.RuntimePolicySpec{
			Providers:        []v1alpha1.ProviderRuntimePolicy{{Provider: "openai", Runtime: "codex"}},
			SessionOverrides: v1alpha1.SessionOverridesDeny,
		},
	}))
	must(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	h, err := testutil.ExternalCodex(ctx, k8s, ns, double.URL, token)
	must(err)
	_, err = testutil.WaitHarnessCondition(ctx, k8s, h, v1alpha1.HarnessConditionReady, metav1.ConditionTrue, 40*time.Second)
	must(err)
	must(k8s.Create(ctx, &v1alpha1.AgentSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.AgentSessionSpec{AgentID: "main", SessionKey: "agent:main:" + name, SessionID: name + "-id", Model: testModel},
	}))

	j, err := journal.Open(b.TempDir(), journal.Options{})
	must(err)
	b.Cleanup(func() { _ = j.Close() })
	var calls testutil.Calls
	e := New(k8s, testutil.CountingClient[*v1alpha1.AgentSession](k8s, &calls), j, Options{ExternalDial: testutil.LoopbackExternalDial})
	b.Cleanup(e.Close)

	turn := func(i int) {
		if err := e.Turn(ctx, ns, name, textReq(NewRunID(), "status writes: reply ok"), nil); err != nil {
			b.Fatalf("turn %d: %v", i, err)
		}
	}
	turn(-1) // the session's first turn binds its thread
	calls.Reset()
	b.ResetTimer()
	for i := range b.N {
		turn(i)
	}
	b.StopTimer()
	b.ReportMetric(float64(len(calls.Writes()))/float64(b.N), "api-writes/turn")
}
