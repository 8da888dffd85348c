//go:build e2e

// Package openclaw is the end-to-end test with the real, published OpenClaw:
// one long-lived `openclaw gateway run` (the pinned release of
// hack/setup-openclaw.sh, on its cached Node 24) loads the project's plugin
// (clients/openclaw, built here), and OpenClaw's own client (`openclaw
// agent`) runs each agent turn headlessly through it and the dispatcher of
// the whole local system that `make run` starts — hack/devcluster itself, run as
// a binary with a state directory of its own and free ports: a real
// kube-apiserver and etcd, the manager with its webhooks, the real
// `codex app-server` and the dispatcher on https with its CA. Codex answers
// from a stub model this suite runs, so a spec scripts a reply that only its
// own turn can produce and counts the requests that reached the model.
// OpenClaw's own openai provider points at the same stub: a turn that fell
// back to OpenClaw's embedded runtime would show there too.
//
// Nothing leaves the machine: every address is loopback and OpenClaw runs
// with OPENCLAW_OFFLINE=1, OPENCLAW_NO_AUTO_UPDATE=1,
// OPENCLAW_DISABLE_BONJOUR=1 and HOME/OPENCLAW_HOME in a temporary directory.
//
// Environment: KUBEBUILDER_ASSETS (hack/setup-envtest.sh), CODEX_BIN
// (hack/setup-codex.sh), OPENCLAW_TOOLS (hack/setup-openclaw.sh). The
// gateway's token is minted with kubectl, as a platform team would: the
// project's own build of the cluster's release in KUBEBUILDER_ASSETS (or
// KUBECTL, when set), never whatever kubectl is on PATH, whose version
// nobody chose. `make test-e2e` runs it.
package openclaw

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

func TestOpenClaw(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Real OpenClaw Suite")
}

// The suite's one system, started once: specs use sessions of their own.
var (
	repoRoot string
	stub     *stubmodel.Server
	cluster  *devCluster
	gateway  *openClaw
	k8s      client.Client
)

var _ = BeforeSuite(func(ctx context.Context) {
	assets := requireEnv("KUBEBUILDER_ASSETS", "the control plane binaries (hack/setup-envtest.sh)")
	codex := requireEnv("CODEX_BIN", "the real codex binary (hack/setup-codex.sh)")
	tools := requireEnv("OPENCLAW_TOOLS", "the cached Node 24 and openclaw (hack/setup-openclaw.sh)")
	kubectl := os.Getenv("KUBECTL")
	if kubectl == "" {
		kubectl = filepath.Join(assets, "kubectl")
	}
	version, err := exec.CommandContext(ctx, kubectl, "version", "--client").Output()
	Expect(err).NotTo(HaveOccurred(), "kubectl %s: %v (hack/setup-envtest.sh builds it into KUBEBUILDER_ASSETS; KUBECTL names another)", kubectl, exitDetail(err))
	GinkgoWriter.Printf("kubectl: %s, %s", kubectl, version)
	repoRoot, err = testutil.ModuleRoot()
	Expect(err).NotTo(HaveOccurred())

	stub, err = stubmodel.New()
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(stub.Close)

	// The plugin's build (tsc, about 10 s) needs nothing of the cluster:
	// it runs while the cluster starts, which mostly waits on its processes.
	type packed struct {
		tarball string
		err     error
	}
	plugin := make(chan packed, 1)
	packDir := GinkgoT().TempDir()
	go func() {
		tarball, err := packPlugin(tools, packDir)
		plugin <- packed{tarball, err}
	}()
	cluster = startDevCluster(ctx, assets, codex, stub.BaseURL())
	k8s = cluster.client()
	var p packed
	Eventually(ctx, plugin).WithTimeout(5 * time.Minute).Should(Receive(&p))
	Expect(p.err).NotTo(HaveOccurred())
	gateway = newOpenClaw(tools, p.tarball, stub.BaseURL(), cluster, cluster.mintGatewayIdentity(ctx, kubectl))
	// One long-lived gateway for the suite: the specs' turns go through it
	// (OpenClaw loads once, as a platform team runs it), not a new
	// `openclaw agent --local` process that loads OpenClaw for each turn.
	gateway.serve(ctx)
	// With the specs' turns (turnTimeout each) well inside make's
	// -timeout=20m: Ginkgo, not go test's panic, ends a stuck run, so
	// devcluster is stopped by SIGTERM and stops its control plane.
}, NodeTimeout(8*time.Minute))

func requireEnv(name, what string) string {
	v := os.Getenv(name)
	if v == "" {
		Fail(fmt.Sprintf("%s is not set: %s; run `make test-e2e`", name, what))
	}
	return v
}

// createModelPolicy creates a cluster-wide RuntimePolicy, named prefix and
// a random suffix, that sends model (a provider/model ref) to the harness
// runtime, and deletes it when the current node ends.
func createModelPolicy(ctx context.Context, prefix, model, runtime string) {
	GinkgoHelper()
	policy := &v1alpha1.RuntimePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: prefix + "-" + randomHex()},
		Spec: v1alpha1.RuntimePolicySpec{Models: []v1alpha1.ModelRuntimePolicy{
			{Ref: model, Runtime: v1alpha1.RuntimeID(runtime)},
		}},
	}
	Expect(k8s.Create(ctx, policy)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(k8s.Delete(ctx, policy)).To(Succeed()) })
}
