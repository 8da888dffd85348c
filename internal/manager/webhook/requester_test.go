package webhook_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// These specs send AgentHarnesses AS a user (an impersonating client), so
// the webhook sees the real requester and asks the real RBAC authorizer.
// Each attack runs with its control: the same request once the user holds
// the missing right. Creates are server-side dry runs: nothing is stored.
var _ = Describe("AgentHarness admission checks the requester's own rights", func() {
	var ns, user string
	BeforeEach(func() {
		ns = newNamespace(nil)
		user = "alice-" + rand.String(5)
		grant(ns, user, rbacv1.PolicyRule{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"agentharnesses"},
			Verbs: []string{"get", "create", "update"}})
	})
	getSecret := func(name string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{name}, Verbs: []string{"get"}}
	}
	createPods := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}}
	dryRunCreate := func(h *v1alpha1.AgentHarness) error {
		return as(user).Create(ctx, h, client.DryRunAll)
	}

	DescribeTable("refuses a harness that uses a right the requester lacks, naming the field and the permission; admits it once the right is granted",
		func(build func(ns string) *v1alpha1.AgentHarness, granted []rbacv1.PolicyRule, missing rbacv1.PolicyRule, field, message string) {
			grant(ns, user, granted...)
			expectFieldError(dryRunCreate(build(ns)), field, `user "`+user+`" may not `+message+` in namespace "`+ns+`"`)

			grant(ns, user, missing)
			Expect(dryRunCreate(build(ns))).To(Succeed(), "control: the same harness once the user holds the right")
		},
		Entry("external.tokenSecretRef to a Secret the user may not get", func(ns string) *v1alpha1.AgentHarness {
			return externalHarness(ns, "codex", "codex")
		}, nil, getSecret("codex-token"), "spec.external.tokenSecretRef.name", `get secrets "codex-token"`),
		Entry("a credential from a Secret the user may not get", func(ns string) *v1alpha1.AgentHarness {
			return managedHarness(ns)
		}, []rbacv1.PolicyRule{createPods}, getSecret("openai"), "spec.appServer.credentials[0].secretKeyRef.name", `get secrets "openai"`),
		Entry("an env valueFrom.secretKeyRef the user may not get", func(ns string) *v1alpha1.AgentHarness {
			h := managedHarness(ns)
			h.Spec.AppServer.Env = []corev1.EnvVar{{Name: "EXTRA", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "other"}, Key: "k"}}}}
			return h
		}, []rbacv1.PolicyRule{createPods, getSecret("openai")}, getSecret("other"), "spec.appServer.env[0].valueFrom.secretKeyRef.name", `get secrets "other"`),
		Entry("an env valueFrom.configMapKeyRef the user may not get", func(ns string) *v1alpha1.AgentHarness {
			h := managedHarness(ns)
			h.Spec.AppServer.Env = []corev1.EnvVar{{Name: "EXTRA", ValueFrom: &corev1.EnvVarSource{
				ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "k"}}}}
			return h
		}, []rbacv1.PolicyRule{createPods, getSecret("openai")},
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"settings"}, Verbs: []string{"get"}},
			"spec.appServer.env[0].valueFrom.configMapKeyRef.name", `get configmaps "settings"`),
		Entry("a managed harness from a user who may not create pods", func(ns string) *v1alpha1.AgentHarness {
			return managedHarness(ns)
		}, []rbacv1.PolicyRule{getSecret("openai")}, createPods, "spec.appServer", "create pods"),
		// The model gateway sends this Secret's key to modelGateway.baseURL,
		// which the requester writes.
		Entry("a model gateway credential from a Secret the user may not get", func(ns string) *v1alpha1.AgentHarness {
			h := managedHarness(ns)
			h.Spec.AppServer.Credentials = nil
			h.Spec.ModelGateway = &v1alpha1.ModelGateway{BaseURL: "https://models.example/v1",
				CredentialSecretRef: v1alpha1.SecretKeyReference{Name: "provider-key", Key: "api-key"}}
			return h
		}, []rbacv1.PolicyRule{createPods}, getSecret("provider-key"), "spec.modelGateway.credentialSecretRef.name", `get secrets "provider-key"`),
	)

	It("refuses an update that redirects a token the updater may not get, and admits one that leaves the spec alone", func() {
		h := externalHarness(ns, "codex", "codex")
		Expect(k8sClient.Create(ctx, h)).To(Succeed(), "created by an administrator")

		redirected := h.DeepCopy()
		redirected.Spec.External.URL = "wss://collector.example:443"
		expectFieldError(as(user).Update(ctx, redirected, client.DryRunAll), "spec.external.tokenSecretRef.name",
			`user "`+user+`" may not get secrets "codex-token" in namespace "`+ns+`"`)

		labelled := h.DeepCopy()
		labelled.Labels = map[string]string{"team": "a"}
		Expect(as(user).Update(ctx, labelled, client.DryRunAll)).To(Succeed(), "control: an update that leaves the spec alone")
	})

	It("refuses an AgentHarness outside the harness namespaces, naming the list; admits it inside", func() {
		outside := newOutsideNamespace()
		_, err := create(externalHarness(outside, "codex", "codex"))
		expectFieldError(err, "metadata.namespace", "only in its harness namespaces harness-000, ")
		expectFieldError(err, "metadata.namespace", `"`+outside+`" is not one of them`)
		_, err = create(externalHarness(ns, "codex", "codex"))
		Expect(err).NotTo(HaveOccurred(), "control: the same harness in a harness namespace")
	})

	It("refuses plain ws:// to loopback when the manager lacks --allow-insecure-loopback-external; admits wss://", func() {
		h := externalHarness(ns, "codex", "codex")
		h.Spec.External.URL = "ws://127.0.0.1:4500"
		_, err := create(h)
		expectFieldError(err, "spec.external.url", "only when the manager runs with --allow-insecure-loopback-external")
		h.Spec.External.URL = "wss://127.0.0.1:4500"
		_, err = create(h)
		Expect(err).NotTo(HaveOccurred(), "control: the same harness over wss://")
	})
})

// as returns a client that impersonates user (group system:authenticated).
func as(user string) client.Client {
	GinkgoHelper()
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	cl, err := client.New(c, client.Options{Scheme: k8sClient.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	return cl
}

// grant gives user the rules in namespace, with a Role and RoleBinding of their own.
func grant(namespace, user string, rules ...rbacv1.PolicyRule) {
	GinkgoHelper()
	if len(rules) == 0 {
		return
	}
	name := user + "-" + rand.String(5)
	Expect(k8sClient.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Rules: rules})).To(Succeed())
	Expect(k8sClient.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	})).To(Succeed())
}

func managedHarness(namespace string) *v1alpha1.AgentHarness {
	return &v1alpha1.AgentHarness{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "codex"},
		Spec: v1alpha1.AgentHarnessSpec{
			Adapter: v1alpha1.AdapterCodexAppServer,
			AppServer: &v1alpha1.AppServerWorkload{
				Image: "registry.example/codex@sha256:" + strings.Repeat("0", 64),
				Credentials: []v1alpha1.AppServerCredential{{Name: "OPENAI_API_KEY", Mount: v1alpha1.CredentialMountEnv,
					SecretKeyRef: v1alpha1.SecretKeyReference{Name: "openai", Key: "key"}}},
			},
		},
	}
}
