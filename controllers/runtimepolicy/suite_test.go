package runtimepolicy_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/controllers/runtimepolicy"
	"github.com/openclaw/harness-operator/internal/testutil"
)

// This suite runs the RuntimePolicy reconciler alone in a manager against a
// real etcd and kube-apiserver with the generated CRDs, and asserts through a
// direct (uncached) client.
var (
	env       *testutil.Env
	k8sClient client.Client
	ctx       context.Context
	cancel    context.CancelFunc
	mgr       *runningManager
	// calls records the reconciler's reads, writes and returns across manager restarts.
	calls = &testutil.Calls{}
)

func TestRuntimePolicyController(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "RuntimePolicy controller suite (envtest)")
}

var _ = BeforeSuite(func() {
	// The manager logs through calls, which learns from the log when a reconcile returns.
	logf.SetLogger(calls.Logger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true))))
	ctx, cancel = context.WithCancel(context.Background())
	var err error
	env, err = testutil.StartEnv()
	Expect(err).NotTo(HaveOccurred())
	k8sClient = env.Client
	mgr = startManager()
})

var _ = AfterSuite(func() {
	if mgr != nil {
		mgr.stop()
	}
	if cancel != nil {
		cancel()
	}
	Expect(env.Stop()).To(Succeed())
})

// runningManager is a manager running just the RuntimePolicy reconciler, whose
// client records its calls in calls.
type runningManager struct{ *testutil.RunningManager }

// startManager starts a manager with the RuntimePolicy reconciler and waits for its
// caches; calls starts empty.
func startManager() *runningManager {
	GinkgoHelper()
	calls.Reset()
	m, err := testutil.StartManager(ctx, env, func(m ctrl.Manager) error {
		r := &runtimepolicy.Reconciler{Client: testutil.CountingClient[*v1alpha1.RuntimePolicy](m.GetClient(), calls), MaxConcurrentReconciles: 2}
		return r.SetupWithManager(m)
	})
	Expect(err).NotTo(HaveOccurred())
	return &runningManager{RunningManager: m}
}

func (m *runningManager) stop() {
	GinkgoHelper()
	Expect(m.Stop()).To(Succeed())
}
