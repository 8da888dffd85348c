package agentharness

import (
	"fmt"
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/harness/objects"
	"github.com/openclaw/harness-operator/internal/testutil"
)

var _ = Describe("managed app-server workload", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	expectOwned := func(h *v1alpha1.AgentHarness, obj client.Object) {
		GinkgoHelper()
		refs := obj.GetOwnerReferences()
		Expect(refs).To(HaveLen(1), "%T %s", obj, obj.GetName())
		Expect(refs[0].UID).To(Equal(h.UID))
		Expect(refs[0].Kind).To(Equal("AgentHarness"))
		Expect(refs[0].Controller).To(Equal(ptr.To(true)))
		Expect(obj.GetLabels()).To(HaveKeyWithValue(v1alpha1.LabelHarness, h.Name))
		Expect(obj.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "harness-operator"))
	}

	It("creates the owned objects in the restricted shape", func() {
		h := managedHarness(ns, "codex", 2)
		h.Spec.AppServer.Env = []corev1.EnvVar{{Name: "RUST_LOG", Value: "info"}}
		h.Spec.AppServer.Credentials = []v1alpha1.AppServerCredential{
			{Name: "OPENAI_API_KEY", Mount: v1alpha1.CredentialMountEnv,
				SecretKeyRef: v1alpha1.SecretKeyReference{Name: "codex-creds", Key: "api-key"}},
			{Name: "auth.json", Mount: v1alpha1.CredentialMountHomeFile,
				SecretKeyRef: v1alpha1.SecretKeyReference{Name: "codex-creds", Key: "auth"}},
		}
		h.Spec.AppServer.Resources = &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
		}
		Expect(k8sClient.Create(ctx, h)).To(Succeed())

		sts := waitStatefulSet(h)
		Expect(sts.Name).To(Equal("codex-app-server"))
		expectOwned(h, sts)

		By("the token Secret: random, owned, mounted in the pod, never in its spec")
		secret := &corev1.Secret{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: objects.TokenSecretName(h)}, secret)).To(Succeed())
		expectOwned(h, secret)
		token := string(secret.Data[objects.TokenSecretKey])
		Expect(len(token)).To(BeNumerically(">=", 43))

		By("the StatefulSet")
		Expect(sts.Spec.Replicas).To(Equal(ptr.To(int32(2))))
		Expect(sts.Spec.ServiceName).To(Equal(objects.WorkloadName(h)))
		Expect(sts.Spec.PodManagementPolicy).To(Equal(appsv1.ParallelPodManagement))
		Expect(sts.Spec.PersistentVolumeClaimRetentionPolicy).To(Equal(&appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
			WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType, WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType}))
		Expect(sts.Spec.VolumeClaimTemplates).To(BeEmpty())
		Expect(sts.Spec.Selector.MatchLabels).To(Equal(map[string]string{v1alpha1.LabelHarness: "codex", "app.kubernetes.io/component": "app-server"}))

		tmpl := sts.Spec.Template
		Expect(tmpl.Labels).To(HaveKeyWithValue(v1alpha1.LabelHarness, "codex"))
		Expect(tmpl.Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationHarness, "codex"))
		Expect(tmpl.Annotations[v1alpha1.AnnotationConfigHash]).To(MatchRegexp(`^[0-9a-f]{32}$`))
		pod := tmpl.Spec
		Expect(pod.TerminationGracePeriodSeconds).To(Equal(ptr.To(int64(600))))
		Expect(pod.AutomountServiceAccountToken).To(Equal(ptr.To(false)))
		Expect(pod.SecurityContext.RunAsNonRoot).To(Equal(ptr.To(true)))
		Expect(pod.SecurityContext.SeccompProfile).To(Equal(&corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}))
		Expect(pod.Containers).To(HaveLen(1))
		c := pod.Containers[0]
		Expect(c.Name).To(Equal(objects.ContainerName))
		Expect(c.Image).To(Equal(h.Spec.AppServer.Image))
		Expect(c.ImagePullPolicy).To(Equal(corev1.PullIfNotPresent), "the default for a digest-pinned image")
		Expect(c.Command).To(Equal([]string{"codex"}))
		Expect(c.Args).To(Equal([]string{"app-server", "--listen", "ws://0.0.0.0:" + strconv.Itoa(int(appPort)),
			"--ws-auth", "signed-bearer-token", "--ws-shared-secret-file", "/var/run/harness-operator/ws-auth/token",
			"--ws-issuer", "harness-operator", "--ws-audience", "codex-app-server",
			"-c", "shell_environment_policy.ignore_default_excludes=false",
			"-c", `shell_environment_policy.exclude=["OPENAI_API_KEY"]`}))
		Expect(c.Args).NotTo(ContainElement(ContainSubstring(token)))
		Expect(c.SecurityContext).To(Equal(&corev1.SecurityContext{
			RunAsNonRoot:             ptr.To(true),
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}))
		Expect(c.Ports).To(ConsistOf(corev1.ContainerPort{Name: objects.PortName, ContainerPort: appPort, Protocol: corev1.ProtocolTCP}))
		Expect(c.ReadinessProbe.HTTPGet.Path).To(Equal("/readyz"))
		Expect(c.ReadinessProbe.HTTPGet.Port).To(Equal(intstr.FromString(objects.PortName)))
		Expect(c.LivenessProbe.HTTPGet.Path).To(Equal("/healthz"))
		Expect(c.StartupProbe.HTTPGet.Path).To(Equal("/healthz"))
		Expect(c.Resources.Requests.Cpu().String()).To(Equal("250m"))
		Expect(c.Resources.Limits.Memory().String()).To(Equal("1Gi"))
		Expect(c.Env).To(ContainElements(
			corev1.EnvVar{Name: "CODEX_HOME", Value: HomeMountPath},
			corev1.EnvVar{Name: "RUST_LOG", Value: "info"},
			corev1.EnvVar{Name: "OPENAI_API_KEY", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "codex-creds"}, Key: "api-key"}}},
		))
		Expect(c.VolumeMounts).To(ConsistOf(
			corev1.VolumeMount{Name: "codex-home", MountPath: HomeMountPath},
			corev1.VolumeMount{Name: "tmp", MountPath: "/tmp"},
			corev1.VolumeMount{Name: "ws-auth", MountPath: "/var/run/harness-operator/ws-auth", ReadOnly: true},
			corev1.VolumeMount{Name: "credential-1", MountPath: HomeMountPath + "/auth.json", SubPath: "auth.json", ReadOnly: true},
		))
		vols := map[string]corev1.VolumeSource{}
		for _, v := range pod.Volumes {
			vols[v.Name] = v.VolumeSource
		}
		Expect(vols).To(HaveLen(4))
		Expect(vols["ws-auth"].Secret.SecretName).To(Equal(objects.TokenSecretName(h)))
		Expect(vols["ws-auth"].Secret.Items).To(Equal([]corev1.KeyToPath{{Key: "token", Path: "token"}}))
		Expect(vols["codex-home"].EmptyDir).NotTo(BeNil())
		Expect(vols["tmp"].EmptyDir).NotTo(BeNil())
		Expect(vols["credential-1"].Secret.SecretName).To(Equal("codex-creds"))
		Expect(vols["credential-1"].Secret.Items).To(Equal([]corev1.KeyToPath{{Key: "auth", Path: "auth.json"}}))

		By("the headless Service")
		svc := &corev1.Service{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: objects.WorkloadName(h)}, svc)).To(Succeed())
		expectOwned(h, svc)
		Expect(svc.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone))
		Expect(svc.Spec.PublishNotReadyAddresses).To(BeTrue())
		Expect(svc.Spec.Selector).To(Equal(sts.Spec.Selector.MatchLabels))
		Expect(svc.Spec.Ports).To(HaveLen(1))
		Expect(svc.Spec.Ports[0].Port).To(Equal(appPort))
		Expect(svc.Spec.Ports[0].TargetPort).To(Equal(intstr.FromString(objects.PortName)))

		By("the NetworkPolicy: only the operator's manager and dispatcher reach the port; egress is restricted")
		np := &networkingv1.NetworkPolicy{}
		// Applied after the StatefulSet, in the same reconcile.
		Eventually(func() error {
			return k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: objects.WorkloadName(h)}, np)
		}).Should(Succeed())
		expectOwned(h, np)
		Expect(np.Spec.PodSelector.MatchLabels).To(Equal(sts.Spec.Selector.MatchLabels))
		Expect(np.Spec.PolicyTypes).To(Equal([]networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}))
		Expect(np.Spec.Egress).To(HaveLen(2), "the cluster DNS and the public internet (TestServerPodEgress)")
		tcp := corev1.ProtocolTCP
		port := intstr.FromInt32(appPort)
		Expect(np.Spec.Ingress).To(Equal([]networkingv1.NetworkPolicyIngressRule{{
			From: []networkingv1.NetworkPolicyPeer{{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": operatorNamespace}},
				PodSelector: &metav1.LabelSelector{
					MatchLabels: map[string]string{"app.kubernetes.io/name": "harness-operator"},
					MatchExpressions: []metav1.LabelSelectorRequirement{{
						Key: "app.kubernetes.io/component", Operator: metav1.LabelSelectorOpIn, Values: []string{"manager", "dispatcher"}}},
				},
			}},
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}},
		}}))

		By("the PodDisruptionBudget")
		pdb := &policyv1.PodDisruptionBudget{}
		// Applied after the StatefulSet, in the same reconcile.
		Eventually(func() error {
			return k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: objects.WorkloadName(h)}, pdb)
		}).Should(Succeed())
		expectOwned(h, pdb)
		Expect(pdb.Spec.MaxUnavailable).To(Equal(ptr.To(intstr.FromInt32(1))))
		Expect(pdb.Spec.Selector.MatchLabels).To(Equal(sts.Spec.Selector.MatchLabels))
		Expect(pdb.Spec.UnhealthyPodEvictionPolicy).To(Equal(ptr.To(policyv1.AlwaysAllow)))

		By("the status before any pod: pending, not ready")
		Eventually(statusOf(h)).Should(And(
			haveCondition(v1alpha1.HarnessConditionVersionSupported, "Unknown/HandshakePending"),
			haveCondition(v1alpha1.HarnessConditionWorkloadReady, "False/NoReadyPods"),
			haveCondition(v1alpha1.HarnessConditionAttested, "Unknown/NoReadyPods"),
			haveCondition(v1alpha1.HarnessConditionReady, "False/WorkloadNotReady"),
		))
		got := getHarness(h)
		Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		Expect(got.Status.Servers).To(BeEmpty())
		Expect(got.Status.RuntimeArtifact).To(BeNil())

		By("a resync writes nothing: applies are no-ops and the status is unchanged")
		versions := func() map[string]string {
			out := map[string]string{}
			for _, obj := range []client.Object{&v1alpha1.AgentHarness{}, &appsv1.StatefulSet{}, &corev1.Service{},
				&corev1.Secret{}, &networkingv1.NetworkPolicy{}, &policyv1.PodDisruptionBudget{}} {
				name := objects.WorkloadName(h)
				switch obj.(type) {
				case *v1alpha1.AgentHarness:
					name = h.Name
				case *corev1.Secret:
					name = objects.TokenSecretName(h)
				}
				Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj)).To(Succeed())
				out[fmt.Sprintf("%T", obj)] = obj.GetResourceVersion()
			}
			return out
		}
		before, current := versions(), getHarness(h)
		calls.Reset()
		patch := client.MergeFrom(secret.DeepCopy())
		secret.Annotations = map[string]string{"test.harness.openclaw.dev/touched": "yes"} // reconciles the harness
		Expect(k8sClient.Patch(ctx, secret, patch)).To(Succeed())
		before[fmt.Sprintf("%T", secret)] = secret.ResourceVersion
		Eventually(func() error { return calls.ReconciledAt(current) }).Should(Succeed(),
			"the reconciler acted on the harness as it is")
		for _, r := range calls.Reconciles(testutil.Key(h)) {
			if r.Returned == "" || !r.Read(current) {
				continue
			}
			Expect(r.Writes).To(ConsistOf(
				"apply Secret "+ns+"/"+objects.TokenSecretName(h),
				"apply Service "+ns+"/"+objects.WorkloadName(h),
				"apply StatefulSet "+ns+"/"+objects.WorkloadName(h),
				"apply NetworkPolicy "+ns+"/"+objects.WorkloadName(h),
				"apply PodDisruptionBudget "+ns+"/"+objects.WorkloadName(h),
			), "a reconcile of an unchanged harness applies its objects and writes no status")
		}
		Expect(versions()).To(Equal(before), "the applies changed nothing")
	})

	It("rolls the pods when the spec changes, follows replicas and keeps the token", func() {
		h := managedHarness(ns, "roller", 1)
		Expect(k8sClient.Create(ctx, h)).To(Succeed())
		sts := waitStatefulSet(h)
		hash := sts.Spec.Template.Annotations[v1alpha1.AnnotationConfigHash]
		creds := sts.Spec.Template.Annotations[v1alpha1.AnnotationCredentialsHash]

		By("scaling: replicas follow the spec, the pods are not rolled")
		patch := client.MergeFrom(h.DeepCopy())
		h.Spec.AppServer.Replicas = ptr.To(int32(3))
		Expect(k8sClient.Patch(ctx, h, patch)).To(Succeed())
		Eventually(func() *int32 { return waitStatefulSet(h).Spec.Replicas }).Should(Equal(ptr.To(int32(3))))
		sts = waitStatefulSet(h)
		Expect(sts.Spec.Template.Annotations[v1alpha1.AnnotationConfigHash]).To(Equal(hash))
		Expect(sts.Spec.Template.Annotations[v1alpha1.AnnotationCredentialsHash]).To(Equal(creds), "the token is kept")

		By("a spec change of the pod rolls the pods")
		patch = client.MergeFrom(h.DeepCopy())
		h.Spec.AppServer.Env = []corev1.EnvVar{{Name: "RUST_LOG", Value: "debug"}}
		Expect(k8sClient.Patch(ctx, h, patch)).To(Succeed())
		Eventually(func() string {
			return waitStatefulSet(h).Spec.Template.Annotations[v1alpha1.AnnotationConfigHash]
		}).
			ShouldNot(Equal(hash))

		By("the pull policy is the spec's (Never: the node must hold the image)")
		patch = client.MergeFrom(h.DeepCopy())
		h.Spec.AppServer.ImagePullPolicy = corev1.PullNever
		Expect(k8sClient.Patch(ctx, h, patch)).To(Succeed())
		Eventually(func() corev1.PullPolicy { return waitStatefulSet(h).Spec.Template.Spec.Containers[0].ImagePullPolicy }).
			Should(Equal(corev1.PullNever))

		By("command and args override the defaults")
		patch = client.MergeFrom(h.DeepCopy())
		h.Spec.AppServer.Command = []string{"/opt/codex/bin/codex"}
		h.Spec.AppServer.Args = []string{"app-server", "--listen", "ws://0.0.0.0:$(HARNESS_APP_SERVER_PORT)",
			"--ws-auth", "signed-bearer-token", "--ws-shared-secret-file", "$(HARNESS_WS_SHARED_SECRET_FILE)",
			"--ws-issuer", "$(HARNESS_WS_ISSUER)", "--ws-audience", "$(HARNESS_WS_AUDIENCE)"}
		Expect(k8sClient.Patch(ctx, h, patch)).To(Succeed())
		Eventually(func() []string { return waitStatefulSet(h).Spec.Template.Spec.Containers[0].Command }).
			Should(Equal([]string{"/opt/codex/bin/codex"}))
		c := waitStatefulSet(h).Spec.Template.Spec.Containers[0]
		Expect(c.Args).To(Equal(h.Spec.AppServer.Args))
		Expect(c.Env).To(ContainElements(
			corev1.EnvVar{Name: EnvPort, Value: strconv.Itoa(int(appPort))},
			corev1.EnvVar{Name: EnvSharedSecretFile, Value: "/var/run/harness-operator/ws-auth/token"},
			corev1.EnvVar{Name: EnvIssuer, Value: "harness-operator"},
			corev1.EnvVar{Name: EnvAudience, Value: "codex-app-server"},
		))
	})

	It("gives each replica a claim when storage is set, and replaces the StatefulSet when storage changes", func() {
		h := managedHarness(ns, "stored", 2)
		h.Spec.AppServer.Storage = &v1alpha1.AppServerStorage{Size: resource.MustParse("1Gi"), StorageClassName: ptr.To("fast")}
		Expect(k8sClient.Create(ctx, h)).To(Succeed())
		sts := waitStatefulSet(h)
		Expect(sts.Spec.VolumeClaimTemplates).To(HaveLen(1))
		vct := sts.Spec.VolumeClaimTemplates[0]
		Expect(vct.Name).To(Equal("codex-home"))
		Expect(vct.Spec.AccessModes).To(Equal([]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}))
		Expect(vct.Spec.Resources.Requests.Storage().String()).To(Equal("1Gi"))
		Expect(vct.Spec.StorageClassName).To(Equal(ptr.To("fast")))
		Expect(sts.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled).To(Equal(appsv1.RetainPersistentVolumeClaimRetentionPolicyType))
		Expect(sts.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted).To(Equal(appsv1.DeletePersistentVolumeClaimRetentionPolicyType))
		for _, v := range sts.Spec.Template.Spec.Volumes {
			Expect(v.Name).NotTo(Equal("codex-home"), "the home is the claim, not an emptyDir")
		}
		Expect(sts.Spec.Template.Spec.Containers[0].VolumeMounts).To(ContainElement(
			corev1.VolumeMount{Name: "codex-home", MountPath: HomeMountPath}))

		By("a new size: the StatefulSet is deleted with its pods orphaned, then recreated")
		patch := client.MergeFrom(h.DeepCopy())
		h.Spec.AppServer.Storage.Size = resource.MustParse("2Gi")
		Expect(k8sClient.Patch(ctx, h, patch)).To(Succeed())
		Eventually(func() []string { return waitStatefulSet(h).Finalizers }).Should(ContainElement(metav1.FinalizerOrphanDependents))
		old := waitStatefulSet(h)
		Expect(old.DeletionTimestamp).NotTo(BeNil())
		// envtest runs no garbage collector: finish the orphaning as it would.
		old.Finalizers = nil
		Expect(k8sClient.Update(ctx, old)).To(Succeed())
		Eventually(func() string {
			s := waitStatefulSet(h)
			if s.UID == old.UID || len(s.Spec.VolumeClaimTemplates) != 1 {
				return ""
			}
			return s.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String()
		}).Should(Equal("2Gi"))
	})
})
