package agentharness

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/harness/codexconfig"
)

// Codex's sandbox (spec.appServer.sandbox) needs user namespaces, which the
// container runtime's default seccomp profile refuses in a restricted Pod
// (docs/security.md records the probe). So a pod of a harness that asks for
// it proves the sandbox works before the app-server starts: the init
// container runs one command in it, and where that fails the pod never
// starts — turns fail closed (HarnessUnavailable) instead of running
// without the sandbox, and SandboxReady carries the check's output.

// SandboxCheckContainer is the init container that runs the check.
const SandboxCheckContainer = "sandbox-check"

// sandboxCheckDir is the check's working directory: a volume of its own
// (writable by the pod's fsGroup, as a session's directory is writable).
const (
	sandboxCheckDir    = "/tmp/sandbox-check"
	sandboxCheckVolume = "sandbox-check"
)

// maxSandboxMessage bounds the check's output copied into the condition.
const maxSandboxMessage = 512

// sandboxRequested says whether the harness asks for Codex's sandbox.
func sandboxRequested(h *v1alpha1.AgentHarness) bool {
	sb := h.Spec.AppServer.Sandbox
	return sb != nil && sb.Mode == v1alpha1.SandboxModeWorkspaceWrite
}

// seccompProfile is the server pods' seccomp profile: the harness's
// Localhost profile when its sandbox names one, else RuntimeDefault.
func seccompProfile(h *v1alpha1.AgentHarness) *corev1ac.SeccompProfileApplyConfiguration {
	if sb := h.Spec.AppServer.Sandbox; sandboxRequested(h) && sb.SeccompLocalhostProfile != "" {
		return corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeLocalhost).WithLocalhostProfile(sb.SeccompLocalhostProfile)
	}
	return corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault)
}

// sandboxArgs are the app-server's options for a harness that asks for the
// sandbox: its tools write only their session's directory, not the /tmp
// the pod's sessions share (codexconfig.WorkspaceWriteArgs).
func sandboxArgs(h *v1alpha1.AgentHarness) []string {
	if !sandboxRequested(h) {
		return nil
	}
	return codexconfig.WorkspaceWriteArgs()
}

// sandboxCheck is the init container, and the volume of its working
// directory: the app-server's image and binary run
// `sandbox -c sandbox_mode="workspace-write" <sandboxArgs> -- true` with the
// app-server's security context and home, and none of its credentials: the
// sandbox the sessions' tools will get.
func (w workload) sandboxCheck(binary string, pull corev1.PullPolicy, security *corev1ac.SecurityContextApplyConfiguration) (*corev1ac.ContainerApplyConfiguration, *corev1ac.VolumeApplyConfiguration) {
	volume := corev1ac.Volume().WithName(sandboxCheckVolume).WithEmptyDir(corev1ac.EmptyDirVolumeSource())
	return corev1ac.Container().
		WithName(SandboxCheckContainer).
		WithImage(w.harness.Spec.AppServer.Image).
		WithImagePullPolicy(pull).
		WithCommand(binary).
		WithArgs(slices.Concat([]string{"sandbox", "-c", `sandbox_mode="workspace-write"`}, sandboxArgs(w.harness), []string{"--", "true"})...).
		// A writable directory, as a session's working directory is: in
		// workspace-write bubblewrap keeps .git of the working directory
		// read-only, which needs a mount point it can create (the root
		// filesystem is read-only, and a directory runc creates for
		// workingDir belongs to root).
		WithWorkingDir(sandboxCheckDir).
		WithEnv(
			corev1ac.EnvVar().WithName("CODEX_HOME").WithValue(HomeMountPath),
			corev1ac.EnvVar().WithName("HOME").WithValue(HomeMountPath)).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName(homeVolume).WithMountPath(HomeMountPath),
			corev1ac.VolumeMount().WithName(tmpVolume).WithMountPath("/tmp"),
			corev1ac.VolumeMount().WithName(sandboxCheckVolume).WithMountPath(sandboxCheckDir)).
		WithTerminationMessagePolicy(corev1.TerminationMessageFallbackToLogsOnError).
		WithSecurityContext(security), volume
}

// sandboxState is what a pod's check says.
type sandboxState struct {
	// ran: the check ended at least once; failed: its last end was an
	// error, described by message (the check's output).
	ran, failed bool
	message     string
}

// observeSandbox reads the check's outcome from a pod's status.
func observeSandbox(p *corev1.Pod) sandboxState {
	for _, cs := range p.Status.InitContainerStatuses {
		if cs.Name != SandboxCheckContainer {
			continue
		}
		t := cs.State.Terminated
		if t == nil {
			t = cs.LastTerminationState.Terminated
		}
		if t == nil {
			return sandboxState{}
		}
		msg := strings.TrimSpace(t.Message)
		if msg == "" {
			msg = fmt.Sprintf("exit code %d (%s)", t.ExitCode, t.Reason)
		}
		return sandboxState{ran: true, failed: t.ExitCode != 0, message: msg}
	}
	return sandboxState{}
}

// sandboxVerdict is SandboxReady from the pods' checks: one failure is
// enough to say the sandbox does not work there (the failing pod never
// serves); one success with no failure says it does.
func sandboxVerdict(servers []observedServer) verdict {
	var passed []string
	for _, srv := range servers {
		if srv.sandbox.failed {
			return verdict{metav1.ConditionFalse, v1alpha1.HarnessReasonSandboxUnavailable,
				truncateRunes(fmt.Sprintf("Codex's sandbox does not work on server pod %s, which therefore does not start: %s", srv.name, srv.sandbox.message), maxSandboxMessage)}
		}
		if srv.sandbox.ran {
			passed = append(passed, srv.name)
		}
	}
	if len(passed) == 0 {
		return verdict{metav1.ConditionUnknown, v1alpha1.HarnessReasonSandboxNotChecked, "no server pod has run the sandbox check yet"}
	}
	return verdict{metav1.ConditionTrue, v1alpha1.HarnessReasonSandboxUsable,
		"Codex's workspace-write sandbox works on server pods " + strings.Join(passed, ", ")}
}
