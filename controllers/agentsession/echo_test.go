package agentsession_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/testutil"
)

// echoesSkipped reads the manager's count of the session updates it did not
// reconcile because they only carried its own write back.
func echoesSkipped() float64 {
	families, err := metrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() == "harness_manager_agentsession_own_write_echoes_skipped_total" {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

var _ = Describe("AgentSession controller and its own writes", Serial, func() {
	SetDefaultEventuallyTimeout(timeout)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)

	It("does not reconcile the echo of its own status write, and still corrects someone else's edit of its fields", func() {
		id := uid()
		prov := "p-" + id
		ns := newNamespace(map[string]string{"case": id})
		create(newPolicy(id, id, provider(prov, "openclaw")))
		skipped := echoesSkipped()
		calls.Reset()
		s := newSession(ns.Name, "s", prov+"/m")
		create(s)
		Eventually(policyOf(s)).Should(Equal("openclaw/provider [" + id + "] PolicyResolved=True/PolicyMatched " + ready))
		// The session's first reconcile applied the status; its echo is
		// counted, not reconciled, and the first reconcile is the fixpoint.
		Eventually(echoesSkipped).Should(Equal(skipped+1), "the echo of the manager's first write")
		expectSettled([]*v1alpha1.AgentSession{s})
		Expect(calls.Reconciles(testutil.Key(s))).To(HaveLen(1), "one reconcile: the creation's")

		By("someone else writing another runtime into the manager's status.policy")
		edit := []byte(`{"status":{"policy":{"runtime":"codex"}}}`)
		// The patch's own response shows the edit; a later read may already
		// see the controller's correction.
		edited := getSession(s)
		Expect(k8sClient.Status().Patch(ctx, edited, client.RawPatch(types.MergePatchType, edit))).To(Succeed())
		Expect(edited.Status.Policy.Runtime).To(Equal(v1alpha1.RuntimeID("codex")), "the edit took")
		Eventually(policyOf(s)).Should(Equal("openclaw/provider ["+id+"] PolicyResolved=True/PolicyMatched "+ready), "the edit is reconciled and undone")
		Eventually(echoesSkipped).Should(Equal(skipped+2), "the echo of the correction")
		expectSettled([]*v1alpha1.AgentSession{s})
		rs := calls.Reconciles(testutil.Key(s))
		Expect(rs).To(HaveLen(2), "the creation's reconcile and the edit's, none for either echo")
		Expect(rs[1].Writes).To(Equal([]string{"apply/status AgentSession " + testutil.Key(s)}))
	})
})
