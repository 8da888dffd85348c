package agentharness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/harness/objects"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// The suite runs the controller in a real manager against a real etcd and
// kube-apiserver (envtest). envtest has no kubelet and no StatefulSet
// controller, so the specs create the server pods the StatefulSet would and
// write their status as a kubelet would — pod IPs 127.0.0.x, an imageID —
// while real `codex app-server`s (internal/testutil/codextest) listen there with the
// auth arguments of the operator's own pod template. The controller's
// handshakes therefore reach real servers.

const (
	operatorNamespace = "harness-operator-system"
	// nsPrefix names the suite's namespaces, the manager's harness namespaces.
	nsPrefix = "ah"
)

var (
	suiteT      *testing.T
	testEnv     *envtest.Environment
	k8sClient   client.Client
	ctx         context.Context
	cancel      context.CancelFunc
	stub        *stubmodel.Server
	appPort     int32
	codexBin    string
	codexOldBin string
	handshakes  = &handshakeCounter{byURL: map[string]int{}}
	calls       = &testutil.Calls{} // the reconciler's reads, writes and returns
	nextHostNum atomic.Int32
	nsCounter   atomic.Int32
	mgrDone     = make(chan struct{})
)

func TestAgentHarnessController(t *testing.T) {
	suiteT = t
	RegisterFailHandler(Fail)
	RunSpecs(t, "AgentHarness controller suite (envtest + real codex app-server)")
}

// handshakeCounter counts the controller's handshakes per URL.
type handshakeCounter struct {
	mu    sync.Mutex
	byURL map[string]int
}

func (c *handshakeCounter) wrap(next handshakeFunc) handshakeFunc {
	return func(ctx context.Context, url string, auth appserver.WebSocketOptions) (serverFacts, error) {
		c.mu.Lock()
		c.byURL[url]++
		c.mu.Unlock()
		return next(ctx, url, auth)
	}
}

// count is the number of handshakes to any of the hosts.
func (c *handshakeCounter) count(hosts ...string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for url, k := range c.byURL {
		for _, h := range hosts {
			if strings.HasPrefix(url, "ws://"+h+":") {
				n += k
			}
		}
	}
	return n
}

// executable is the codex binary named by env; the suite fails (never
// skips) without it. setup is the command that installs it.
func executable(env, setup string) string {
	p := os.Getenv(env)
	Expect(p).NotTo(BeEmpty(), "%s must name the real codex binary: run `make test`, or set %s=$(%s)", env, env, setup)
	fi, err := os.Stat(p)
	Expect(err).NotTo(HaveOccurred(), "%s=%q", env, p)
	Expect(fi.Mode()&0o111).NotTo(BeZero(), "%s=%q is not executable", env, p)
	return p
}

var _ = BeforeSuite(func() {
	// The manager logs through calls, which learns from the log when a reconcile returns.
	ctrl.SetLogger(calls.Logger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true))))
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	SetDefaultConsistentlyPollingInterval(100 * time.Millisecond)
	Expect(os.Getenv("KUBEBUILDER_ASSETS")).NotTo(BeEmpty(),
		"KUBEBUILDER_ASSETS must point at the etcd and kube-apiserver binaries: run `make test` (hack/setup-envtest.sh builds them)")
	codexBin = executable(codextest.EnvBin, "hack/setup-codex.sh")
	codexOldBin = executable("CODEX_BIN_BELOW_FLOOR", "hack/setup-codex.sh 0.148.0")

	var err error
	stub, err = stubmodel.New()
	Expect(err).NotTo(HaveOccurred())

	// One port for every server; each server gets its own 127.0.0.x. The
	// port is leased below the ephemeral range, so no bind(0) of a parallel
	// package lands on it at any of those addresses.
	port, err := testutil.FreePort()
	Expect(err).NotTo(HaveOccurred())
	appPort = int32(port)
	nextHostNum.Store(1)

	ctx, cancel = context.WithCancel(context.Background())
	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	testutil.AdvertiseLoopback(testEnv)
	cfg, err := testEnv.Start()
	Expect(err).NotTo(HaveOccurred())

	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(v1alpha1.AddToScheme(scheme)).To(Succeed())
	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())

	// Harnesses labelled gatewayManagerLabel belong to a second manager,
	// which knows the model gateway (startGatewayManager); this one runs
	// without --model-gateway-url and never sees them.
	notGateway, err := labels.Parse("!" + gatewayManagerLabel)
	Expect(err).NotTo(HaveOccurred())
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{ByObject: map[client.Object]cache.ByObject{&v1alpha1.AgentHarness{}: {Label: notGateway}}},
	})
	Expect(err).NotTo(HaveOccurred())
	r := &Reconciler{
		Client:                  testutil.CountingClient[*v1alpha1.AgentHarness](mgr.GetClient(), calls),
		MaxConcurrentReconciles: 4,
		AppServerPort:           appPort,
		HarnessNamespaces:       testutil.SuiteNamespaces(nsPrefix),
		ExternalDial:            testutil.LoopbackExternalDial,
	}
	r.handshake = handshakes.wrap(appServerHandshake)
	Expect(r.SetupWithManager(mgr)).To(Succeed())
	Expect(r.OperatorNamespace).To(Equal(operatorNamespace), "the default operator namespace")
	go func() {
		defer GinkgoRecover()
		defer close(mgrDone)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	startGatewayManager(cfg, scheme)
})

var _ = AfterSuite(func() {
	if cancel != nil {
		cancel()
		Eventually(mgrDone, 30*time.Second).Should(BeClosed())
		Eventually(gatewayMgrDone, 30*time.Second).Should(BeClosed())
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
	if stub != nil {
		stub.Close()
	}
})

// --- helpers ---

// newNamespace creates a namespace for one spec (with the default
// ServiceAccount that pod admission looks up). It enforces the `restricted`
// Pod Security level, so the apiserver refuses a server pod built from a
// template that is not restricted.
func newNamespace() string {
	name := testutil.SuiteNamespace(nsPrefix, int(nsCounter.Add(1)))
	Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
	}}})).To(Succeed())
	err := k8sClient.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "default"}})
	if !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
	return name
}

// nextHost is a fresh loopback address for one server (127.0.0.2, .3, …).
func nextHost() string {
	return fmt.Sprintf("127.0.0.%d", nextHostNum.Add(1))
}

func metavOM(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }

func digest(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }

func managedHarness(ns, name string, replicas int32) *v1alpha1.AgentHarness {
	return &v1alpha1.AgentHarness{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.AgentHarnessSpec{
			Adapter: v1alpha1.AdapterCodexAppServer,
			AppServer: &v1alpha1.AppServerWorkload{
				Image:    "registry.example/codex@" + digest('a'),
				Replicas: ptr.To(replicas),
			},
		},
	}
}

func getHarness(h *v1alpha1.AgentHarness) *v1alpha1.AgentHarness {
	GinkgoHelper()
	out := &v1alpha1.AgentHarness{}
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(h), out)).To(Succeed())
	return out
}

// cond is a condition's "Status/Reason", or "" when it is missing.
func cond(h *v1alpha1.AgentHarness, typ string) string {
	c := meta.FindStatusCondition(h.Status.Conditions, typ)
	if c == nil {
		return ""
	}
	return string(c.Status) + "/" + c.Reason
}

func condMessage(h *v1alpha1.AgentHarness, typ string) string {
	c := meta.FindStatusCondition(h.Status.Conditions, typ)
	if c == nil {
		return ""
	}
	return c.Message
}

// statusOf polls a harness for Eventually.
func statusOf(h *v1alpha1.AgentHarness) func() *v1alpha1.AgentHarness {
	return func() *v1alpha1.AgentHarness {
		out := &v1alpha1.AgentHarness{}
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(h), out); err != nil {
			return nil
		}
		return out
	}
}

// haveCondition matches a harness whose condition typ is "Status/Reason".
func haveCondition(typ, statusReason string) OmegaMatcher {
	return WithTransform(func(h *v1alpha1.AgentHarness) string {
		if h == nil {
			return ""
		}
		return cond(h, typ)
	}, Equal(statusReason))
}

func waitStatefulSet(h *v1alpha1.AgentHarness) *appsv1.StatefulSet {
	GinkgoHelper()
	sts := &appsv1.StatefulSet{}
	Eventually(func() error {
		return k8sClient.Get(ctx, types.NamespacedName{Namespace: h.Namespace, Name: objects.WorkloadName(h)}, sts)
	}).Should(Succeed())
	return sts
}

// authArgs are the pod template's app-server arguments other than
// `app-server` and the `--listen` pair, which the test replaces with a
// loopback address; the pod's shared secret file (the mounted token Secret)
// is replaced by a local copy of the token Secret's key.
func authArgs(sts *appsv1.StatefulSet) []string {
	GinkgoHelper()
	args := sts.Spec.Template.Spec.Containers[0].Args
	Expect(args).NotTo(BeEmpty())
	Expect(args[0]).To(Equal("app-server"))
	var out []string
	for i := 1; i < len(args); i++ {
		switch args[i] {
		case "--listen":
			i++
			continue
		case wsSharedSecretFile:
			secret := &corev1.Secret{}
			Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: sts.Namespace, Name: sts.Name + "-token"}, secret)).To(Succeed())
			file := filepath.Join(suiteT.TempDir(), "ws-shared-secret")
			Expect(os.WriteFile(file, secret.Data[objects.TokenSecretKey], 0o600)).To(Succeed())
			out = append(out, file)
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// startCodex starts a real app-server on host:appPort.
func startCodex(bin, host string, opts codextest.Options) *codextest.Server {
	GinkgoHelper()
	opts.Bin = bin
	opts.ProviderURL = stub.BaseURL()
	opts.Transport = codextest.WebSocket
	opts.ListenHost = host
	opts.Port = int(appPort)
	opts.Dir = suiteT.TempDir()
	srv, err := codextest.StartErr(suiteT, opts)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(srv.Kill)
	return srv
}

// startPodServer starts the app-server a server pod of sts would run: the
// pod template's own auth arguments, listening on host.
func startPodServer(bin string, sts *appsv1.StatefulSet, host string) *codextest.Server {
	GinkgoHelper()
	return startCodex(bin, host, codextest.Options{ExtraArgs: authArgs(sts)})
}

// createServerPod creates the pod the StatefulSet controller would, then
// writes the status a kubelet would: Running, Ready, podIP, imageID.
func createServerPod(sts *appsv1.StatefulSet, ordinal int, ip, imageID string) *corev1.Pod {
	GinkgoHelper()
	pod := testutil.ServerPod(sts, ordinal)
	Expect(k8sClient.Create(ctx, pod)).To(Succeed())
	setPodStatus(pod, ip, imageID, true)
	return pod
}

func setPodStatus(pod *corev1.Pod, ip, imageID string, ready bool) {
	GinkgoHelper()
	Expect(testutil.SetPodStatus(ctx, k8sClient, pod, ip, imageID, ready)).To(Succeed())
}

// eventsFor lists the Events regarding a harness as "type/reason: note".
func eventsFor(h *v1alpha1.AgentHarness) func() []string {
	return func() []string {
		var list corev1.EventList
		if err := k8sClient.List(ctx, &list, client.InNamespace(h.Namespace)); err != nil {
			return nil
		}
		var out []string
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == "AgentHarness" && e.InvolvedObject.Name == h.Name {
				out = append(out, e.Type+"/"+e.Reason+": "+e.Message)
			}
		}
		return out
	}
}
