package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/harness/codexconfig"
	"github.com/openclaw/harness-operator/internal/harness/objects"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// With the model gateway, the sample harness `codex` is managed, with
// spec.modelGateway, instead of external: the gateway, not the app-server,
// holds the model key. envtest runs no kubelet, so devcluster plays one for
// its single server pod, as the envtest suites do: it runs the real `codex
// app-server` with the pod template's arguments and environment (paths
// moved under .local) on 127.0.0.1, creates the pod the StatefulSet would,
// and writes the status a kubelet would. The app-server's environment is
// the template's alone: no OPENAI_API_KEY, no proxy variable.
const (
	// gatewaySampleImage is the sample's image; nothing pulls it.
	gatewaySampleImage = "harness-operator/codex-app-server@sha256:0000000000000000000000000000000000000000000000000000000000000000"
	// gatewaySampleSecret holds the model key the gateway injects
	// (spec.modelGateway.credentialSecretRef), in the sample namespace.
	gatewaySampleSecret = "model-provider"
	gatewaySampleKey    = "apiKey"
	// podAddr is the server pod's address.
	podAddr = "127.0.0.1"
)

// isSampleHarness reports whether a sample manifest is the external `codex`
// harness that the gateway sample replaces.
func isSampleHarness(kind, namespace, name string) bool {
	return kind == "AgentHarness" && namespace == sampleNamespace && name == "codex"
}

// startGatewaySample applies the managed sample harness with the gateway as
// its model path, plays the kubelet for its pod and returns what to stop.
// The upstream is --model-url, or OpenAI with OPENAI_API_KEY (in a Secret
// the gateway reads), or devcluster's own stub model.
func startGatewaySample(ctx context.Context, c client.Client, codexBin, local string) (func(), string, error) {
	var stub *stubmodel.Server
	var err error
	stopStub := func() {}
	baseURL, key := modelURL, "stub"
	model := "the model at " + modelURL
	switch {
	case modelURL != "":
	case os.Getenv("OPENAI_API_KEY") != "":
		baseURL, key = "https://api.openai.com/v1", os.Getenv("OPENAI_API_KEY")
		model = "the real OpenAI provider through the gateway: OPENAI_API_KEY is set"
	default:
		if stub, err = stubmodel.New(); err != nil {
			return nil, "", err
		}
		stopStub = stub.Close
		baseURL, model = stub.BaseURL(), "offline, the stub model behind the gateway"
	}
	fail := func(err error) (func(), string, error) {
		stopStub()
		return nil, "", err
	}

	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: gatewaySampleSecret, Namespace: sampleNamespace},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{gatewaySampleKey: []byte(key)},
	}
	if err := c.Create(ctx, secret); err != nil {
		return fail(fmt.Errorf("create Secret %s/%s: %w", sampleNamespace, gatewaySampleSecret, err))
	}
	h := &v1alpha1.AgentHarness{
		ObjectMeta: metav1.ObjectMeta{Name: "codex", Namespace: sampleNamespace},
		Spec: v1alpha1.AgentHarnessSpec{
			HarnessID: "codex",
			Label:     "Codex (through the model gateway)",
			Adapter:   v1alpha1.AdapterCodexAppServer,
			AppServer: &v1alpha1.AppServerWorkload{Image: gatewaySampleImage},
			ModelGateway: &v1alpha1.ModelGateway{
				BaseURL:             baseURL,
				CredentialSecretRef: v1alpha1.SecretKeyReference{Name: gatewaySampleSecret, Key: gatewaySampleKey},
			},
		},
	}
	if err := c.Create(ctx, h); err != nil {
		return fail(fmt.Errorf("create the sample AgentHarness with spec.modelGateway: %w", err))
	}
	fmt.Fprintf(os.Stderr, "devcluster: applied AgentHarness %s/%s (managed, spec.modelGateway)\n", sampleNamespace, h.Name)

	sts := &appsv1.StatefulSet{}
	if err := waitFor(ctx, "the sample's StatefulSet", func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: h.Namespace, Name: objects.WorkloadName(h)}, sts)
	}); err != nil {
		return fail(err)
	}
	token := &corev1.Secret{}
	if err := waitFor(ctx, "the sample's token Secret", func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: h.Namespace, Name: objects.TokenSecretName(h)}, token)
	}); err != nil {
		return fail(err)
	}
	codex, err := startPodAppServer(ctx, codexBin, filepath.Join(local, "gateway-sample-pod"), sts, token)
	if err != nil {
		return fail(err)
	}
	stopAll := func() { codex.stop(); stopStub() }
	pod := testutil.ServerPod(sts, 0)
	if err := c.Create(ctx, pod); err != nil {
		stopAll()
		return nil, "", fmt.Errorf("create the sample's server pod: %w", err)
	}
	imageID := "harness-operator/codex-app-server@" + strings.SplitN(gatewaySampleImage, "@", 2)[1]
	if err := testutil.SetPodStatus(ctx, c, pod, podAddr, imageID, true); err != nil {
		stopAll()
		return nil, "", err
	}
	return stopAll, model, nil
}

// startPodAppServer runs the app-server of the pod template on podAddr:
// its command is the local codex binary; every path under a volume mount
// moves to the same path under dir (Secret volumes filled from the token
// Secret, the rest empty); its environment is the template's literal
// values and PATH.
func startPodAppServer(ctx context.Context, codexBin, dir string, sts *appsv1.StatefulSet, token *corev1.Secret) (*localCodex, error) {
	ctr := sts.Spec.Template.Spec.Containers[0]
	var port int32
	for _, p := range ctr.Ports {
		port = p.ContainerPort
	}
	moved := func(p string) string { return p }
	for _, m := range ctr.VolumeMounts {
		local := filepath.Join(dir, m.MountPath)
		if err := os.MkdirAll(local, 0o700); err != nil {
			return nil, err
		}
		if v := volumeOf(sts.Spec.Template.Spec, m.Name); v != nil && v.Secret != nil {
			for _, it := range v.Secret.Items {
				if err := os.WriteFile(filepath.Join(local, it.Path), token.Data[it.Key], 0o600); err != nil {
					return nil, err
				}
			}
		}
		prev, mount := moved, m.MountPath
		moved = func(p string) string {
			if p == mount || strings.HasPrefix(p, mount+"/") {
				return filepath.Join(dir, p)
			}
			return prev(p)
		}
	}
	var args []string
	for i := 0; i < len(ctr.Args); i++ {
		a := ctr.Args[i]
		if a == "--listen" && i+1 < len(ctr.Args) {
			args = append(args, a, "ws://"+podAddr+":"+strconv.Itoa(int(port)))
			i++
			continue
		}
		args = append(args, moved(a))
	}
	env := []string{"PATH=" + os.Getenv("PATH")}
	home := ""
	for _, e := range ctr.Env {
		if e.ValueFrom != nil {
			continue
		}
		v := moved(e.Value)
		if e.Name == "CODEX_HOME" {
			home = v
		}
		env = append(env, e.Name+"="+v)
	}
	if home == "" {
		return nil, fmt.Errorf("the sample's pod template sets no CODEX_HOME")
	}
	// The image's own configuration: offline, no approvals, read-only.
	cfg := "approval_policy = \"never\"\nsandbox_mode = \"read-only\"\n" + codexconfig.Offline
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		return nil, fmt.Errorf("write config.toml: %w", err)
	}
	cmd := exec.CommandContext(ctx, codexBin, args...)
	cmd.Env, cmd.Dir = env, dir
	log, err := os.Create(filepath.Join(dir, "codex-app-server.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start codex app-server: %w", err)
	}
	exited := make(chan error, 1)
	c := &localCodex{cmd: cmd, done: make(chan struct{})}
	go func() {
		exited <- cmd.Wait()
		close(c.done)
	}()
	if err := waitReady(ctx, "the sample's codex app-server", "http://"+podAddr+":"+strconv.Itoa(int(port))+"/readyz", exited); err != nil {
		c.stop()
		return nil, fmt.Errorf("%w (its log: %s)", err, log.Name())
	}
	return c, nil
}

func volumeOf(spec corev1.PodSpec, name string) *corev1.Volume {
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == name {
			return &spec.Volumes[i]
		}
	}
	return nil
}

// waitFor polls get until it succeeds, for up to a minute.
func waitFor(ctx context.Context, what string, get func() error) error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := get()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not there after a minute: %w", what, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
