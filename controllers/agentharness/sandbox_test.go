package agentharness

import (
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/testutil"
)

// bwrapRefusal is what the sandbox check printed in a restricted Pod on
// the real node (docs/security.md).
const bwrapRefusal = "bwrap: No permissions to create a new namespace, likely because the kernel does not allow non-privileged user namespaces."

var _ = Describe("Codex's sandbox on the server pods", func() {
	It("checks it in every pod before the app-server starts, reports a failed check and never offers the pods; without it asked for, no check", func() {
		ns := newNamespace()
		h := managedHarness(ns, "sandboxed", 1)
		h.Spec.AppServer.Sandbox = &v1alpha1.AppServerSandbox{
			Mode: v1alpha1.SandboxModeWorkspaceWrite, SeccompLocalhostProfile: "profiles/codex-userns.json"}
		Expect(k8sClient.Create(ctx, h)).To(Succeed())
		sts := waitStatefulSet(h)
		spec := sts.Spec.Template.Spec
		localhost := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("profiles/codex-userns.json")}
		Expect(spec.SecurityContext.SeccompProfile).To(Equal(localhost))
		Expect(spec.InitContainers).To(HaveLen(1))
		check := spec.InitContainers[0]
		Expect(check.Name).To(Equal(SandboxCheckContainer))
		Expect(check.Command).To(Equal([]string{"codex"}))
		// The check runs the sandbox the tools get: no /tmp, no $TMPDIR.
		noTmp := []string{"-c", "sandbox_workspace_write.exclude_slash_tmp=true", "-c", "sandbox_workspace_write.exclude_tmpdir_env_var=true"}
		Expect(check.Args).To(Equal(slices.Concat([]string{"sandbox", "-c", `sandbox_mode="workspace-write"`}, noTmp, []string{"--", "true"})))
		Expect(strings.Join(spec.Containers[0].Args, " ")).To(ContainSubstring(strings.Join(noTmp, " ")),
			"the app-server's tools may not write the /tmp its sessions share")
		Expect(check.Image).To(Equal(h.Spec.AppServer.Image))
		Expect(check.WorkingDir).To(Equal("/tmp/sandbox-check"), "a writable working directory, as a session's is")
		Expect(check.VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "sandbox-check", MountPath: "/tmp/sandbox-check"}))
		Expect(spec.Volumes).To(ContainElement(HaveField("Name", "sandbox-check")))
		Expect(check.SecurityContext.SeccompProfile).To(Equal(localhost))
		Expect(spec.Containers[0].SecurityContext.SeccompProfile).To(Equal(localhost))
		Expect(check.SecurityContext.AllowPrivilegeEscalation).To(Equal(ptr.To(false)))
		for _, e := range check.Env {
			Expect(e.ValueFrom).To(BeNil(), "the check gets no credential: %s", e.Name)
		}

		By("before any pod ran the check: unknown")
		Eventually(statusOf(h)).Should(haveCondition(v1alpha1.HarnessConditionSandboxReady, "Unknown/SandboxNotChecked"))

		By("a pod whose check failed (as in a restricted Pod with RuntimeDefault): SandboxReady and Ready False, with the check's output")
		pod := testutil.ServerPod(sts, 0)
		Expect(k8sClient.Create(ctx, pod)).To(Succeed())
		Expect(testutil.SetPodStatus(ctx, k8sClient, pod, "10.1.0.9", "", false)).To(Succeed())
		pod.Status.Phase = corev1.PodPending
		pod.Status.ContainerStatuses = nil
		pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{
			Name:                 SandboxCheckContainer,
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: bwrapRefusal}},
		}}
		Expect(k8sClient.Status().Update(ctx, pod)).To(Succeed())
		Eventually(statusOf(h)).Should(haveCondition(v1alpha1.HarnessConditionSandboxReady, "False/SandboxUnavailable"))
		Eventually(statusOf(h)).Should(haveCondition(v1alpha1.HarnessConditionReady, "False/SandboxUnavailable"))
		Expect(condMessage(getHarness(h), v1alpha1.HarnessConditionReady)).To(ContainSubstring(bwrapRefusal))

		By("control: a harness without the sandbox has no check, RuntimeDefault and no SandboxReady")
		plain := managedHarness(ns, "plain", 1)
		Expect(k8sClient.Create(ctx, plain)).To(Succeed())
		plainSpec := waitStatefulSet(plain).Spec.Template.Spec
		Expect(plainSpec.InitContainers).To(BeEmpty())
		Expect(plainSpec.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
		Expect(strings.Join(plainSpec.Containers[0].Args, " ")).NotTo(ContainSubstring("sandbox_workspace_write"))
		Eventually(statusOf(plain)).Should(haveCondition(v1alpha1.HarnessConditionReady, "False/WorkloadNotReady"))
		Expect(cond(getHarness(plain), v1alpha1.HarnessConditionSandboxReady)).To(BeEmpty())
	})
})

func TestSandboxVerdict(t *testing.T) {
	passed := observedServer{name: "p-0", sandbox: sandboxState{ran: true}}
	failed := observedServer{name: "p-1", sandbox: sandboxState{ran: true, failed: true, message: bwrapRefusal}}
	pending := observedServer{name: "p-2"}
	for _, tc := range []struct {
		name    string
		servers []observedServer
		want    string
	}{
		{"no pod yet", nil, "Unknown/SandboxNotChecked"},
		{"a pod still checking", []observedServer{pending}, "Unknown/SandboxNotChecked"},
		{"one pod passed", []observedServer{passed, pending}, "True/SandboxUsable"},
		{"one pod failed, whatever the others did", []observedServer{passed, failed}, "False/SandboxUnavailable"},
	} {
		v := sandboxVerdict(tc.servers)
		if got := string(v.status) + "/" + string(v.reason); got != tc.want {
			t.Errorf("%s: %s (%s), want %s", tc.name, got, v.message, tc.want)
		}
	}
}

func TestObserveSandbox(t *testing.T) {
	term := func(code int32, msg string) *corev1.ContainerStateTerminated {
		return &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Error", Message: msg}
	}
	for _, tc := range []struct {
		name   string
		status corev1.ContainerStatus
		want   sandboxState
	}{
		{"running", corev1.ContainerStatus{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}, sandboxState{}},
		{"passed", corev1.ContainerStatus{State: corev1.ContainerState{Terminated: term(0, "")}}, sandboxState{ran: true, message: "exit code 0 (Error)"}},
		{"failed", corev1.ContainerStatus{State: corev1.ContainerState{Terminated: term(1, " "+bwrapRefusal+"\n")}},
			sandboxState{ran: true, failed: true, message: bwrapRefusal}},
		{"crash loop: the last end", corev1.ContainerStatus{
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: term(1, bwrapRefusal)}},
			sandboxState{ran: true, failed: true, message: bwrapRefusal}},
	} {
		tc.status.Name = SandboxCheckContainer
		p := &corev1.Pod{Status: corev1.PodStatus{InitContainerStatuses: []corev1.ContainerStatus{tc.status}}}
		if got := observeSandbox(p); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if got := observeSandbox(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "no-check"}}); got != (sandboxState{}) {
		t.Errorf("a pod without the check: %+v", got)
	}
}
