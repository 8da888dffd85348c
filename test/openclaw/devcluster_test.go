//go:build e2e

package openclaw

import (
	"context"
	"errors"
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

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/platform/scheme"
	"github.com/openclaw/harness-operator/internal/testutil"
)

const (
	agentsNS = "agents" // devcluster's sample namespace (its --harness-namespaces)
	// codexHarness runs OpenAI turns under the suite's policy. Its support
	// facts accept any route policy: OpenClaw's openai provider declares
	// only `openclaw` compatible with a loopback baseUrl (observed,
	// docs/openclaw-plugin.md), and the test's harness declares support for
	// that route.
	codexHarness = "codex"
	// defaultsHarness is a second Codex harness with Codex's default
	// support facts (routePolicy MustListHarness): the route facts OpenClaw
	// sends for its loopback provider list only `openclaw`, so it refuses
	// them (docs/dispatcher-api.md "Selection").
	defaultsHarness = "codex-defaults"
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
	waitHarnessReady(ctx, c.client(), defaultsHarness)
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

// gatewayIdentity is what a platform team hands a gateway (in a cluster:
// projected token volumes): the ServiceAccount's tokens for the dispatcher's
// audience and for the API server's, and how to reach the API server.
type gatewayIdentity struct {
	dispatcherToken string // file
	apiServer       string
	apiCA           string // file
	apiToken        string // file
}

// mintGatewayIdentity mints the gateway ServiceAccount's two tokens with
// `kubectl create token` and writes them and the API server's CA to files.
func (c *devCluster) mintGatewayIdentity(ctx context.Context, kubectl string) gatewayIdentity {
	GinkgoHelper()
	token := func(name string, audience ...string) string {
		args := append([]string{"--kubeconfig", c.kubeconfig, "create", "token", gatewaySA, "-n", agentsNS, "--duration=2h"}, audience...)
		out, err := exec.CommandContext(ctx, kubectl, args...).Output()
		Expect(err).NotTo(HaveOccurred(), "kubectl create token: %v", exitDetail(err))
		file := filepath.Join(c.dir, name)
		Expect(os.WriteFile(file, out, 0o600)).To(Succeed())
		return file
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	ca := filepath.Join(c.dir, "apiserver-ca.pem")
	Expect(os.WriteFile(ca, cfg.CAData, 0o600)).To(Succeed())
	return gatewayIdentity{
		dispatcherToken: token("gateway-dispatcher-token", "--audience="+dispatcherAudience),
		apiServer:       cfg.Host,
		apiCA:           ca,
		apiToken:        token("gateway-api-token"),
	}
}

func readRepoFile(path string) string {
	GinkgoHelper()
	b, err := os.ReadFile(filepath.Join(repoRoot, path))
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

func exitDetail(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}

func waitHarnessReady(ctx context.Context, c client.Client, name string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		h := &v1alpha1.AgentHarness{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: agentsNS, Name: name}, h)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(h.Status.Conditions, v1alpha1.HarnessConditionReady)).
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
		"20_agentharness_codex.yaml":          harnessManifest(codexHarness, codexAddr, "routePolicy: Any"),
		"21_agentharness_codex_defaults.yaml": harnessManifest(defaultsHarness, codexAddr, ""),
		"30_gateway_serviceaccount.yaml": `apiVersion: v1
kind: ServiceAccount
metadata:
  name: ` + gatewaySA + `
  namespace: agents
`,
		// The registry's ClusterRole (the chart ships it; devcluster applies
		// only the gateway Role's), bound cluster-wide as the plugin's docs say.
		"32_gateway_registry_role.yaml": readRepoFile("config/rbac/gateway_registry_role.yaml"),
		"33_gateway_registry_binding.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: openclaw-gateway-registry
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: harness-operator-gateway-registry
subjects:
  - kind: ServiceAccount
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
// id) name, with one support fact, or none: then admission writes Codex's
// defaults.
func harnessManifest(name, codexAddr, supportFact string) string {
	support := ""
	if supportFact != "" {
		support = "  support:\n    " + supportFact + "\n"
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
