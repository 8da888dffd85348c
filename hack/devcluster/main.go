// Command devcluster is `make run`: it starts a local control plane (the real
// etcd and kube-apiserver that hack/setup-envtest.sh builds), installs the CRDs
// and the samples, writes a kubeconfig for kubectl, and runs the manager
// against it until interrupted. Everything it starts stops when it exits.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/cli/manifest"
	"github.com/openclaw/harness-operator/internal/manager/webhook"
	"github.com/openclaw/harness-operator/internal/platform/netguard"
	"github.com/openclaw/harness-operator/internal/platform/scheme"
	"github.com/openclaw/harness-operator/internal/testutil"
)

const (
	fieldOwner        = client.FieldOwner("harness-devcluster")
	operatorNamespace = "harness-operator-system"
	// dispatcherAudience is the chart's dispatcher.tokenAudience and the
	// default of kubectl harness --audience.
	dispatcherAudience = "harness-dispatcher"
	// sampleNamespace holds config/samples' harness and session.
	sampleNamespace = "agents"
)

// The loopback addresses of what devcluster starts. `make run` uses the
// defaults (the samples' AgentHarness names ws://127.0.0.1:4500); a test
// that runs devcluster beside other processes sets every one to a free port
// (test/openclaw), with samples of its own naming its Codex address.
var (
	webhookPort           = 9443
	probeAddr             = "127.0.0.1:8081"
	metricsAddr           = "127.0.0.1:8443"
	dispatcherAddr        = "127.0.0.1:9444"
	dispatcherProbeAddr   = "127.0.0.1:8082"
	dispatcherMetricsAddr = "127.0.0.1:8083" // the dispatcher's /metrics (docs/dispatcher-api.md)
	sampleCodexAddr       = "127.0.0.1:4500" // the sample AgentHarness's external.url
)

// addressFlags lets the caller move every address above.
func addressFlags() {
	flag.IntVar(&webhookPort, "webhook-port", webhookPort, "Port of the manager's webhooks on 127.0.0.1.")
	flag.StringVar(&probeAddr, "probe-addr", probeAddr, "The manager's health probe address.")
	flag.StringVar(&metricsAddr, "metrics-addr", metricsAddr, "The manager's metrics address.")
	flag.StringVar(&dispatcherAddr, "dispatcher-addr", dispatcherAddr, "The dispatcher's API address (https).")
	flag.StringVar(&dispatcherProbeAddr, "dispatcher-probe-addr", dispatcherProbeAddr, "The dispatcher's health probe address.")
	flag.StringVar(&dispatcherMetricsAddr, "dispatcher-metrics-addr", dispatcherMetricsAddr, "The dispatcher's metrics address.")
	flag.StringVar(&sampleCodexAddr, "codex-listen", sampleCodexAddr, "Where the codex app-server listens (the samples' AgentHarness must name it).")
}

func main() {
	managerBin := flag.String("manager", "bin/manager", "Path of the manager binary to run.")
	dispatcherBin := flag.String("dispatcher", "bin/dispatcher", "Path of the dispatcher binary to run.")
	kubeconfig := flag.String("write-kubeconfig", ".local/kubeconfig", "Where to write the kubeconfig of the local control plane.")
	crdDir := flag.String("crds", "config/crd/bases", "Directory of the CRD manifests.")
	samplesDir := flag.String("samples", "config/samples", "Directory of the sample manifests to apply (not recursive).")
	gatewayRole := flag.String("gateway-role", "config/rbac/gateway_role.yaml", "The gateway ClusterRole manifest bound to the CLI's ServiceAccount.")
	codexBin := flag.String("codex", os.Getenv("CODEX_BIN"), "The real codex binary to serve the sample harness at --codex-listen (empty: none).")
	flag.StringVar(&modelURL, "model-url", "", "Base URL of the model provider the codex app-server uses (a stub model the caller runs and inspects); empty: devcluster's own stub model, or OpenAI when OPENAI_API_KEY is set.")
	addressFlags()
	modelGatewayFlags()
	flag.Parse()

	if err := run(*managerBin, *dispatcherBin, *kubeconfig, *crdDir, *samplesDir, *gatewayRole, *codexBin); err != nil {
		fmt.Fprintln(os.Stderr, "devcluster:", err)
		os.Exit(1)
	}
}

func run(managerBin, dispatcherBin, kubeconfig, crdDir, samplesDir, gatewayRole, codexBin string) error {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return errors.New("KUBEBUILDER_ASSETS is not set: run `make run`, which builds the control plane with hack/setup-envtest.sh")
	}
	env := &envtest.Environment{CRDDirectoryPaths: []string{crdDir}, ErrorIfCRDPathMissing: true}
	testutil.AdvertiseLoopback(env)
	fmt.Fprintln(os.Stderr, "devcluster: starting etcd and kube-apiserver")
	cfg, err := env.Start()
	if err != nil {
		return fmt.Errorf("start control plane: %w", err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "devcluster: stop control plane:", err)
		}
	}()

	admin, err := env.AddUser(envtest.User{Name: "devcluster-admin", Groups: []string{"system:masters"}}, cfg)
	if err != nil {
		return fmt.Errorf("create admin user: %w", err)
	}
	kc, err := admin.KubeConfig()
	if err != nil {
		return fmt.Errorf("render kubeconfig: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(kubeconfig), 0o700); err != nil {
		return fmt.Errorf("create kubeconfig directory: %w", err)
	}
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	absKubeconfig, err := filepath.Abs(kubeconfig)
	if err != nil {
		return fmt.Errorf("resolve kubeconfig path: %w", err)
	}

	s, err := scheme.New()
	if err != nil {
		return err
	}
	c, err := client.New(admin.Config(), client.Options{Scheme: s})
	if err != nil {
		return fmt.Errorf("create client: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// The webhooks are served by the manager on loopback; the API server
	// reaches them by URL, as it reaches a Service in a cluster.
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", operatorNamespace, err)
	}
	validating, mutating := webhook.Configurations(webhook.URLClientConfig(fmt.Sprintf("https://localhost:%d", webhookPort)))
	for _, obj := range []client.Object{validating, mutating} {
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("create %s: %w", obj.GetName(), err)
		}
	}
	certDir, err := filepath.Abs(filepath.Join(filepath.Dir(kubeconfig), "webhook-certs"))
	if err != nil {
		return fmt.Errorf("resolve certificate directory: %w", err)
	}

	managerArgs := []string{
		"--leader-elect=false",
		"--metrics-bind-address=" + metricsAddr,
		"--health-probe-bind-address=" + probeAddr,
		"--webhook-cert-mode=self-managed",
		"--webhook-host=127.0.0.1",
		fmt.Sprintf("--webhook-port=%d", webhookPort),
		"--webhook-secret-namespace=" + operatorNamespace,
		"--webhook-dns-name=localhost",
		"--webhook-cert-dir=" + certDir,
		"--webhook-cert-dir-from-secret",
		// The samples' namespace: like the chart's harnessNamespaces, the
		// only namespace that may hold AgentHarnesses.
		"--harness-namespaces=" + sampleNamespace,
		// The sample harness's Codex runs on this machine at plain
		// ws://127.0.0.1:4500: development mode admits it.
		"--" + netguard.AllowInsecureLoopbackFlag,
	}
	managerExited, err := startProcess(ctx, managerBin, absKubeconfig, append(managerArgs, managerModelGatewayArgs()...)...)
	if err != nil {
		return err
	}

	// Samples go through the webhooks (defaulting included), so wait for them.
	if err := waitReady(ctx, "manager", "http://"+probeAddr+"/readyz", managerExited); err != nil {
		return err
	}
	// The app-server is ready before the sample harness that points at it is
	// applied: a first probe that fails waits for the controller's next
	// observation (half a minute).
	token, err := ensureTokenSecret(ctx, c, sampleNamespace, "codex-token")
	if err != nil {
		return err
	}
	// With the model gateway the sample harness is a managed one, applied
	// once the gateway serves (gatewaysample.go).
	if codexBin != "" && !modelGateway {
		codex, real, err := startLocalCodex(ctx, codexBin, sampleCodexAddr, filepath.Dir(certDir), token)
		if err != nil {
			return err
		}
		defer codex.stop()
		model := "offline, stub model"
		switch {
		case modelURL != "":
			model = "the model at " + modelURL
		case real:
			model = "the real OpenAI provider: OPENAI_API_KEY is set"
		}
		fmt.Fprintf(os.Stderr, "devcluster: codex app-server (%s) serves the sample harness at ws://%s\n", model, sampleCodexAddr)
	}
	if err := applySamples(ctx, c, samplesDir); err != nil {
		return err
	}
	if codexBin != "" && !modelGateway {
		if err := waitHarnessReady(ctx, c, client.ObjectKey{Namespace: sampleNamespace, Name: "codex"}); err != nil {
			return err
		}
	}
	local := filepath.Dir(certDir)
	caFile := filepath.Join(local, "dispatcher-ca.pem")
	dispatcherArgs := []string{
		"--leader-elect=false",
		"--bind-address=" + dispatcherAddr,
		"--probe-bind-address=" + dispatcherProbeAddr,
		"--journal-dir=" + filepath.Join(local, "journal"),
		// No Lease and no pod namespace to default to.
		"--turn-token-secret-namespace=" + operatorNamespace,
		"--tls-ca-out=" + caFile,
		// As the chart does by default: only tokens requested for the
		// dispatcher (kubectl harness requests this audience), never a
		// credential that is valid at the API server.
		"--token-audience=" + dispatcherAudience,
		"--require-token-audience",
		// Dials the sample harness's Codex at plain ws://127.0.0.1:4500
		// (development mode, as the manager admits it).
		"--" + netguard.AllowInsecureLoopbackFlag,
		// HTTPS and authorized, on loopback only.
		"--metrics-bind-address=" + dispatcherMetricsAddr,
	}
	dispatcherExited, err := startProcess(ctx, dispatcherBin, absKubeconfig, append(dispatcherArgs, dispatcherModelGatewayArgs()...)...)
	if err != nil {
		return err
	}
	if err := waitReady(ctx, "dispatcher", "http://"+dispatcherProbeAddr+"/readyz", dispatcherExited); err != nil {
		return err
	}
	// Without --model-gateway this channel stays nil: it never fires.
	var gatewayExited <-chan error
	if modelGateway {
		if gatewayExited, err = startModelGateway(ctx, c, dispatcherBin, absKubeconfig, local, caFile); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "devcluster: the model gateway serves at https://%s (its CA in Secret %s/%s); harnesses with spec.modelGateway use it\n",
			modelGatewayAddr, operatorNamespace, modelGatewayCASecret)
		if codexBin != "" {
			stopSample, model, err := startGatewaySample(ctx, c, codexBin, local)
			if err != nil {
				return err
			}
			defer stopSample()
			if err := waitHarnessReady(ctx, c, client.ObjectKey{Namespace: sampleNamespace, Name: "codex"}); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "devcluster: codex app-server (%s) serves the sample harness as its pod at ws://%s\n", model, podAddr)
		}
	}
	if err := ensureCLIAccess(ctx, c, sampleNamespace, gatewayRole); err != nil {
		return err
	}
	envFile := filepath.Join(local, "env")
	exports := fmt.Sprintf("export KUBECONFIG=%s\nexport HARNESS_DISPATCHER_URL=https://%s\nexport HARNESS_DISPATCHER_CA=%s\n", absKubeconfig, dispatcherAddr, caFile)
	if err := os.WriteFile(envFile, []byte(exports), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", envFile, err)
	}
	fmt.Printf("\nThe local system is up: control plane, manager with webhooks, dispatcher, codex app-server.\nIn another terminal (the lines are also in %s):\n\n%s\n    kubectl get ah,rp,asess -A\n    bin/kubectl-harness turn demo -n agents --prompt \"Say hello\"\n    bin/kubectl-harness status demo -n agents\n\nPress Ctrl-C to stop.\n\n",
		envFile, indent(exports))

	select {
	case err = <-managerExited:
		err = wrapExit("manager", err)
	case err = <-dispatcherExited:
		err = wrapExit("dispatcher", err)
	case err = <-gatewayExited:
		err = wrapExit("model gateway", err)
	case <-ctx.Done():
		<-managerExited
		<-dispatcherExited
		if gatewayExited != nil {
			<-gatewayExited
		}
	}
	if err != nil && ctx.Err() == nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "devcluster: stopping")
	return nil
}

// startProcess runs a binary of the project against the local control plane,
// stopping it with SIGTERM when ctx ends; the channel yields its exit.
func startProcess(ctx context.Context, bin, kubeconfig string, args ...string) (<-chan error, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return exited, nil
}

func wrapExit(what string, err error) error {
	if err == nil {
		return fmt.Errorf("%s exited", what)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func indent(lines string) string {
	return "    " + strings.ReplaceAll(strings.TrimSuffix(lines, "\n"), "\n", "\n    ")
}

// ensureCLIAccess lets `kubectl harness turn` run turns in namespace: the
// gateway ClusterRole (config/rbac), the ServiceAccount harness-cli the CLI
// requests tokens for, and a RoleBinding between them.
func ensureCLIAccess(ctx context.Context, c client.Client, namespace, roleFile string) error {
	objs, err := manifest.ReadPath(roleFile)
	if err != nil {
		return err
	}
	objs = append(objs,
		&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ServiceAccount",
			"metadata": map[string]any{"name": "harness-cli", "namespace": namespace},
		}},
		&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
			"metadata": map[string]any{"name": "harness-cli-gateway", "namespace": namespace},
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "harness-operator-gateway"},
			"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "harness-cli", "namespace": namespace}},
		}},
	)
	for _, obj := range objs {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), fieldOwner, client.ForceOwnership); err != nil {
			return fmt.Errorf("apply %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	return nil
}

// waitReady polls a process's readiness endpoint (what names the process)
// until it answers 200 (the manager's: its informers synced and its webhooks
// serving), the process exits, or a minute passes.
func waitReady(ctx context.Context, what, url string, exited <-chan error) error {
	deadline := time.After(time.Minute)
	hc := &http.Client{Timeout: 2 * time.Second}
	for {
		if resp, err := hc.Get(url); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-exited:
			return fmt.Errorf("%s exited before it was ready: %w", what, err)
		case <-deadline:
			return fmt.Errorf("%s not ready after a minute (%s)", what, url)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// applySamples server-side applies every manifest in dir (files in name order,
// so the namespace comes first), as `kubectl apply -f dir` would.
func applySamples(ctx context.Context, c client.Client, dir string) error {
	objs, err := manifest.ReadPath(dir)
	if err != nil {
		return fmt.Errorf("read samples: %w", err)
	}
	for _, obj := range objs {
		if modelGateway && isSampleHarness(obj.GetKind(), obj.GetNamespace(), obj.GetName()) {
			continue // replaced by the managed sample (gatewaysample.go)
		}
		// Record what was applied the way client-side `kubectl apply` does, so a
		// later `kubectl apply -f config/samples/` updates these objects cleanly.
		applied, err := json.Marshal(obj.Object)
		if err != nil {
			return fmt.Errorf("encode %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		annotations := obj.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[corev1.LastAppliedConfigAnnotation] = string(applied)
		obj.SetAnnotations(annotations)
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), fieldOwner, client.ForceOwnership); err != nil {
			return fmt.Errorf("apply %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		where := obj.GetName()
		if obj.GetNamespace() != "" {
			where = obj.GetNamespace() + "/" + where
		}
		fmt.Fprintf(os.Stderr, "devcluster: applied %s %s\n", obj.GetKind(), where)
	}
	return nil
}

// waitHarnessReady waits up to a minute for the AgentHarness's Ready
// condition, so the printed first turn works when it is run.
func waitHarnessReady(ctx context.Context, c client.Client, key client.ObjectKey) error {
	deadline := time.Now().Add(time.Minute)
	for {
		h := &v1alpha1.AgentHarness{}
		err := c.Get(ctx, key, h)
		if err == nil && meta.IsStatusConditionTrue(h.Status.Conditions, v1alpha1.HarnessConditionReady) {
			return nil
		}
		if time.Now().After(deadline) {
			msg := "no Ready condition"
			if cond := meta.FindStatusCondition(h.Status.Conditions, v1alpha1.HarnessConditionReady); cond != nil {
				msg = cond.Reason + ": " + cond.Message
			} else if err != nil {
				msg = err.Error()
			}
			return fmt.Errorf("AgentHarness %s is not Ready after a minute: %s", key, msg)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// ensureTokenSecret creates the sample harness's token Secret (and its
// namespace) with a random token unless it exists, and returns the token. The
// token is never printed.
func ensureTokenSecret(ctx context.Context, c client.Client, namespace, name string) (string, error) {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("create namespace %s: %w", namespace, err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("generate token: %w", err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{"token": []byte(hex.EncodeToString(raw))},
	}
	if err := c.Create(ctx, secret); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("create Secret %s/%s: %w", namespace, name, err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(secret), secret); err != nil {
			return "", fmt.Errorf("read Secret %s/%s: %w", namespace, name, err)
		}
	}
	return string(secret.Data["token"]), nil
}
