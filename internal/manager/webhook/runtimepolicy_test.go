package webhook_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

func providerPolicy(name string, provider v1alpha1.ProviderID, runtime v1alpha1.RuntimeID, overrides v1alpha1.SessionOverridePolicy) *v1alpha1.RuntimePolicy {
	return &v1alpha1.RuntimePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.RuntimePolicySpec{
			Providers:        []v1alpha1.ProviderRuntimePolicy{{Provider: provider, Runtime: runtime}},
			SessionOverrides: overrides,
		},
	}
}

// mustCreate creates obj and deletes it when the spec ends (policies are
// cluster-wide and would leak into other specs).
func mustCreate(obj client.Object) []string {
	GinkgoHelper()
	warnings, err := create(obj)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, obj))).To(Succeed()) })
	return warnings
}

// uniqueProvider keeps specs' cluster-wide policies apart.
func uniqueProvider() v1alpha1.ProviderID { return v1alpha1.ProviderID("acme-" + rand.String(6)) }

var _ = Describe("RuntimePolicy admission", func() {
	It("writes runtime ids normalized and providers in lowercase, with a warning each", func() {
		p := &v1alpha1.RuntimePolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "aliases-" + rand.String(6)},
			Spec: v1alpha1.RuntimePolicySpec{
				Providers: []v1alpha1.ProviderRuntimePolicy{{Provider: "Google", Runtime: "pi"}},
				Models:    []v1alpha1.ModelRuntimePolicy{{Ref: "OpenAI/gpt-5.5", Runtime: "codex-app-server"}},
				Agents:    []v1alpha1.AgentRuntimePolicy{{AgentID: "main", Models: []v1alpha1.ModelRuntimePolicy{{Ref: "xai/grok-5", Runtime: "default"}}}},
			},
		}
		warnings := mustCreate(p)
		Expect(p.Spec.Providers[0].Provider).To(Equal(v1alpha1.ProviderID("google")))
		Expect(p.Spec.Providers[0].Runtime).To(Equal(v1alpha1.RuntimeOpenClaw))
		Expect(p.Spec.Models[0].Ref).To(Equal("openai/gpt-5.5"))
		Expect(p.Spec.Models[0].Runtime).To(Equal(v1alpha1.RuntimeCodex))
		Expect(p.Spec.Agents[0].Models[0].Runtime).To(Equal(v1alpha1.RuntimeAuto))
		expectWarning(warnings, `spec.providers[0].runtime: runtime "pi" written as "openclaw"`)
		expectWarning(warnings, `spec.providers[0].provider: provider "Google" written as "google"`)
		expectWarning(warnings, `spec.models[0].ref: "OpenAI/gpt-5.5" written as "openai/gpt-5.5"`)
		expectWarning(warnings, `spec.models[0].runtime: runtime "codex-app-server" written as "codex"`)
		expectWarning(warnings, `spec.agents[0].models[0].runtime: runtime "default" written as "auto"`)
	})

	Describe("a Deny policy enforces over overlapping namespaces", func() {
		var provider v1alpha1.ProviderID
		var deny *v1alpha1.RuntimePolicy
		BeforeEach(func() {
			provider = uniqueProvider()
			deny = providerPolicy("deny-"+rand.String(6), provider, "codex", v1alpha1.SessionOverridesDeny)
			mustCreate(deny)
		})

		DescribeTable("refuses a new entry that contradicts it, naming the entry and the policy",
			func(mutate func(p *v1alpha1.RuntimePolicy, provider v1alpha1.ProviderID), field string) {
				p := &v1alpha1.RuntimePolicy{ObjectMeta: metav1.ObjectMeta{Name: "contra-" + rand.String(6)}}
				mutate(p, provider)
				_, err := create(p)
				expectFieldError(err, field, `contradicts RuntimePolicy "`+deny.Name+`" (sessionOverrides: Deny)`)
			},
			Entry("a provider-wide runtime", func(p *v1alpha1.RuntimePolicy, provider v1alpha1.ProviderID) {
				p.Spec.Providers = []v1alpha1.ProviderRuntimePolicy{{Provider: provider, Runtime: "openclaw"}}
			}, "spec.providers[0].runtime"),
			Entry("a provider catalog row", func(p *v1alpha1.RuntimePolicy, provider v1alpha1.ProviderID) {
				p.Spec.Providers = []v1alpha1.ProviderRuntimePolicy{{Provider: provider, Models: []v1alpha1.ProviderModelRuntime{{ID: "m-1", Runtime: "openclaw"}}}}
			}, "spec.providers[0].models[0].runtime"),
			Entry("an exact model ref", func(p *v1alpha1.RuntimePolicy, provider v1alpha1.ProviderID) {
				p.Spec.Models = []v1alpha1.ModelRuntimePolicy{{Ref: string(provider) + "/m-1", Runtime: "openclaw"}}
			}, "spec.models[0].runtime"),
			Entry("a provider/* ref", func(p *v1alpha1.RuntimePolicy, provider v1alpha1.ProviderID) {
				p.Spec.Models = []v1alpha1.ModelRuntimePolicy{{Ref: string(provider) + "/*", Runtime: "openclaw"}}
			}, "spec.models[0].runtime"),
			Entry("a per-agent entry", func(p *v1alpha1.RuntimePolicy, provider v1alpha1.ProviderID) {
				p.Spec.Agents = []v1alpha1.AgentRuntimePolicy{{AgentID: "main", Models: []v1alpha1.ModelRuntimePolicy{{Ref: string(provider) + "/m-1", Runtime: "openclaw"}}}}
			}, "spec.agents[0].models[0].runtime"),
		)

		It("admits an entry that agrees with it", func() {
			p := &v1alpha1.RuntimePolicy{ObjectMeta: metav1.ObjectMeta{Name: "agree-" + rand.String(6)},
				Spec: v1alpha1.RuntimePolicySpec{Models: []v1alpha1.ModelRuntimePolicy{{Ref: string(provider) + "/m-1", Runtime: "codex"}}}}
			mustCreate(p)
		})
	})

	It("refuses only over overlapping namespaces: a Deny policy for team=a does not bind team=b", func() {
		provider := uniqueProvider()
		newNamespace(map[string]string{"team": "a"})
		newNamespace(map[string]string{"team": "b"})
		deny := providerPolicy("deny-a-"+rand.String(6), provider, "codex", v1alpha1.SessionOverridesDeny)
		deny.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
		mustCreate(deny)

		forB := providerPolicy("b-"+rand.String(6), provider, "openclaw", v1alpha1.SessionOverridesAllow)
		forB.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}
		mustCreate(forB)

		forA := providerPolicy("a-"+rand.String(6), provider, "openclaw", v1alpha1.SessionOverridesAllow)
		forA.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
		_, err := create(forA)
		expectFieldError(err, "spec.providers[0].runtime", `contradicts RuntimePolicy "`+deny.Name+`"`)
	})

	It("admits two conflicting non-enforcing policies and warns that the older one wins", func() {
		provider := uniqueProvider()
		// Age is creationTimestamp (whole seconds), then name: names keep the
		// order when both are created within one second.
		older := providerPolicy("a-older-"+rand.String(6), provider, "codex", v1alpha1.SessionOverridesAllow)
		mustCreate(older)
		newer := providerPolicy("b-newer-"+rand.String(6), provider, "openclaw", v1alpha1.SessionOverridesAllow)
		warnings := mustCreate(newer)
		expectWarning(warnings, `conflicts with older RuntimePolicy "`+older.Name+`"`)
	})

	It("warns about a runtime id no visible AgentHarness declares (it fails closed at dispatch)", func() {
		p := providerPolicy("unresolved-"+rand.String(6), uniqueProvider(), "claude-agent", v1alpha1.SessionOverridesAllow)
		warnings := mustCreate(p)
		expectWarning(warnings, `runtime "claude-agent" names no AgentHarness visible to the namespaces this policy selects`)
	})

	It("does not warn about built-in runtimes and CLI backend aliases", func() {
		p := &v1alpha1.RuntimePolicy{ObjectMeta: metav1.ObjectMeta{Name: "builtin-" + rand.String(6)},
			Spec: v1alpha1.RuntimePolicySpec{Models: []v1alpha1.ModelRuntimePolicy{
				{Ref: "anthropic/claude-opus-5", Runtime: "claude-cli"}, {Ref: "gemini-3-pro", Runtime: "openclaw"}, {Ref: "grok-5", Runtime: "auto"},
			}}}
		warnings := mustCreate(p)
		Expect(warnings).To(BeEmpty())
	})

	It("warns when a new Deny policy contradicts existing sessions' overrides, naming them", func() {
		provider := uniqueProvider()
		ns := newNamespace(nil)
		s := session(ns, "override-openclaw", string(provider)+"/m-1")
		s.Spec.RuntimeOverride = "openclaw"
		mustCreate(s)
		warnings := mustCreate(providerPolicy("new-deny-"+rand.String(6), provider, "codex", v1alpha1.SessionOverridesDeny))
		expectWarning(warnings, "the runtimeOverride of 1 AgentSession(s) now contradicts this policy")
		expectWarning(warnings, ns+"/override-openclaw")
	})

	It("warns the same when an existing policy switches to Deny", func() {
		provider := uniqueProvider()
		ns := newNamespace(nil)
		s := session(ns, "override-openclaw", string(provider)+"/m-1")
		s.Spec.RuntimeOverride = "openclaw"
		mustCreate(s)
		p := providerPolicy("becomes-deny-"+rand.String(6), provider, "codex", v1alpha1.SessionOverridesAllow)
		mustCreate(p)
		p.Spec.SessionOverrides = v1alpha1.SessionOverridesDeny
		warnings, err := update(p)
		Expect(err).NotTo(HaveOccurred())
		expectWarning(warnings, ns+"/override-openclaw")
	})
})
