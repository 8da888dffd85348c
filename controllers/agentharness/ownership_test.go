package agentharness

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/harness/objects"
)

var _ = Describe("objects of a generated name that the harness does not control", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("leaves a colliding Secret and Service alone, reports NameConflict with an Event, and never deletes them", func() {
		h := managedHarness(ns, "codex", 1)
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: objects.TokenSecretName(h)},
			Data:       map[string][]byte{"token": []byte("someone else's")},
		}
		Expect(k8sClient.Create(ctx, secret)).To(Succeed())
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: objects.WorkloadName(h)},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "theirs"},
				Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
		}
		Expect(k8sClient.Create(ctx, svc)).To(Succeed())
		Expect(k8sClient.Create(ctx, h)).To(Succeed())

		Eventually(statusOf(h)).Should(haveCondition(v1alpha1.HarnessConditionReady, "False/NameConflict"))
		msg := condMessage(getHarness(h), v1alpha1.HarnessConditionReady)
		Expect(msg).To(ContainSubstring("Secret " + secret.Name))
		Expect(msg).To(ContainSubstring("Service " + svc.Name))
		Eventually(eventsFor(h)).Should(ContainElement(HavePrefix("Warning/NameConflict: name conflict: Secret " + secret.Name)))

		By("the reconcile that reported the conflict created nothing and changed neither object")
		Expect(apierrors.IsNotFound(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: objects.WorkloadName(h)},
			&appsv1.StatefulSet{}))).To(BeTrue(), "no StatefulSet next to a foreign token Secret")
		expectUntouched := func() {
			GinkgoHelper()
			gotSecret := &corev1.Secret{}
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(secret), gotSecret)).To(Succeed())
			Expect(gotSecret.Data).To(Equal(secret.Data))
			Expect(gotSecret.OwnerReferences).To(BeEmpty(), "an owner reference would garbage-collect it with the harness")
			Expect(gotSecret.Labels).To(BeEmpty())
			gotSvc := &corev1.Service{}
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(svc), gotSvc)).To(Succeed())
			Expect(gotSvc.Spec.Selector).To(Equal(svc.Spec.Selector))
			Expect(gotSvc.OwnerReferences).To(BeEmpty())
		}
		expectUntouched()

		By("turning external removes only objects the harness controls")
		patch := client.MergeFrom(h.DeepCopy())
		h.Spec.AppServer = nil
		h.Spec.External = &v1alpha1.ExternalServer{URL: "ws://" + nextHost() + ":1",
			TokenSecretRef: v1alpha1.SecretKeyReference{Name: "missing", Key: "token"}}
		Expect(k8sClient.Patch(ctx, h, patch)).To(Succeed())
		Eventually(statusOf(h)).Should(haveCondition(v1alpha1.HarnessConditionAttested, "False/ExternalServer"))
		expectUntouched()

		By("deleting the harness leaves them")
		Expect(k8sClient.Delete(ctx, h)).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(h), h)) }).Should(BeTrue())
		expectUntouched()
	})

	It("control: without a colliding object the harness creates and controls its objects", func() {
		h := managedHarness(ns, "codex", 1)
		Expect(k8sClient.Create(ctx, h)).To(Succeed())
		Eventually(statusOf(h)).Should(haveCondition(v1alpha1.HarnessConditionReady, "False/WorkloadNotReady"))
		h = getHarness(h)
		for _, obj := range []client.Object{&corev1.Secret{}, &corev1.Service{}, &appsv1.StatefulSet{}} {
			name := objects.WorkloadName(h)
			if _, ok := obj.(*corev1.Secret); ok {
				name = objects.TokenSecretName(h)
			}
			Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj)).To(Succeed())
			Expect(metav1.IsControlledBy(obj, h)).To(BeTrue(), "%T %s", obj, name)
		}
	})
})
