package agentsession_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	harnessv1alpha1 "github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/controllers/agentsession"
)

// This suite runs the AgentSession reconciler alone in a manager against a
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

func TestAgentSessionController(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "AgentSession controller suite (envtest)")
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

// calls counts what the reconciler asks of the API through its client.
type calls struct {
	mu     sync.Mutex
	writes []string       // every Create/Update/Patch/Apply/Delete, sub-resources included
	gets   map[string]int // Gets of AgentSessions (one per reconcile), by namespace/name
}

func (c *calls) write(verb string, what any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = append(c.writes, fmt.Sprintf("%s %v", verb, what))
}

func (c *calls) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes, c.gets = nil, map[string]int{}
}

func (c *calls) writeLog() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.writes...)
}

func (c *calls) reconciled(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gets[name]
}

// withWatch lets the manager's client be wrapped by interceptor.NewClient;
// the reconciler never watches through its client.
type withWatch struct{ client.Client }

func (withWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("watch is not used by the reconciler")
}

// countingClient wraps c and records every write and every Get of an AgentSession.
func countingClient(c client.Client, n *calls) client.Client {
	return interceptor.NewClient(withWatch{c}, interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*harnessv1alpha1.AgentSession); ok {
				n.mu.Lock()
				n.gets[key.String()]++
				n.mu.Unlock()
			}
			return cl.Get(ctx, key, obj, opts...)
		},
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			n.write("create", client.ObjectKeyFromObject(obj))
			return cl.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			n.write("update", client.ObjectKeyFromObject(obj))
			return cl.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			n.write("patch", client.ObjectKeyFromObject(obj))
			return cl.Patch(ctx, obj, patch, opts...)
		},
		Apply: func(ctx context.Context, cl client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			n.write("apply", obj)
			return cl.Apply(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			n.write("delete", client.ObjectKeyFromObject(obj))
			return cl.Delete(ctx, obj, opts...)
		},
		DeleteAllOf: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.DeleteAllOfOption) error {
			n.write("deleteallof", obj.GetObjectKind())
			return cl.DeleteAllOf(ctx, obj, opts...)
		},
		SubResourceCreate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			n.write("create/"+sub, client.ObjectKeyFromObject(obj))
			return cl.SubResource(sub).Create(ctx, obj, subObj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			n.write("update/"+sub, client.ObjectKeyFromObject(obj))
			return cl.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			n.write("patch/"+sub, client.ObjectKeyFromObject(obj))
			return cl.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
		SubResourceApply: func(ctx context.Context, cl client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			n.write("apply/"+sub, obj)
			return cl.SubResource(sub).Apply(ctx, obj, opts...)
		},
	})
}

// runningManager is a manager running just the AgentSession reconciler.
type runningManager struct {
	calls  *calls
	cancel context.CancelFunc
	done   chan struct{}
}

// startManager starts a manager with the AgentSession reconciler, whose
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
	rm := &runningManager{calls: &calls{gets: map[string]int{}}, done: make(chan struct{})}
	r := &agentsession.Reconciler{Client: countingClient(m.GetClient(), rm.calls), MaxConcurrentReconciles: 4}
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
