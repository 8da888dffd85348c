package agentharness

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/harness/codexconfig"
	"github.com/openclaw/harness-operator/internal/harness/objects"
	"github.com/openclaw/harness-operator/internal/testutil"
)

const (
	// gatewayManagerLabel puts a harness in the gateway manager's cache
	// (and out of the suite's first manager's).
	gatewayManagerLabel = "test.harness.openclaw.dev/model-gateway-manager"
	// suiteGatewayURL and suiteGatewayCASecret are the gateway manager's
	// --model-gateway-url and --model-gateway-ca-secret.
	suiteGatewayURL      = "https://harness-operator-model-gateway.harness-operator-system.svc:8443"
	suiteGatewayCASecret = "harness-operator-dispatcher-tls"
)

var gatewayMgrDone = make(chan struct{})

// startGatewayManager runs a second manager whose reconciler knows the
// model gateway, for the harnesses labelled gatewayManagerLabel only.
func startGatewayManager(cfg *rest.Config, scheme *runtime.Scheme) {
	GinkgoHelper()
	gateway, err := labels.Parse(gatewayManagerLabel)
	Expect(err).NotTo(HaveOccurred())
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{ByObject: map[client.Object]cache.ByObject{&v1alpha1.AgentHarness{}: {Label: gateway}}},
		// The suite's first manager runs a controller of the same name.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	Expect(err).NotTo(HaveOccurred())
	r := &Reconciler{
		Client:                  mgr.GetClient(),
		MaxConcurrentReconciles: 2,
		AppServerPort:           appPort,
		HarnessNamespaces:       testutil.SuiteNamespaces(nsPrefix),
		ExternalDial:            testutil.LoopbackExternalDial,
		ModelGateway:            ModelGatewaySettings{URL: suiteGatewayURL, CASecret: suiteGatewayCASecret},
	}
	Expect(r.SetupWithManager(mgr)).To(Succeed())
	go func() {
		defer GinkgoRecover()
		defer close(gatewayMgrDone)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
}

// suiteCA is a new self-signed CA certificate in PEM.
func suiteCA() []byte {
	GinkgoHelper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "suite-gateway-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	Expect(err).NotTo(HaveOccurred())
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func withModelGateway(h *v1alpha1.AgentHarness) *v1alpha1.AgentHarness {
	h.Spec.AppServer.Credentials = nil
	h.Spec.ModelGateway = &v1alpha1.ModelGateway{BaseURL: "https://api.openai.com/v1",
		CredentialSecretRef: v1alpha1.SecretKeyReference{Name: "provider", Key: "api-key"}}
	return h
}

var _ = Describe("spec.modelGateway", func() {
	It("on a manager without --model-gateway-url: Ready False ModelGatewayNotConfigured, an Event naming the flag, and no workload change", func() {
		ns := newNamespace()
		By("control: without the field the harness gets its workload")
		h := managedHarness(ns, "codex", 1)
		Expect(k8sClient.Create(ctx, h)).To(Succeed())
		sts := waitStatefulSet(h)
		hash := sts.Spec.Template.Annotations[v1alpha1.AnnotationConfigHash]
		Expect(hash).NotTo(BeEmpty())

		By("turning the field on changes nothing of the running workload")
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(h), h)).To(Succeed())
		withModelGateway(h)
		Expect(k8sClient.Update(ctx, h)).To(Succeed())
		Eventually(statusOf(h)).Should(haveCondition(v1alpha1.HarnessConditionReady, "False/ModelGatewayNotConfigured"))
		got := getHarness(h)
		Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		Expect(cond(got, v1alpha1.HarnessConditionWorkloadReady)).To(Equal("False/ModelGatewayNotConfigured"))
		Expect(condMessage(got, v1alpha1.HarnessConditionReady)).To(ContainSubstring("without --model-gateway-url"))
		Eventually(eventsFor(h)).Should(ContainElement(And(HavePrefix("Warning/ModelGatewayNotConfigured: "), ContainSubstring("--model-gateway-url"))))
		// The status of this generation is written after the reconcile's
		// last apply, so the StatefulSet read now is what it left.
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(sts), sts)).To(Succeed())
		Expect(sts.Spec.Template.Annotations[v1alpha1.AnnotationConfigHash]).To(Equal(hash))
		Expect(sts.Spec.Template.Spec.Containers[0].Args).NotTo(ContainElement(ContainSubstring(codexconfig.ModelGatewayProvider)))

		By("a new harness with the field gets no workload at all")
		fresh := withModelGateway(managedHarness(ns, "fresh", 1))
		Expect(k8sClient.Create(ctx, fresh)).To(Succeed())
		Eventually(statusOf(fresh)).Should(haveCondition(v1alpha1.HarnessConditionReady, "False/ModelGatewayNotConfigured"))
		for _, obj := range []client.Object{&appsv1.StatefulSet{}, &networkingv1.NetworkPolicy{}, &corev1.Secret{}} {
			name := objects.WorkloadName(fresh)
			if _, ok := obj.(*corev1.Secret); ok {
				name = objects.TokenSecretName(fresh)
			}
			err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj)
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s: %v", obj, name, err)
		}
	})

	Context("on a manager with --model-gateway-url and --model-gateway-ca-secret", func() {
		var caSecret *corev1.Secret
		BeforeEach(func() {
			err := k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}})
			if !apierrors.IsAlreadyExists(err) {
				Expect(err).NotTo(HaveOccurred())
			}
			caSecret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: suiteGatewayCASecret},
				Data: map[string][]byte{ModelGatewayCAKey: suiteCA(), "ca.key": []byte("never copied")}}
			Expect(k8sClient.Create(ctx, caSecret)).To(Succeed())
			DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, caSecret))).To(Succeed()) })
		})

		It("renders the credential-less gateway provider, its CA and the narrowed egress, and rolls the pods when the field or the CA changes", func() {
			ns := newNamespace()
			h := managedHarness(ns, "codex", 1)
			h.Labels = map[string]string{gatewayManagerLabel: "true"}
			h.Spec.AppServer.Credentials = []v1alpha1.AppServerCredential{{Name: "OPENAI_API_KEY", Mount: v1alpha1.CredentialMountEnv,
				SecretKeyRef: v1alpha1.SecretKeyReference{Name: "codex-creds", Key: "api-key"}}}
			Expect(k8sClient.Create(ctx, h)).To(Succeed())
			sts := waitStatefulSet(h)
			before := sts.Spec.Template.Annotations[v1alpha1.AnnotationConfigHash]
			np := &networkingv1.NetworkPolicy{}
			Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: objects.WorkloadName(h)}, np)).To(Succeed())
			Expect(np.Spec.Egress).To(HaveLen(2), "control: today's policy, the DNS and the public internet")
			Expect(np.Spec.Egress[1].To[0].IPBlock).NotTo(BeNil())

			By("turning the field on rolls the pods onto the gateway's provider")
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(h), h)).To(Succeed())
			withModelGateway(h)
			Expect(k8sClient.Update(ctx, h)).To(Succeed())
			Eventually(func() string {
				Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(sts), sts)).To(Succeed())
				return sts.Spec.Template.Annotations[v1alpha1.AnnotationConfigHash]
			}).ShouldNot(Equal(before))
			c := sts.Spec.Template.Spec.Containers[0]
			Expect(c.Args[len(c.Args)-4:]).To(Equal(codexconfig.ModelGatewayArgs(suiteGatewayURL + "/v1")))
			Expect(c.Env).To(ContainElement(corev1.EnvVar{Name: "CODEX_CA_CERTIFICATE", Value: "/var/run/harness-operator/model-gateway/ca.crt"}))
			for _, e := range c.Env {
				Expect(e.ValueFrom).To(BeNil(), "env %s from a Secret: the pods hold no provider credential", e.Name)
			}
			Expect(c.VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "model-gateway-ca", MountPath: ModelGatewayCADir, ReadOnly: true}))
			Expect(sts.Spec.Template.Spec.Volumes).To(ContainElement(corev1.Volume{Name: "model-gateway-ca", VolumeSource: corev1.VolumeSource{
				Secret: &corev1.SecretVolumeSource{SecretName: objects.TokenSecretName(h), DefaultMode: ptr.To[int32](0o444),
					Items: []corev1.KeyToPath{{Key: "model-gateway-ca.crt", Path: "ca.crt"}}}}}))
			for _, v := range sts.Spec.Template.Spec.Volumes {
				if v.Secret != nil {
					Expect(v.Secret.SecretName).To(Equal(objects.TokenSecretName(h)), "volume %s mounts another Secret", v.Name)
				}
			}
			token := &corev1.Secret{}
			Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: objects.TokenSecretName(h)}, token)).To(Succeed())
			Expect(token.Data["model-gateway-ca.crt"]).To(Equal(caSecret.Data[ModelGatewayCAKey]))
			Expect(token.Data).NotTo(HaveKey("ca.key"))
			Expect(token.Data).To(HaveLen(2))

			By("the egress: the DNS and the gateway's pods on its port, nothing else")
			Eventually(func() []networkingv1.NetworkPolicyEgressRule {
				Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(np), np)).To(Succeed())
				return np.Spec.Egress
			}).Should(HaveLen(2))
			Expect(np.Spec.Egress[0].To[0].PodSelector.MatchLabels).To(Equal(map[string]string{"k8s-app": "kube-dns"}))
			tcp := corev1.ProtocolTCP
			Expect(np.Spec.Egress[1]).To(Equal(networkingv1.NetworkPolicyEgressRule{
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: ptr.To(intstr.FromInt32(8443))}},
				To: []networkingv1.NetworkPolicyPeer{{
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": operatorNamespace}},
					PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
						"app.kubernetes.io/name": "harness-operator", "app.kubernetes.io/component": "model-gateway"}},
				}},
			}))

			By("a new CA rolls the pods and reaches the token Secret")
			credsBefore := sts.Spec.Template.Annotations[v1alpha1.AnnotationCredentialsHash]
			caSecret.Data[ModelGatewayCAKey] = suiteCA()
			Expect(k8sClient.Update(ctx, caSecret)).To(Succeed())
			Eventually(func() string {
				Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(sts), sts)).To(Succeed())
				return sts.Spec.Template.Annotations[v1alpha1.AnnotationCredentialsHash]
			}).ShouldNot(Equal(credsBefore))
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(token), token)).To(Succeed())
			Expect(token.Data["model-gateway-ca.crt"]).To(Equal(caSecret.Data[ModelGatewayCAKey]))

			By("the real app-server starts with the rendered arguments, and the harness is Ready")
			host := nextHost()
			startPodServer(codexBin, sts, host)
			createServerPod(sts, 0, host, "registry.example/codex@"+digest('a'))
			Eventually(statusOf(h)).Should(haveCondition(v1alpha1.HarnessConditionReady, "True/Ready"))
			Expect(cond(getHarness(h), v1alpha1.HarnessConditionLoggedIn)).To(Equal("True/ModelGateway"))

			By("without its CA Secret the harness fails closed, naming the flag")
			Expect(k8sClient.Delete(ctx, caSecret)).To(Succeed())
			Eventually(statusOf(h)).Should(haveCondition(v1alpha1.HarnessConditionReady, "False/ModelGatewayNotConfigured"))
			Expect(condMessage(getHarness(h), v1alpha1.HarnessConditionReady)).To(ContainSubstring("--model-gateway-ca-secret"))
		})
	})
})
