//go:build e2e

package system

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// faultSpecs take away, mid-turn, the Pod a turn runs on and then the
// dispatcher's Pod. The stub model holds its reply after the first word, so
// the fault lands while the turn is visibly running (the suite waits for the
// held request, not for time). Neither turn may run twice: each marker
// reaches the model once, whatever the clients retry.
func faultSpecs() {
	It("fails a turn closed when its app-server Pod is deleted mid-turn, never replays it, and runs the next turn after a reset", func() {
		const marker = "FAULT-APP-SERVER-POD"
		gate := stubmodel.NewGate()
		DeferCleanup(gate.Release)
		stub.When(marker, stubmodel.Text("this answer never completes").HoldBefore(1, gate))

		wait := background(cliEnv(), env.kubectl, "harness", "turn", poolSession, "-n", managedNS, "--route-facts", "none", "--prompt", marker)
		Eventually(gate.Reached()).WithTimeout(2*time.Minute).Should(BeClosed(), "the turn reached the model")
		// The Pod is lost, not drained: a plain delete would let the running
		// turn finish (the app-server's termination grace is for that), so
		// one second between SIGTERM and SIGKILL, as when a node fails.
		mustKubectl("delete", "pod", poolPod, "-n", managedNS, "--grace-period=1", "--wait=false")

		r := wait()
		Expect(r.exit).NotTo(Equal(0), "the turn failed: %s", r)
		Expect(r.stdout).NotTo(ContainSubstring("this answer never completes"))
		Expect(r.stderr).To(ContainSubstring("replaySafe false"), "the failure says a retry is not safe")
		Expect(stub.RequestsContaining(marker)).To(HaveLen(1), "the turn was not replayed")

		// The StatefulSet brings the Pod back with an empty native home: the
		// session's thread is gone, and the next turn says so.
		mustKubectl("wait", "--for=condition=Ready", "--timeout=180s", "pod/"+poolPod, "-n", managedNS)
		mustKubectl("wait", "--for=condition=Ready", "--timeout=120s", "agentharness/"+poolHarness, "-n", managedNS)
		r = harnessCLI("turn", poolSession, "-n", managedNS, "--route-facts", "none", "--prompt", "Say hello")
		Expect(r.exit).NotTo(Equal(0), "%s", r)
		Expect(r.stdout + r.stderr).To(ContainSubstring("NativeThreadLost"))

		// A reset starts a new thread on the new Pod.
		session := &v1alpha1.AgentSession{}
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: managedNS, Name: poolSession}, session)).To(Succeed())
		mustKubectl("patch", "agentsession", poolSession, "-n", managedNS, "--type=merge",
			"-p", fmt.Sprintf(`{"spec":{"resetGeneration":%d}}`, session.Spec.ResetGeneration+1))
		r = harnessCLI("turn", poolSession, "-n", managedNS, "--route-facts", "none", "--prompt", "Say hello")
		Expect(r.exit).To(Equal(0), "%s", r)
		Expect(r.stdout).To(ContainSubstring(stubmodel.DefaultText))
		Expect(stub.RequestsContaining(marker)).To(HaveLen(1), "still not replayed")
	})

	It("recovers a turn from the journal on its volume when the dispatcher Pod is deleted mid-turn", func() {
		const marker = "FAULT-DISPATCHER-POD"
		runID := "e2e-dispatcher-fault-" + randomToken()[:8]
		gate := stubmodel.NewGate()
		DeferCleanup(gate.Release)
		stub.When(marker, stubmodel.Text("this answer never completes either").HoldBefore(1, gate))

		old := dispatcherPod(Default)
		turn := []string{"harness", "turn", poolSession, "-n", managedNS, "--route-facts", "none", "--run-id", runID, "--prompt", marker}
		wait := background(cliEnv(), env.kubectl, turn...)
		Eventually(gate.Reached()).WithTimeout(2*time.Minute).Should(BeClosed(), "the turn reached the model")
		// A crash rather than a drain: one second between SIGTERM and
		// SIGKILL, so the run is still open in the journal when the
		// process dies.
		mustKubectl("delete", "pod", old.Name, "-n", operatorNamespace, "--grace-period=1", "--wait=true")
		first := wait()
		Expect(first.exit).NotTo(Equal(0), "the stream broke: %s", first)

		// A new Pod, the same volume: the journal (and the owner identity
		// it keeps there) carry the run across.
		Eventually(func(g Gomega) {
			p := dispatcherPod(g)
			g.Expect(p.UID).NotTo(Equal(old.UID))
			g.Expect(p.Status.ContainerStatuses).To(HaveLen(1))
			g.Expect(p.Status.ContainerStatuses[0].Ready).To(BeTrue())
		}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		_, err := os.Stat(filepath.Join(journalDir(), "journal", "OWNER"))
		Expect(err).NotTo(HaveOccurred(), "the journal lives on the PersistentVolume")

		// Asking for the run again returns what the new Pod recovered: the
		// turn's outcome is unknown, so it failed and is not safe to replay —
		// and it was not run again.
		r := run(cliEnv(), env.kubectl, turn...)
		Expect(r.exit).NotTo(Equal(0), "%s", r)
		Expect(r.stderr).To(ContainSubstring("HarnessUnavailable"))
		Expect(r.stderr).To(ContainSubstring("replaySafe false"))
		Expect(stub.RequestsContaining(marker)).To(HaveLen(1), "the turn was not replayed")

		// The session goes on with the next turn.
		gate.Release()
		r = harnessCLI("turn", poolSession, "-n", managedNS, "--route-facts", "none", "--prompt", "Say hello")
		Expect(r.exit).To(Equal(0), "%s", r)
		Expect(r.stdout).To(ContainSubstring(stubmodel.DefaultText))
		Expect(stub.RequestsContaining(marker)).To(HaveLen(1), "still not replayed")
	})
}

// dispatcherPod returns the dispatcher's one Pod that is not being deleted.
func dispatcherPod(g Gomega) corev1.Pod {
	var pods corev1.PodList
	g.Expect(admin.List(ctx, &pods, client.InNamespace(operatorNamespace),
		client.MatchingLabels{"app.kubernetes.io/name": "harness-operator", "app.kubernetes.io/component": "dispatcher"})).To(Succeed())
	var live []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	g.Expect(live).To(HaveLen(1), "one dispatcher Pod")
	return live[0]
}
