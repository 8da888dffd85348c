//go:build e2e

// Package system is the end-to-end suite: the Helm chart installed on a real
// local cluster (hack/local-cluster.sh: etcd, kube-apiserver with Pod Security
// admission, kube-controller-manager, kube-scheduler and a KWOK node), driven
// with the real kubectl, helm and kubectl-harness binaries the way a platform
// team uses them.
//
// Simulated Pods run no containers, so the manager and the dispatcher run as
// local processes beside the cluster — with tokens of the chart's own
// ServiceAccounts, so the chart's RBAC is all they have — and the chart's
// webhook configurations point at the local manager through the chart's
// development value webhook.url. The sample harness is a real
// `codex app-server` on a free loopback port (the applied sample is patched to
// it, so `make run`'s 4500 stays free) answering from the stub model.
//
// `make test-e2e` brings the cluster up, sets the environment read here,
// runs this suite and tears the cluster down.
package system

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/internal/codextest"
	"github.com/openclaw/harness-operator/internal/scheme"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/test/stubmodel"
)

const (
	release           = "harness-operator"
	operatorNamespace = "harness-operator-system"
	stopGrace         = 15 * time.Second
)

// The namespaces of the suite. harnessNamespaces is what the chart is
// installed with: the operator may read Secrets only there.
var (
	agentsNS          = "agents" // the samples' namespace
	teamBNS           = "team-b"
	managedNS         = "e2e-managed"
	outsideNS         = "e2e-outside"
	harnessNamespaces = []string{agentsNS, teamBNS, managedNS}
)

func TestSystem(t *testing.T) {
	suiteT = t
	RegisterFailHandler(Fail)
	RunSpecs(t, "end to end on a local cluster")
}

var (
	suiteT *testing.T
	ctx    = context.Background()

	// env is what `make test-e2e` hands the suite.
	env struct {
		kubeconfig, kubectl, helm, codex, codexBelowFloor, binDir, repoRoot string
	}
	work  string // the suite's scratch directory
	admin client.Client
	cs    kubernetes.Interface
	cfg   *rest.Config

	stub        *stubmodel.Server
	sampleCodex *codextest.Server
	procs       []*testutil.Process
)

var _ = BeforeSuite(func() {
	env.kubeconfig = requireEnv("KUBECONFIG", "the local cluster's admin kubeconfig (hack/local-cluster.sh env)")
	env.kubectl = requireEnv("KUBECTL", "the kubectl binary (hack/local-cluster.sh env)")
	env.helm = requireEnv("HELM_BIN", "the helm binary (hack/setup-helm.sh)")
	env.codex = requireEnv(codextest.EnvBin, "the codex binary (hack/setup-codex.sh)")
	env.codexBelowFloor = requireEnv("CODEX_BIN_BELOW_FLOOR", "a codex release below the floor (hack/setup-codex.sh 0.148.0)")
	env.binDir = requireEnv("E2E_BIN_DIR", "the directory of manager, dispatcher and kubectl-harness (make build)")
	var err error
	env.repoRoot, err = testutil.ModuleRoot()
	Expect(err).NotTo(HaveOccurred())
	work = suiteT.TempDir()

	cfg, err = clientcmd.BuildConfigFromFlags("", env.kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	s, err := scheme.New()
	Expect(err).NotTo(HaveOccurred())
	admin, err = client.New(cfg, client.Options{Scheme: s})
	Expect(err).NotTo(HaveOccurred())
	cs, err = kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())

	stub, err = stubmodel.New()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(stub.Close)
})

var _ = ReportAfterEach(func(report SpecReport) {
	if report.Failed() {
		dumpLogs()
	}
})

var _ = AfterSuite(func() {
	for i := len(procs) - 1; i >= 0; i-- {
		GinkgoWriter.Println(procs[i].Stop(stopGrace))
	}
	for _, p := range procs {
		if err := p.Unexpected(); err != nil {
			Fail(fmt.Sprintf("%v\n%s", err, p.Tail(4<<10)))
		}
	}
})

func requireEnv(name, what string) string {
	GinkgoHelper()
	v := os.Getenv(name)
	if v == "" {
		Fail(fmt.Sprintf("%s is not set (%s). Run `make test-e2e`, which builds and starts everything and sets it.", name, what))
	}
	return v
}

// result is a finished command.
type result struct {
	stdout, stderr string
	exit           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.exit, r.stdout, r.stderr)
}

// run runs a binary with the admin kubeconfig (unless env overrides it).
func run(extraEnv []string, bin string, args ...string) result {
	GinkgoHelper()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, bin, args...)
	cmd.Dir = env.repoRoot
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+env.kubeconfig), extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	if err != nil {
		var exitErr *exec.ExitError
		Expect(errors.As(err, &exitErr)).To(BeTrue(), "run %s %v: %v", bin, args, err)
		r.exit = exitErr.ExitCode()
	}
	GinkgoWriter.Printf("$ %s %s\n%s\n", filepath.Base(bin), strings.Join(redacted(args), " "), r)
	return r
}

// redacted hides the values of token literals (kubectl create secret
// --from-literal=token=…) in what the suite prints.
func redacted(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if j := strings.Index(a, "token="); j >= 0 {
			a = a[:j+len("token=")] + "<redacted>"
		}
		out[i] = a
	}
	return out
}

func kubectl(args ...string) result { GinkgoHelper(); return run(nil, env.kubectl, args...) }
func helm(args ...string) result    { GinkgoHelper(); return run(nil, env.helm, args...) }

// mustKubectl runs kubectl and expects exit 0.
func mustKubectl(args ...string) string {
	GinkgoHelper()
	r := kubectl(args...)
	Expect(r.exit).To(Equal(0), "kubectl %v:\n%s", args, r)
	return r.stdout
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates as the
// ServiceAccount with a token from the TokenRequest API, for the local
// manager and dispatcher: they get exactly the chart's grants.
func serviceAccountKubeconfig(namespace, name string) string {
	GinkgoHelper()
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3 * 3600)},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred(), "request a token for ServiceAccount %s/%s", namespace, name)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: "local", AuthInfo: name, Namespace: namespace}
	kc.CurrentContext = name
	path := filepath.Join(work, name+".kubeconfig")
	Expect(clientcmd.WriteToFile(*kc, path)).To(Succeed())
	return path
}

// startProcess starts a binary of bin/ and records it for AfterSuite.
func startProcess(name string, extraEnv []string, args ...string) *testutil.Process {
	GinkgoHelper()
	logDir := filepath.Join(work, "logs")
	Expect(os.MkdirAll(logDir, 0o700)).To(Succeed())
	p, err := testutil.StartProcess(name, filepath.Join(env.binDir, name), logDir, extraEnv, args...)
	Expect(err).NotTo(HaveOccurred())
	procs = append(procs, p)
	return p
}

func dumpLogs() {
	for _, p := range procs {
		GinkgoWriter.Printf("\n----- %s log (%s), last 12 KiB -----\n%s\n", p.Name, p.LogPath, p.Tail(12<<10))
	}
	for _, s := range []*codextest.Server{sampleCodex} {
		if s != nil {
			GinkgoWriter.Printf("\n----- codex app-server stderr -----\n%s\n", lastBytes(s.Stderr(), 4<<10))
		}
	}
}

func lastBytes(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func freeAddr() string {
	GinkgoHelper()
	addr, err := testutil.FreeAddr()
	Expect(err).NotTo(HaveOccurred())
	return addr
}

func randomToken() string {
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	return hex.EncodeToString(raw)
}
