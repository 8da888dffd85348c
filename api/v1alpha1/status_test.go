package v1alpha1_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

var _ = Describe("status subresource", func() {
	It("drops status written on create and through the main resource", func() {
		ns := newNamespace()
		s := validSession(ns, "status")
		s.Status.AgentHarnessID = "codex"
		Expect(k8sClient.Create(ctx, s)).To(Succeed())

		var got v1alpha1.AgentSession
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(s), &got)).To(Succeed())
		Expect(got.Status.AgentHarnessID).To(BeEmpty(), "status must not be settable on create")

		got.Status.AgentHarnessID = "codex"
		got.Spec.ResetGeneration = 1
		Expect(k8sClient.Update(ctx, &got)).To(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(s), &got)).To(Succeed())
		Expect(got.Spec.ResetGeneration).To(Equal(int64(1)), "the spec change applies")
		Expect(got.Status.AgentHarnessID).To(BeEmpty(), "status must not be writable through the main resource")
	})

	It("writes status, and only status, through the subresource", func() {
		ns := newNamespace()
		h := validExternalHarness(ns, "status")
		Expect(k8sClient.Create(ctx, h)).To(Succeed())

		h.Status.Version = "0.169.0"
		h.Spec.Label = "changed through status"
		Expect(k8sClient.Status().Update(ctx, h)).To(Succeed())

		var got v1alpha1.AgentHarness
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(h), &got)).To(Succeed())
		Expect(got.Status.Version).To(Equal("0.169.0"))
		Expect(got.Spec.Label).To(BeEmpty(), "spec must not be writable through the status subresource")
	})

	It("applies to RuntimePolicy as well", func() {
		p := validPolicy("status-policy")
		p.Status.MatchedNamespaces = 7
		Expect(k8sClient.Create(ctx, p)).To(Succeed())
		var got v1alpha1.RuntimePolicy
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(p), &got)).To(Succeed())
		Expect(got.Status.MatchedNamespaces).To(BeZero())

		got.Status.MatchedNamespaces = 7
		Expect(k8sClient.Status().Update(ctx, &got)).To(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(p), &got)).To(Succeed())
		Expect(got.Status.MatchedNamespaces).To(Equal(int32(7)))
	})
})
