package agentharness

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/harness/objects"
)

var _ = Describe("credentials of the server pods", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	credentialsHash := func(h *v1alpha1.AgentHarness) func() string {
		return func() string { return waitStatefulSet(h).Spec.Template.Annotations[v1alpha1.AnnotationCredentialsHash] }
	}
	newSecret := func(name string, data map[string]string) *corev1.Secret {
		GinkgoHelper()
		s := &corev1.Secret{ObjectMeta: metavOM(ns, name), StringData: data}
		Expect(k8sClient.Create(ctx, s)).To(Succeed())
		return s
	}
	setData := func(s *corev1.Secret, key, value string) {
		GinkgoHelper()
		patch := client.MergeFrom(s.DeepCopy())
		s.StringData = map[string]string{key: value}
		Expect(k8sClient.Patch(ctx, s, patch)).To(Succeed())
	}

	It("rolls the pods when a Secret key they use changes, not when another Secret does", func() {
		provider := newSecret("provider", map[string]string{"api-key": "sk-first"})
		extra := newSecret("extra", map[string]string{"token": "extra-first", "unused": "x"})
		unrelated := newSecret("unrelated", map[string]string{"api-key": "other"})
		h := managedHarness(ns, "creds", 1)
		h.Spec.AppServer.Credentials = []v1alpha1.AppServerCredential{
			{Name: "OPENAI_API_KEY", Mount: v1alpha1.CredentialMountEnv,
				SecretKeyRef: v1alpha1.SecretKeyReference{Name: "provider", Key: "api-key"}},
		}
		h.Spec.AppServer.Env = []corev1.EnvVar{{Name: "EXTRA_TOKEN", ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "extra"}, Key: "token"}}}}
		Expect(k8sClient.Create(ctx, h)).To(Succeed())
		Eventually(credentialsHash(h)).Should(MatchRegexp(`^[0-9a-f]{32}$`))
		first := credentialsHash(h)()
		config := waitStatefulSet(h).Spec.Template.Annotations[v1alpha1.AnnotationConfigHash]

		By("a new provider key rolls the pods (the spec did not change)")
		setData(provider, "api-key", "sk-second")
		Eventually(credentialsHash(h)).ShouldNot(Equal(first))
		second := credentialsHash(h)()
		Expect(waitStatefulSet(h).Spec.Template.Annotations[v1alpha1.AnnotationConfigHash]).To(Equal(config))
		Expect(waitStatefulSet(h).Spec.Template.Annotations).NotTo(ContainElement(ContainSubstring("sk-second")))

		By("a new env valueFrom key rolls the pods")
		setData(extra, "token", "extra-second")
		Eventually(credentialsHash(h)).ShouldNot(Equal(second))
		third := credentialsHash(h)()

		By("control: a key the pods do not use, and a Secret they do not use, change nothing")
		setData(extra, "unused", "y")
		setData(unrelated, "api-key", "changed")
		current := getHarness(h)
		calls.Reset()
		token := &corev1.Secret{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: objects.TokenSecretName(h)}, token)).To(Succeed())
		patch := client.MergeFrom(token.DeepCopy())
		token.Annotations = map[string]string{"test.harness.openclaw.dev/touched": "yes"} // reconciles the harness
		Expect(k8sClient.Patch(ctx, token, patch)).To(Succeed())
		Eventually(func() error { return calls.ReconciledAt(current) }).Should(Succeed(),
			"the controller reconciled the harness after both changes")
		Expect(credentialsHash(h)()).To(Equal(third))
	})
})
