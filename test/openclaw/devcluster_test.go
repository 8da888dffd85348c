//go:build e2e

package openclaw

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	harnessv1alpha1 "github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/scheme"
	"github.com/openclaw/harness-operator/internal/testutil"
)

const (
	agentsNS = "agents" // devcluster's sample namespace (its --harness-namespaces)
	// codexHarness runs OpenAI turns under the suite's policy.
	codexHarness = "codex"
	// anthropicHarness is a second Codex harness whose support facts name
	// only the anthropic provider: it refuses every OpenAI route, with route
	// facts or without (the plugin sends none yet; then only the provider
	// is checked, docs/dispatcher-api.md "Selection").
	anthropicHarness = "codex-anthropic"
	// gatewaySA is the gateway's ServiceAccount, bound to the chart's
	// gateway ClusterRole (config/rbac/gateway_role.yaml).
	gatewaySA = "openclaw-gateway"
	// dispatcherAudience is what the dispatcher requires of tokens
	// (devcluster's --token-audience).
	dispatcherAudience = "harness-dispatcher"
	// upLine is what devcluster prints once everything serves.
	upLine = "The local system is up"
)

// devCluster is hack/devcluster running in a directory of the suite's own.
type devCluster struct {
	dir        string // devcluster's state: kubeconfig, CA, journal, logs
	bin        string // the project's binaries, kubectl-harness included
	kubeconfig string
	dispatcher string // https://127.0.0.1:<port>
	caFile     string
	proc       *testutil.Process
}

// startDevCluster builds and runs hack/devcluster (with the manager and the
// dispatcher it runs) as `make run` does, on free ports, with the suite's
// samples and Codex on the suite's stub model; it stops when the suite ends.
func startDevCluster(ctx context.Context, assets, codex, modelURL string) *devCluster {
	GinkgoHelper()
	bin := GinkgoT().TempDir()
	Expect(testutil.BuildBinaries(bin, "./cmd/manager", "./cmd/dispatcher", "./cmd/kubectl-harness", "./hack/devcluster")).To(Succeed())
	dir := GinkgoT().TempDir()
	addr := func() string {
		a, err := testutil.FreeAddr()
		Expect(err).NotTo(HaveOccurred())
		return a
	}
	webhookPort, err := testutil.FreePort()
	Expect(err).NotTo(HaveOccurred())
	codexAddr, dispatcherAddr := addr(), addr()
	samples := filepath.Join(dir, "samples")
	writeSamples(samples, codexAddr)

	c := &devCluster{
		dir:        dir,
		bin:        bin,
		kubeconfig: filepath.Join(dir, "kubeconfig"),
		dispatcher: "https://" + dispatcherAddr,
		caFile:     filepath.Join(dir, "dispatcher-ca.pem"),
	}
	c.proc, err = testutil.StartProcess("devcluster", filepath.Join(bin, "devcluster"), dir,
		[]string{"KUBEBUILDER_ASSETS=" + assets},
		"--manager="+filepath.Join(bin, "manager"),
		"--dispatcher="+filepath.Join(bin, "dispatcher"),
		"--write-kubeconfig="+c.kubeconfig,
		"--crds="+filepath.Join(repoRoot, "config", "crd", "bases"),
		"--samples="+samples,
		"--gateway-role="+filepath.Join(repoRoot, "config", "rbac", "gateway_role.yaml"),
		"--codex="+codex,
		"--model-url="+modelURL,
		"--webhook-port="+strconv.Itoa(webhookPort),
		"--probe-addr="+addr(),
		"--metrics-addr="+addr(),
		"--dispatcher-addr="+dispatcherAddr,
		"--dispatcher-probe-addr="+addr(),
		"--dispatcher-metrics-addr="+addr(),
		"--codex-listen="+codexAddr,
	)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		// SIGTERM: devcluster stops the dispatcher, Codex, the manager and
		// the control plane it started; Stop then kills its process group.
		GinkgoWriter.Println(c.proc.Stop(time.Minute))
	})
	Eventually(func() error {
		if err := c.proc.Unexpected(); err != nil {
			return StopTrying(fmt.Sprintf("%v\n%s", err, c.proc.Tail(8<<10)))
		}
		b, err := os.ReadFile(c.proc.LogPath)
		if err != nil || !strings.Contains(string(b), upLine) {
			return fmt.Errorf("devcluster is not up yet (log %s)", c.proc.LogPath)
		}
		return nil
	}).WithContext(ctx).WithTimeout(4 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	// devcluster waited for `codex`; the refusing harness must be Ready too,
	// so that its refusal is its support facts, not its readiness.
	waitHarnessReady(ctx, c.client(), anthropicHarness)
	return c
}

func (c *devCluster) client() client.Client {
	GinkgoHelper()
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	s, err := scheme.New()
	Expect(err).NotTo(HaveOccurred())
	cl, err := client.New(cfg, client.Options{Scheme: s})
	Expect(err).NotTo(HaveOccurred())
	return cl
}

// mintGatewayToken writes the gateway ServiceAccount's token for the
// dispatcher's audience to a file, as a platform team would hand it to a
// gateway (in a cluster: a projected token volume), and returns the path.
func (c *devCluster) mintGatewayToken(ctx context.Context, kubectl string) string {
	GinkgoHelper()
	cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", c.kubeconfig, "create", "token", gatewaySA,
		"-n", agentsNS, "--audience="+dispatcherAudience, "--duration=2h")
	out, err := cmd.Output()
	Expect(err).NotTo(HaveOccurred(), "kubectl create token: %v", exitDetail(err))
	file := filepath.Join(c.dir, "gateway-token")
	Expect(os.WriteFile(file, out, 0o600)).To(Succeed())
	return file
}

func exitDetail(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

func waitHarnessReady(ctx context.Context, c client.Client, name string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		h := &harnessv1alpha1.AgentHarness{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: agentsNS, Name: name}, h)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(h.Status.Conditions, harnessv1alpha1.HarnessConditionReady)).
			To(BeTrue(), "AgentHarness %s conditions: %+v", name, h.Status.Conditions)
	}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
}

// writeSamples writes the suite's samples (devcluster's --samples): the
// namespace, a policy that sends OpenAI turns to `codex` and lets sessions
// override it, the two harnesses on the suite's Codex (devcluster creates
// the Secret codex-token they read), and the gateway's ServiceAccount bound
// to the gateway ClusterRole (devcluster applies it from --gateway-role).
func writeSamples(dir, codexAddr string) {
	GinkgoHelper()
	Expect(os.MkdirAll(dir, 0o700)).To(Succeed())
	files := map[string]string{
		"00_namespace.yaml": `apiVersion: v1
kind: Namespace
metadata:
  name: agents
`,
		"10_runtimepolicy.yaml": `apiVersion: harness.openclaw.dev/v1alpha1
kind: RuntimePolicy
metadata:
  name: openai-on-codex
spec:
  providers:
    - provider: openai
      runtime: codex
  sessionOverrides: Allow
`,
		"20_agentharness_codex.yaml":           harnessManifest(codexHarness, codexAddr, ""),
		"21_agentharness_codex_anthropic.yaml": harnessManifest(anthropicHarness, codexAddr, "anthropic"),
		"30_gateway_serviceaccount.yaml": `apiVersion: v1
kind: ServiceAccount
metadata:
  name: ` + gatewaySA + `
  namespace: agents
`,
		"31_gateway_rolebinding.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: openclaw-gateway
  namespace: agents
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: harness-operator-gateway
subjects:
  - kind: ServiceAccount
    name: ` + gatewaySA + `
    namespace: agents
`,
	}
	for name, body := range files {
		Expect(os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600)).To(Succeed())
	}
}

// harnessManifest is an external Codex harness named (and with the harness
// id) name. Without onlyProvider it has no support block (admission writes
// Codex's defaults); with it, its support facts name only that provider.
func harnessManifest(name, codexAddr, onlyProvider string) string {
	support := ""
	if onlyProvider != "" {
		support = "  support:\n    providers: [" + onlyProvider + "]\n"
	}
	return fmt.Sprintf(`apiVersion: harness.openclaw.dev/v1alpha1
kind: AgentHarness
metadata:
  name: %[1]s
  namespace: agents
spec:
  harnessId: %[1]s
  adapter: codex-app-server
  external:
    url: ws://%[2]s
    tokenSecretRef:
      name: codex-token
      key: token
%[3]s`, name, codexAddr, support)
}
