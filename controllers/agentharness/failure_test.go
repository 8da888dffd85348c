package agentharness

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/harness/objects"
)

var _ = Describe("a phase the API server refuses", func() {
	It("shows the refused StatefulSet apply in the harness's status and an Event, and progresses once the quota is gone", func() {
		ns := newNamespace()
		// envtest runs no quota controller: the spec writes the status it
		// would, which is what quota admission enforces.
		quota := &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-statefulsets"},
			Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/statefulsets.apps": resource.MustParse("0")}},
		}
		Expect(k8sClient.Create(ctx, quota)).To(Succeed())
		quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard,
			Used: corev1.ResourceList{"count/statefulsets.apps": resource.MustParse("0")}}
		Expect(k8sClient.Status().Update(ctx, quota)).To(Succeed())

		h := managedHarness(ns, "codex", 1)
		Expect(k8sClient.Create(ctx, h)).To(Succeed())
		Eventually(statusOf(h)).Should(haveCondition(v1alpha1.HarnessConditionReady, "False/ReconcileFailed"))
		got := getHarness(h)
		Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		Expect(condMessage(got, v1alpha1.HarnessConditionReady)).To(And(
			ContainSubstring("reconcile statefulset: apply statefulset "+objects.WorkloadName(h)),
			ContainSubstring("exceeded quota: no-statefulsets"),
		))
		Eventually(eventsFor(h)).Should(ContainElement(HavePrefix("Warning/ReconcileFailed: reconcile statefulset")))

		By("control: without the quota the harness progresses")
		Expect(k8sClient.Delete(ctx, quota)).To(Succeed())
		Eventually(statusOf(h)).Should(haveCondition(v1alpha1.HarnessConditionReady, "False/WorkloadNotReady"))
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: objects.WorkloadName(h)}, &appsv1.StatefulSet{})).To(Succeed())
	})
})
