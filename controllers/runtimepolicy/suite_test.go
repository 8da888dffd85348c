package runtimepolicy_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	harnessv1alpha1 "github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/controllers/runtimepolicy"
	"github.com/openclaw/harness-operator/internal/testutil"
)

// This suite runs the RuntimePolicy reconciler alone in a manager against a
// real etcd and kube-apiserver with the generated CRDs, and asserts through a
// direct (uncached) client.
var (
	testEnv   *envtest.Environment
	cfg       *rest.Config
	scheme    *runtime.Scheme
	k8sClient client.Client
	ctx       context.Context
	cancel    context.CancelFunc
	mgr       *runningManager
)

func TestRuntimePolicyController(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "RuntimePolicy controller suite (envtest)")
}

var _ = BeforeSuite(func() {
	Expect(os.Getenv("KUBEBUILDER_ASSETS")).NotTo(BeEmpty(),
		"KUBEBUILDER_ASSETS must point at the etcd and kube-apiserver binaries: run `make test`, which builds them with hack/setup-envtest.sh")
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.Background())

	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	var err error
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())

	scheme = runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(harnessv1alpha1.AddToScheme(scheme)).To(Succeed())
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	mgr = startManager()
})

var _ = AfterSuite(func() {
	if mgr != nil {
		mgr.stop()
	}
	if cancel != nil {
		cancel()
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
})

// runningManager is a manager running just the RuntimePolicy reconciler.
type runningManager struct {
	calls  *testutil.Calls
	cancel context.CancelFunc
	done   chan struct{}
}

// startManager starts a manager with the RuntimePolicy reconciler, whose
// client counts its calls, and waits for its caches.
func startManager() *runningManager {
	GinkgoHelper()
	m, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// A restart in the same process registers the controller name again.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	Expect(err).NotTo(HaveOccurred())
	rm := &runningManager{calls: &testutil.Calls{}, done: make(chan struct{})}
	r := &runtimepolicy.Reconciler{Client: testutil.CountingClient[*harnessv1alpha1.RuntimePolicy](m.GetClient(), rm.calls), MaxConcurrentReconciles: 2}
	Expect(r.SetupWithManager(m)).To(Succeed())
	var mctx context.Context
	mctx, rm.cancel = context.WithCancel(ctx)
	go func() {
		defer GinkgoRecover()
		defer close(rm.done)
		Expect(m.Start(mctx)).To(Succeed())
	}()
	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	defer syncCancel()
	Expect(m.GetCache().WaitForCacheSync(syncCtx)).To(BeTrue())
	return rm
}

func (m *runningManager) stop() {
	m.cancel()
	Eventually(m.done, 30*time.Second).Should(BeClosed())
}
