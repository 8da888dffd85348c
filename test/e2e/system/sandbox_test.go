//go:build e2e

package system

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // Ginkgo's DSL
	. "github.com/onsi/gomega"    //nolint:revive // Gomega's DSL
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// shippedProfile is the seccomp profile the project ships for Codex's
// sandbox (docs/install.md), and profileOnNode the path a cluster installs
// it at under the kubelet's seccomp directory.
const (
	shippedProfile = "config/seccomp/codex-sandbox.json"
	profileOnNode  = "harness-operator/codex-sandbox.json"
)

// recordedRuntimeDefault is the runtime default the shipped profile starts
// from (config/seccomp tests that the profile is it plus the sandbox's calls).
const recordedRuntimeDefault = "config/seccomp/testdata/containerd-1.6.20-runtime-default-amd64.json"

// managedHarness is the manifest of a managed AgentHarness of managedNS
// running the Codex image with the model credentials of codex-pool; sandbox,
// when not empty, is its spec.appServer.sandbox (YAML flow mapping).
func managedHarness(name, sandbox string) string {
	repository, digest := image("CODEX_APP_SERVER")
	if sandbox != "" {
		sandbox = "\n    sandbox: " + sandbox
	}
	return fmt.Sprintf(`apiVersion: harness.openclaw.dev/v1alpha1
kind: AgentHarness
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  adapter: codex-app-server
  autoSelection: {mode: ExplicitOnly}
  appServer:
    image: %[3]s@%[4]s
    imagePullPolicy: Never
    replicas: 1%[5]s
    credentials:
      - name: OPENAI_API_KEY
        mount: Env
        secretKeyRef: {name: model-key, key: key}
      - name: config.toml
        mount: HomeFile
        secretKeyRef: {name: codex-config, key: config.toml}
`, name, managedNS, repository, digest, sandbox)
}

// sandboxSpecs run Codex's sandbox (bubblewrap) on the real node, in Pods
// under Pod Security `restricted` (docs/security.md records the probe).
func sandboxSpecs() {
	It("refuses to serve a harness whose sandbox cannot run in a restricted Pod with RuntimeDefault, showing bubblewrap's own refusal", func() {
		applyManifest("sandbox-default.yaml", managedHarness("codex-sandbox-default", "{mode: WorkspaceWrite}"))
		mustKubectl("wait", "--for=condition=SandboxReady=false", "--timeout=180s", "agentharness/codex-sandbox-default", "-n", managedNS)
		h := &v1alpha1.AgentHarness{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: managedNS, Name: "codex-sandbox-default"}, h)).To(Succeed())
		var ready, sandbox string
		for _, c := range h.Status.Conditions {
			switch c.Type {
			case v1alpha1.HarnessConditionReady:
				ready = string(c.Status) + "/" + c.Reason
			case v1alpha1.HarnessConditionSandboxReady:
				sandbox = c.Message
			}
		}
		Expect(ready).To(Equal("False/SandboxUnavailable"))
		Expect(sandbox).To(ContainSubstring("No permissions to create a new namespace"))
		Expect(h.Status.ReadyReplicas).To(BeZero(), "the pod never started its app-server")
		// Its pod restarts the failing check with back-off until deleted.
		mustKubectl("delete", "agentharness", "codex-sandbox-default", "-n", managedNS, "--wait=true")
	})

	It("runs tools in Codex's sandbox under the shipped seccomp profile: no network, writes only in the session's directory, not /tmp", func() {
		// What docs/install.md has a cluster do on each node: the file
		// from the repository, at the kubelet's seccomp directory.
		profile, err := os.ReadFile(filepath.Join(env.repoRoot, shippedProfile))
		Expect(err).NotTo(HaveOccurred())
		Expect(os.MkdirAll(filepath.Join(env.seccompDir, filepath.Dir(profileOnNode)), 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(env.seccompDir, profileOnNode), profile, 0o644)).To(Succeed())
		applyManifest("sandbox-profile.yaml", managedHarness("codex-sandboxed", "{mode: WorkspaceWrite, seccompLocalhostProfile: "+profileOnNode+"}"))
		mustKubectl("wait", "--for=condition=SandboxReady=true", "--timeout=180s", "agentharness/codex-sandboxed", "-n", managedNS)
		mustKubectl("wait", "--for=condition=Ready", "--timeout=180s", "agentharness/codex-sandboxed", "-n", managedNS)
		applyManifest("sandbox-session.yaml", fmt.Sprintf(`apiVersion: harness.openclaw.dev/v1alpha1
kind: AgentSession
metadata: {name: sandboxed, namespace: %s}
spec:
  agentId: main
  sessionKey: agent:main:sandboxed
  sessionId: 0c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f
  model: openai/gpt-5.5
  runtimeOverride: codex-sandboxed
`, managedNS))
		// /tmp is the pod's, shared by every session the pod serves; $HOME
		// is the Codex home, which holds the other sessions' directories.
		const marker = "sandboxed-command"
		r := harnessCLI("turn", "sandboxed", "-n", managedNS, "--route-facts", "none", "--prompt", stubmodel.ShellDirective+
			" echo "+marker+"; echo x > in-cwd && echo wrote-cwd; echo x > /tmp/planted && echo wrote-tmp; echo x > \"$HOME/planted\" && echo wrote-home;"+
			" echo interfaces: $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\\n' ' ')")
		Expect(r.exit).To(Equal(0), "%s", r)
		var output string
		for _, o := range stub.FunctionCallOutputs() {
			if strings.Contains(o.Output, marker) {
				output = o.Output
			}
		}
		Expect(output).To(ContainSubstring("wrote-cwd"), "control: the session's working directory is writable")
		Expect(output).NotTo(ContainSubstring("wrote-tmp"), "the session's tools cannot write the /tmp the pod's sessions share")
		Expect(output).To(ContainSubstring("/tmp/planted: Read-only file system"))
		Expect(output).NotTo(ContainSubstring("wrote-home"), "nor the Codex home")
		Expect(output).To(MatchRegexp(`interfaces: lo\s*($|\n)`), "only loopback inside the sandbox (the pod has eth0)")
	})

	It("still refuses, under the shipped profile, a call the runtime default refuses and the sandbox does not need (keyctl)", func() {
		pod := "codex-sandboxed-app-server-0"
		probe := buildSyscallProbe()
		r := kubectlWithStdin(probe, "exec", "-i", "-n", managedNS, pod, "-c", "app-server", "--",
			"sh", "-c", "cat > /tmp/syscallprobe && chmod 755 /tmp/syscallprobe")
		Expect(r.exit).To(Equal(0), "%s", r)
		out := mustKubectl("exec", "-n", managedNS, pod, "-c", "app-server", "--", "/tmp/syscallprobe", "userns", "keyctl")
		Expect(out).To(ContainSubstring("userns: allowed"), "control: the pod may create a user namespace, as bubblewrap does")
		Expect(out).To(ContainSubstring("keyctl: refused: operation not permitted"))
	})

	It("ships a sandbox profile that starts from the node runtime's own default", func() {
		// The running app-server of the managed specs' harness has
		// RuntimeDefault and no capabilities, as the sandboxed one: its
		// seccomp, as the runtime wrote it into the container's OCI
		// config on the node, is what the recorded default must be.
		var pod corev1.Pod
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: managedNS, Name: poolPod}, &pod)).To(Succeed())
		Expect(pod.Spec.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
		var id string
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.Name == "app-server" {
				id = strings.TrimPrefix(cs.ContainerID, "containerd://")
			}
		}
		Expect(id).NotTo(BeEmpty(), "the app-server container of %s", poolPod)
		// The local node's containerd keeps its task bundles under the
		// cluster's directory (hack/local-cluster.sh).
		bundles, err := filepath.Glob(filepath.Join(requireEnv("LOCAL_CLUSTER_DIR", "the local cluster's state directory (hack/local-cluster.sh env)"),
			"node", "containerd", "state", "*", "k8s.io", id, "config.json"))
		Expect(err).NotTo(HaveOccurred())
		Expect(bundles).To(HaveLen(1), "the OCI config of container %s", id)
		var oci struct {
			Linux struct {
				Seccomp json.RawMessage `json:"seccomp"`
			} `json:"linux"`
		}
		data, err := os.ReadFile(bundles[0])
		Expect(err).NotTo(HaveOccurred())
		Expect(json.Unmarshal(data, &oci)).To(Succeed())
		recorded, err := os.ReadFile(filepath.Join(env.repoRoot, recordedRuntimeDefault))
		Expect(err).NotTo(HaveOccurred())
		Expect(seccompOf(oci.Linux.Seccomp)).To(Equal(seccompOf(recorded)),
			"the node's runtime default differs from the one the shipped profile extends: record it again (config/seccomp)")
	})
}

// seccompProfile is the part of a seccomp profile that says what it allows.
type seccompProfile struct {
	DefaultAction   string   `json:"defaultAction"`
	DefaultErrnoRet *uint    `json:"defaultErrnoRet"`
	Architectures   []string `json:"architectures"`
	Syscalls        []struct {
		Names    []string `json:"names"`
		Action   string   `json:"action"`
		ErrnoRet *uint    `json:"errnoRet"`
		Args     []struct {
			Index    uint   `json:"index"`
			Value    uint64 `json:"value"`
			ValueTwo uint64 `json:"valueTwo"`
			Op       string `json:"op"`
		} `json:"args"`
	} `json:"syscalls"`
}

func seccompOf(data []byte) seccompProfile {
	GinkgoHelper()
	var p seccompProfile
	Expect(json.Unmarshal(data, &p)).To(Succeed())
	for i := range p.Syscalls {
		if len(p.Syscalls[i].Args) == 0 {
			p.Syscalls[i].Args = nil // absent and empty say the same
		}
	}
	return p
}

// buildSyscallProbe builds testdata/syscallprobe for the node (this
// machine) and opens it.
func buildSyscallProbe() *os.File {
	GinkgoHelper()
	out := filepath.Join(work, "syscallprobe")
	cmd := exec.Command("go", "build", "-o", out, "./test/e2e/system/testdata/syscallprobe")
	cmd.Dir = env.repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	b, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "go build syscallprobe: %s", b)
	f, err := os.Open(out)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(f.Close)
	return f
}

// kubectlWithStdin runs kubectl with stdin read from in.
func kubectlWithStdin(in io.Reader, args ...string) result {
	GinkgoHelper()
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd, stdout, stderr := command(cctx, nil, env.kubectl, args...)
	cmd.Stdin = in
	return finished(cmd.Run(), stdout, stderr, env.kubectl, args)
}
