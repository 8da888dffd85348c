//go:build e2e

package system

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // Ginkgo's DSL
	. "github.com/onsi/gomega"    //nolint:revive // Gomega's DSL
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// userNamespacesProfile is a Localhost seccomp profile that lets a Pod
// create user namespaces (what Codex's bubblewrap needs), and still refuses
// the calls a container never needs.
const userNamespacesProfile = `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["kexec_load","kexec_file_load",` +
	`"open_by_handle_at","init_module","finit_module","delete_module","bpf","perf_event_open","ptrace",` +
	`"mount_setattr","move_mount","open_tree","fsopen","fsconfig","fsmount","fspick"],"action":"SCMP_ACT_ERRNO","errnoRet":1}]}`

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

	It("runs tools in Codex's sandbox where a Localhost profile allows user namespaces: no network, writes only in the session's directory", func() {
		Expect(os.MkdirAll(filepath.Join(env.seccompDir, "harness-e2e"), 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(env.seccompDir, "harness-e2e", "userns.json"), []byte(userNamespacesProfile), 0o644)).To(Succeed())
		applyManifest("sandbox-profile.yaml", managedHarness("codex-sandboxed", "{mode: WorkspaceWrite, seccompLocalhostProfile: harness-e2e/userns.json}"))
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
		const marker = "sandboxed-command"
		r := harnessCLI("turn", "sandboxed", "-n", managedNS, "--route-facts", "none", "--prompt", stubmodel.ShellDirective+
			" echo "+marker+"; echo x > in-cwd && echo wrote-cwd; echo interfaces: $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\\n' ' ')")
		Expect(r.exit).To(Equal(0), "%s", r)
		var output string
		for _, o := range stub.FunctionCallOutputs() {
			if strings.Contains(o.Output, marker) {
				output = o.Output
			}
		}
		Expect(output).To(ContainSubstring("wrote-cwd"), "the session's working directory is writable")
		Expect(output).To(MatchRegexp(`interfaces: lo\s*($|\n)`), "only loopback inside the sandbox (the pod has eth0)")
	})
}
