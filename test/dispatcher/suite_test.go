package dispatcher_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/dispatcher/httpapi"
	"github.com/openclaw/harness-operator/internal/manager/webhook"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// This suite runs the system as it is deployed, each part its own OS
// process: envtest's etcd and kube-apiserver (real TokenReview,
// SubjectAccessReview, RBAC, TokenRequest, admission through the webhooks),
// bin/manager (controllers and webhooks, built from cmd/manager), and
// bin/dispatcher (built from cmd/dispatcher, leader-elected, self-managed
// TLS), a real `codex app-server` registered as an external AgentHarness,
// and the stub model behind it. The specs drive the dispatcher's API with a
// plain net/http client that trusts only the CA file the dispatcher wrote.
// One set of processes serves every spec; a Serial spec that needs the
// dispatcher down stops it (stopDispatcher) and it is started again with the
// same flags, addresses and journal directory (startDispatcher).

const (
	// serverToken is the app-server's capability token (the harness's
	// token Secret).
	serverToken = "dispatcher-e2e-capability-token-5b2f"
	testModel   = "openai/stub-model"
	// audience is the dispatcher's --token-audience.
	audience = "harness-dispatcher"
	// gatewayRole is the ClusterRole granting turns (as
	// config/rbac/gateway_role.yaml does for agentsessions/turns).
	gatewayRole       = "harness-gateway-e2e"
	operatorNamespace = "harness-operator-system"
	// stopTimeout is how long a process gets after SIGTERM before SIGKILL.
	stopTimeout = 15 * time.Second
)

var (
	suiteT *testing.T
	ctx    context.Context
	cancel context.CancelFunc

	env        *testutil.Env
	k8s        client.Client
	cs         kubernetes.Interface
	stub       *stubmodel.Server
	codex      *codextest.Server
	manager    *testutil.Process
	dispatcher *testutil.Process   // the running dispatcher (the latest start)
	procs      []*testutil.Process // started processes, in start order
	launch     dispatcherLaunch

	// apiBase is https://127.0.0.1:<port> of the dispatcher's API.
	apiBase string
	// metricsURL is the dispatcher's /metrics (plain HTTP: --metrics-insecure).
	metricsURL string
	// hc trusts only the CA the dispatcher wrote to --tls-ca-out.
	hc *http.Client

	// ns holds the codex harness, the sessions and the ServiceAccounts.
	ns string
	// gateway is a ServiceAccount token (the API server's audience) of an
	// account bound to gatewayRole in every namespace the suite creates;
	// audToken is the same account's token bound to the dispatcher's
	// audience; nobody is an account without any grant.
	gateway, audToken, nobody string

	setupDone bool
)

func TestDispatcherProcesses(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" || os.Getenv(codextest.EnvBin) == "" {
		t.Fatal("KUBEBUILDER_ASSETS and CODEX_BIN must be set: KUBEBUILDER_ASSETS=... CODEX_BIN=$(hack/setup-codex.sh) go test ./test/dispatcher/")
	}
	suiteT = t
	RegisterFailHandler(Fail)
	RunSpecs(t, "Dispatcher HTTP API suite (manager and dispatcher processes, envtest, real Codex)")
}

var _ = BeforeSuite(func() {
	// A setup failure shows what the processes said.
	defer func() {
		if !setupDone {
			dumpLogs()
		}
	}()
	ctx, cancel = context.WithCancel(context.Background())
	work := suiteT.TempDir()

	// Build while the control plane starts: both take seconds.
	built := make(chan error, 1)
	binDir := filepath.Join(work, "bin")
	go func() { built <- testutil.BuildBinaries(binDir, "./cmd/manager", "./cmd/dispatcher") }()

	var err error
	stub, err = stubmodel.New()
	Expect(err).NotTo(HaveOccurred())
	// Approved commands write their markers to the server's workdir: no
	// sandbox, as the dispatcher runs Codex in its Pods. Under codextest's
	// read-only one Codex ran an approved command sandboxed in about 1 run
	// of 3, and its write failed (Read-only file system); workspace-write
	// would add its protected directories to every working directory.
	codex, err = codextest.StartErr(suiteT, codextest.Options{
		ProviderURL: stub.BaseURL(), Transport: codextest.WebSocket, WSToken: serverToken,
		Dir: filepath.Join(work, "codex"), ExtraArgs: []string{"-c", `sandbox_mode="danger-full-access"`},
	})
	Expect(err).NotTo(HaveOccurred())

	env, err = testutil.StartEnv()
	Expect(err).NotTo(HaveOccurred())
	k8s = env.Client
	cs, err = kubernetes.NewForConfig(env.Config)
	Expect(err).NotTo(HaveOccurred())
	admin, err := env.AddUser(envtest.User{Name: "dispatcher-e2e-admin", Groups: []string{"system:masters"}})
	Expect(err).NotTo(HaveOccurred())
	kc, err := admin.KubeConfig()
	Expect(err).NotTo(HaveOccurred())
	kubeconfig := filepath.Join(work, "kubeconfig")
	Expect(os.WriteFile(kubeconfig, kc, 0o600)).To(Succeed())

	// The webhooks are served by the manager on loopback and reached by
	// URL, as hack/devcluster does for `make run`; the manager injects the
	// CA of its self-managed certificates into both configurations.
	webhookPort := freePort()
	Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}})).To(Succeed())
	validating, mutating := webhook.Configurations(webhook.URLClientConfig(fmt.Sprintf("https://localhost:%d", webhookPort)))
	Expect(k8s.Create(ctx, validating)).To(Succeed())
	Expect(k8s.Create(ctx, mutating)).To(Succeed())

	Expect(<-built).To(Succeed())
	logDir := filepath.Join(work, "logs")
	Expect(os.MkdirAll(logDir, 0o700)).To(Succeed())

	managerProbe := freeAddr()
	managerArgs := append([]string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--metrics-bind-address=0",
		"--health-probe-bind-address=" + managerProbe,
		"--operator-namespace=" + operatorNamespace,
		"--webhook-cert-mode=self-managed",
		"--webhook-host=127.0.0.1",
		"--webhook-port=" + strconv.Itoa(webhookPort),
		"--webhook-dns-name=localhost",
		"--webhook-cert-dir=" + filepath.Join(work, "webhook-certs"),
		"--webhook-cert-dir-from-secret",
	}, testutil.ManagerProcessArgs()...)
	manager = startProcess("manager", filepath.Join(binDir, "manager"), logDir, managerArgs...)
	bindAddr, dispatcherProbe, dispatcherMetrics := freeAddr(), freeAddr(), freeAddr()
	launch = dispatcherLaunch{
		bin: filepath.Join(binDir, "dispatcher"), logDir: logDir, probeAddr: dispatcherProbe,
		caFile: filepath.Join(work, "dispatcher-ca.pem"), journalDir: filepath.Join(work, "journal"),
	}
	launch.args = []string{
		"--kubeconfig=" + kubeconfig,
		"--bind-address=" + bindAddr,
		"--probe-bind-address=" + dispatcherProbe,
		"--metrics-bind-address=" + dispatcherMetrics,
		"--metrics-insecure",
		"--journal-dir=" + launch.journalDir,
		"--tls-ca-out=" + launch.caFile,
		"--token-audience=" + audience,
		"--leader-elect=true",
		"--leader-election-namespace=default",
		"--shutdown-grace=5s",
	}
	launch.args = append(launch.args, testutil.DispatcherProcessArgs()...)
	startDispatcher()
	Expect(manager.WaitReady("http://"+managerProbe+"/readyz?verbose", 90*time.Second)).To(Succeed())
	apiBase = "https://" + bindAddr
	metricsURL = "http://" + dispatcherMetrics + "/metrics"

	Expect(testutil.WaitWebhooksServing(ctx, k8s, 30*time.Second)).To(Succeed())

	// Everything below goes through the manager's admission webhooks.
	Expect(k8s.Create(ctx, &v1alpha1.RuntimePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "codex-only"},
		Spec: v1alpha1.RuntimePolicySpec{
			Providers:        []v1alpha1.ProviderRuntimePolicy{{Provider: "openai", Runtime: "codex"}},
			SessionOverrides: v1alpha1.SessionOverridesDeny,
		},
	})).To(Succeed())
	Expect(k8s.Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: gatewayRole},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{httpapi.APIGroup}, Resources: []string{"agentsessions/turns"}, Verbs: []string{"create", "get"}}},
	})).To(Succeed())
	ns = newNamespace("api")
	gateway = serviceAccountToken(ns, "gateway", nil)
	audToken = serviceAccountToken(ns, "gateway", []string{audience})
	nobody = serviceAccountToken(ns, "nobody", nil)
	registerCodex(ns, codex.URL, true)
	setupDone = true
})

var _ = AfterEach(func() {
	if CurrentSpecReport().Failed() {
		dumpLogs()
	}
})

var _ = AfterSuite(func() {
	// The dispatcher first (it holds connections to the app-server), then
	// the manager, the app-server, the control plane and the stub.
	for i := len(procs) - 1; i >= 0; i-- {
		GinkgoWriter.Println(procs[i].Stop(stopTimeout))
	}
	if codex != nil {
		codex.Kill()
	}
	if cancel != nil {
		cancel()
	}
	Expect(env.Stop()).To(Succeed())
	if stub != nil {
		stub.Close()
	}
	for _, p := range procs {
		if err := p.Unexpected(); err != nil {
			Fail(fmt.Sprintf("%v\n%s", err, p.Tail(4<<10)))
		}
	}
})

// --- processes ---

// startProcess starts a binary of the project and records it for AfterSuite.
func startProcess(name, bin, logDir string, args ...string) *testutil.Process {
	GinkgoHelper()
	p, err := testutil.StartProcess(name, bin, logDir, nil, args...)
	Expect(err).NotTo(HaveOccurred())
	procs = append(procs, p)
	GinkgoWriter.Printf("started %s (pid %d), log %s\n", name, p.Pid(), p.LogPath)
	return p
}

// dispatcherLaunch is how BeforeSuite started the dispatcher: a restart
// uses the same flags, addresses and journal directory.
type dispatcherLaunch struct {
	bin, logDir, probeAddr string
	// caFile is --tls-ca-out; journalDir is --journal-dir.
	caFile, journalDir string
	args               []string
	starts             int
}

// startDispatcher starts the dispatcher process, waits until it is ready
// (it leads and serves its API) and points hc at the CA it wrote: the
// ephemeral CA is new at every start.
func startDispatcher() {
	GinkgoHelper()
	launch.starts++
	name := "dispatcher"
	if launch.starts > 1 {
		// Its own log: an earlier start's is kept for AfterSuite's race check.
		name = fmt.Sprintf("dispatcher-%d", launch.starts)
	}
	dispatcher = startProcess(name, launch.bin, launch.logDir, launch.args...)
	Expect(dispatcher.WaitReady("http://"+launch.probeAddr+"/readyz?verbose", 90*time.Second)).To(Succeed())

	tr, err := testutil.TrustingTransport(launch.caFile)
	Expect(err).NotTo(HaveOccurred(), "--tls-ca-out")
	if hc != nil {
		hc.CloseIdleConnections()
	}
	hc = &http.Client{Transport: tr}
}

// stopDispatcher stops the dispatcher process for a spec that needs it down.
// Unless the spec starts it again (startDispatcher), the spec's cleanup does,
// also when the spec fails, so later specs find it serving.
func stopDispatcher() {
	GinkgoHelper()
	stopped := dispatcher
	GinkgoWriter.Println(stopped.Stop(stopTimeout))
	DeferCleanup(func() {
		if dispatcher == stopped {
			startDispatcher()
		}
	})
}

// dumpLogs writes the tails of the processes' logs (and the app-server's
// stderr) to GinkgoWriter, shown with the failed spec.
func dumpLogs() {
	for _, p := range procs {
		GinkgoWriter.Printf("\n----- %s log (%s), last 16 KiB -----\n%s\n", p.Name, p.LogPath, p.Tail(16<<10))
	}
	if codex != nil {
		s := codex.Stderr()
		if len(s) > 8<<10 {
			s = s[len(s)-8<<10:]
		}
		GinkgoWriter.Printf("\n----- codex app-server stderr, last 8 KiB -----\n%s\n", s)
	}
}

func freeAddr() string {
	GinkgoHelper()
	addr, err := testutil.FreeAddr()
	Expect(err).NotTo(HaveOccurred())
	return addr
}

func freePort() int {
	GinkgoHelper()
	port, err := testutil.FreePort()
	Expect(err).NotTo(HaveOccurred())
	return port
}

// --- fixtures ---

// newNamespace creates a namespace in which the gateway account (of ns,
// once created) holds gatewayRole.
// namespacesMade counts newNamespace's namespaces (specs run one at a time).
var namespacesMade int

func newNamespace(prefix string) string {
	GinkgoHelper()
	// The manager serves only its --harness-namespaces: the suite's
	// namespaces are the process suites' list, in order.
	namespacesMade++
	obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testutil.ProcessNamespace(namespacesMade),
		Labels: map[string]string{"harness.openclaw.dev/test-purpose": prefix}}}
	Expect(k8s.Create(ctx, obj)).To(Succeed())
	saNS := ns
	if saNS == "" {
		saNS = obj.Name
	}
	Expect(k8s.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: obj.Name, Name: "gateway"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: gatewayRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: saNS, Name: "gateway"}},
	})).To(Succeed())
	return obj.Name
}

// serviceAccountToken creates the ServiceAccount (unless it exists) and
// returns a token for it from the TokenRequest API.
func serviceAccountToken(namespace, name string, audiences []string) string {
	GinkgoHelper()
	token, err := testutil.ServiceAccountToken(ctx, k8s, cs, namespace, name, audiences...)
	Expect(err).NotTo(HaveOccurred())
	return token
}

// registerCodex creates the external AgentHarness codex at url with its
// token Secret and waits for the manager to make it Ready (or, for a
// server that is down, to report WorkloadReady False).
func registerCodex(namespace, url string, ready bool) {
	GinkgoHelper()
	h, err := testutil.ExternalCodex(ctx, k8s, namespace, url, serverToken)
	Expect(err).NotTo(HaveOccurred())
	typ, want := v1alpha1.HarnessConditionReady, metav1.ConditionTrue
	if !ready {
		typ, want = v1alpha1.HarnessConditionWorkloadReady, metav1.ConditionFalse
	}
	_, err = testutil.WaitHarnessCondition(ctx, k8s, h, typ, want, 40*time.Second)
	Expect(err).NotTo(HaveOccurred())
}

// newSession creates an AgentSession on model.
func newSession(namespace, name, model string) {
	GinkgoHelper()
	Expect(k8s.Create(ctx, &v1alpha1.AgentSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       v1alpha1.AgentSessionSpec{AgentID: "main", SessionKey: "agent:main:" + name, SessionID: name + "-id", Model: model},
	})).To(Succeed())
	// The dispatcher adds its finalizer from its own informer cache: once
	// it is there, the dispatcher knows the session (a turn sent earlier
	// could still get 404 SessionNotFound from a cache that lags).
	Eventually(func(g Gomega) {
		s := &v1alpha1.AgentSession{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, s)).To(Succeed())
		g.Expect(s.Finalizers).To(ContainElement(v1alpha1.JournalFinalizer))
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

func sessionURL(namespace, name string) string {
	return apiBase + "/v1/namespaces/" + namespace + "/agentsessions/" + name
}
