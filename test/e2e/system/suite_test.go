//go:build e2e

// Package system is the end-to-end suite: the Helm chart installed with the
// project's own images on a real local cluster (hack/local-cluster.sh: etcd,
// kube-apiserver with Pod Security admission, kube-controller-manager,
// kube-scheduler, a real node — containerd, runc, a CNI bridge, kubelet and
// kube-proxy — and a tainted KWOK node), driven with the real kubectl, helm
// and kubectl-harness binaries the way a platform team uses them.
//
// The manager and the dispatcher run as Pods of the images `make images`
// built (imported into the node's containerd; nothing is ever pulled); the API
// server calls the webhooks through their Service and `kubectl harness`
// reaches the dispatcher through the API server's service proxy. A managed
// AgentHarness runs the Codex app-server image in a real container. What stays
// on this machine: the stub model and the external sample harness (a real
// `codex app-server`), both listening on the CNI bridge's gateway address, so
// the Pods reach them the way they reach a service outside the cluster, and
// the suite can hold a model reply to make a fault land mid-turn. Last, the
// release moves to three dispatcher Pods on a PostgreSQL server on this
// machine for the many-dispatchers fault campaign (replicas_test.go).
//
// `make test-e2e` builds the images, brings the cluster up, sets the
// environment read here, runs this suite and tears the cluster down.
package system

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/internal/platform/scheme"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

const (
	release           = "harness-operator"
	operatorNamespace = "harness-operator-system"
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
	RunSpecs(t, "end to end on a local cluster with a real node")
}

var (
	suiteT *testing.T
	ctx    = context.Background()

	// env is what `make test-e2e` hands the suite.
	env struct {
		kubeconfig, kubectl, helm, codex, codexBelowFloor, binDir, repoRoot string
		// gateway is the CNI bridge's address on this machine: what Pods
		// reach the host at.
		gateway string
		// volumesDir is where the node's hostPath volumes may live.
		volumesDir string
		// seccompDir is the node's directory of Localhost seccomp profiles.
		seccompDir string
		// images are the refs and digests `make images` wrote (images.env).
		images map[string]string
	}
	work  string // the suite's scratch directory
	admin client.Client
	cfg   *rest.Config
	cs    kubernetes.Interface

	// stub is the model every Codex of the suite answers from, on the
	// gateway address.
	stub        *stubmodel.Server
	sampleCodex *codextest.Server
	// sampleFront serves sampleCodex at wss:// (tlsfront_test.go).
	sampleFront *tlsFront
)

var _ = BeforeSuite(func() {
	env.kubeconfig = requireEnv("KUBECONFIG", "the local cluster's admin kubeconfig (hack/local-cluster.sh env)")
	env.kubectl = requireEnv("KUBECTL", "the kubectl binary (hack/local-cluster.sh env)")
	env.helm = requireEnv("HELM_BIN", "the helm binary (hack/setup-helm.sh)")
	env.codex = requireEnv(codextest.EnvBin, "the codex binary (hack/setup-codex.sh)")
	env.codexBelowFloor = requireEnv("CODEX_BIN_BELOW_FLOOR", "a codex release below the floor (hack/setup-codex.sh 0.148.0)")
	env.binDir = requireEnv("E2E_BIN_DIR", "the directory of kubectl-harness (make build)")
	env.gateway = requireEnv("LOCAL_CLUSTER_GATEWAY_IP", "the CNI bridge's gateway address (hack/local-cluster.sh env)")
	env.volumesDir = requireEnv("LOCAL_CLUSTER_VOLUMES_DIR", "the node's hostPath volumes directory (hack/local-cluster.sh env)")
	env.seccompDir = requireEnv("LOCAL_CLUSTER_SECCOMP_DIR", "the node's Localhost seccomp profiles directory (hack/local-cluster.sh env)")
	env.images = readImagesEnv(requireEnv("E2E_IMAGES_ENV", "the images.env of `make images`"))
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

	// The gateway address is the host's side of the pod network: the stub
	// model listens there so Codex in a Pod reaches it.
	l, err := net.Listen("tcp", net.JoinHostPort(env.gateway, "0"))
	Expect(err).NotTo(HaveOccurred(), "listen on the bridge's gateway address")
	stub = stubmodel.Serve(l)
	DeferCleanup(stub.Close)
})

var _ = ReportAfterEach(func(report SpecReport) {
	if report.Failed() {
		dumpCluster()
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

// readImagesEnv reads NAME_IMAGE=ref and NAME_DIGEST=sha256:… lines.
func readImagesEnv(path string) map[string]string {
	GinkgoHelper()
	raw, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred(), "the images of `make images`")
	out := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && !strings.HasPrefix(k, "#") {
			out[k] = v
		}
	}
	return out
}

// image returns the ref (without tag) and digest of one built image, e.g.
// image("CODEX_APP_SERVER").
func image(name string) (repository, digest string) {
	GinkgoHelper()
	ref, digest := env.images[name+"_IMAGE"], env.images[name+"_DIGEST"]
	Expect(ref).NotTo(BeEmpty(), "%s_IMAGE in images.env", name)
	Expect(digest).To(HavePrefix("sha256:"), "%s_DIGEST in images.env", name)
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref = ref[:i]
	}
	return ref, digest
}

// result is a finished command.
type result struct {
	stdout, stderr string
	exit           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.exit, r.stdout, r.stderr)
}

// command prepares a binary with the admin kubeconfig (unless env
// overrides it).
func command(cctx context.Context, extraEnv []string, bin string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	cmd := exec.CommandContext(cctx, bin, args...)
	cmd.Dir = env.repoRoot
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+env.kubeconfig), extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	return cmd, &stdout, &stderr
}

// finished turns a command's end into a result.
func finished(err error, stdout, stderr *bytes.Buffer, bin string, args []string) result {
	GinkgoHelper()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	if err != nil {
		var exitErr *exec.ExitError
		Expect(errors.As(err, &exitErr)).To(BeTrue(), "run %s %v: %v", bin, args, err)
		r.exit = exitErr.ExitCode()
	}
	GinkgoWriter.Printf("$ %s %s\n%s\n", filepath.Base(bin), strings.Join(redacted(args), " "), r)
	return r
}

// run runs a binary to its end.
func run(extraEnv []string, bin string, args ...string) result {
	GinkgoHelper()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd, stdout, stderr := command(cctx, extraEnv, bin, args...)
	return finished(cmd.Run(), stdout, stderr, bin, args)
}

// background starts a binary; wait returns its result.
func background(extraEnv []string, bin string, args ...string) (wait func() result) {
	GinkgoHelper()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	cmd, stdout, stderr := command(cctx, extraEnv, bin, args...)
	Expect(cmd.Start()).To(Succeed())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	DeferCleanup(cancel)
	return func() result {
		GinkgoHelper()
		defer cancel()
		return finished(<-done, stdout, stderr, bin, args)
	}
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

// dumpCluster prints what explains a failure: the Pods of the suite's
// namespaces, their containers' last logs, and the events.
func dumpCluster() {
	for _, ns := range append([]string{operatorNamespace}, harnessNamespaces...) {
		for _, args := range [][]string{
			{"get", "pods", "-n", ns, "-o", "wide"},
			{"get", "events", "-n", ns, "--sort-by=.lastTimestamp"},
			{"logs", "-n", ns, "--all-containers", "--prefix", "--tail=200", "-l", "app.kubernetes.io/name"},
		} {
			r := kubectl(args...)
			GinkgoWriter.Printf("\n----- kubectl %s -----\n%s%s\n", strings.Join(args, " "), r.stdout, r.stderr)
		}
	}
	if sampleCodex != nil {
		GinkgoWriter.Printf("\n----- codex app-server stderr -----\n%s\n", lastBytes(sampleCodex.Stderr(), 4<<10))
	}
}

func lastBytes(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func randomToken() string {
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	return hex.EncodeToString(raw)
}
