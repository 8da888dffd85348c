package webhook_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

var _ = Describe("AgentHarness admission", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace(nil) })

	Describe("defaulting (docs/api.md: kubectl get -o yaml shows the truth)", func() {
		It("defaults harnessId to metadata.name and writes the codex-app-server support defaults and native tools", func() {
			h := externalHarness(ns, "codex", "")
			_, err := create(h)
			Expect(err).NotTo(HaveOccurred())
			Expect(h.Spec.HarnessID).To(Equal("codex"))
			Expect(h.Spec.Support).NotTo(BeNil())
			Expect(h.Spec.Support.Providers).To(Equal([]v1alpha1.ProviderID{"codex", "openai"}))
			Expect(h.Spec.Support.Priority).To(Equal(ptr.To[int32](100)))
			Expect(h.Spec.Support.RequestTransportOverrides).To(Equal(v1alpha1.RequestTransportOverridesUnsupportedWithFallback))
			Expect(h.Spec.Support.RoutePolicy).To(Equal(v1alpha1.RoutePolicyMustListHarness))
			Expect(h.Spec.Support.NativeProviders).To(Equal([]v1alpha1.ProviderID{"codex"}))
			Expect(h.Spec.Support.PreparedAuth.SubscriptionModes).To(Equal([]string{"oauth", "token"}))
			Expect(h.Spec.Support.PreparedAuth.APIKeyModes).To(Equal([]string{"api-key", "api_key"}))
			Expect(h.Spec.ConversationToolPolicyNativeTools).To(Equal([]v1alpha1.ToolID{"exec", "process", "read", "write", "edit", "apply_patch"}))
			Expect(h.Spec.ConversationToolPolicySupport).To(BeEmpty(), "never Exact by default")
		})

		It("keeps a written support block as the declaration", func() {
			h := externalHarness(ns, "codex", "codex")
			h.Spec.Support = &v1alpha1.HarnessSupport{Providers: []v1alpha1.ProviderID{"openai"}, Priority: ptr.To[int32](7)}
			_, err := create(h)
			Expect(err).NotTo(HaveOccurred())
			Expect(h.Spec.Support.Providers).To(Equal([]v1alpha1.ProviderID{"openai"}))
			Expect(h.Spec.Support.Priority).To(Equal(ptr.To[int32](7)))
			Expect(h.Spec.Support.PreparedAuth).To(BeNil())
		})

		It("normalizes tool and provider spellings, with a warning each", func() {
			h := externalHarness(ns, "codex", "codex")
			h.Spec.ConversationToolPolicyNativeTools = []v1alpha1.ToolID{"bash", "read"}
			h.Spec.AutoSelection = &v1alpha1.AutoSelection{Mode: v1alpha1.AutoSelectionListed, Providers: []v1alpha1.ProviderID{"OpenAI"}}
			warnings, err := create(h)
			Expect(err).NotTo(HaveOccurred())
			Expect(h.Spec.ConversationToolPolicyNativeTools).To(Equal([]v1alpha1.ToolID{"exec", "read"}))
			Expect(h.Spec.AutoSelection.Providers).To(Equal([]v1alpha1.ProviderID{"openai"}))
			expectWarning(warnings, `spec.conversationToolPolicyNativeTools[0]: tool "bash" written as "exec"`)
			expectWarning(warnings, `spec.autoSelection.providers[0]: provider "OpenAI" written as "openai"`)
		})
	})

	DescribeTable("refuses, naming the field",
		func(build func(ns string) *v1alpha1.AgentHarness, field, message string) {
			_, err := create(build(ns))
			expectFieldError(err, field, message)
		},
		Entry("seed: safe-deny tools are known core tool ids (unknown name)", func(ns string) *v1alpha1.AgentHarness {
			h := externalHarness(ns, "h-"+rand.String(5), "codex")
			h.Spec.ConversationToolPolicySupport = v1alpha1.ToolPolicySupportExact
			h.Spec.ConversationToolPolicySafeDenyTools = []v1alpha1.ToolID{"exec", "rm_rf"}
			return h
		}, "spec.conversationToolPolicySafeDenyTools[1]", "rm_rf"),
		Entry("seed: native tools are known core tool ids (unknown name)", func(ns string) *v1alpha1.AgentHarness {
			h := externalHarness(ns, "h-"+rand.String(5), "codex")
			h.Spec.ConversationToolPolicyNativeTools = []v1alpha1.ToolID{"shell"}
			return h
		}, "spec.conversationToolPolicyNativeTools[0]", "shell"),
		Entry("seed: groups are not canonical tool ids", func(ns string) *v1alpha1.AgentHarness {
			h := externalHarness(ns, "h-"+rand.String(5), "codex")
			h.Spec.ConversationToolPolicySupport = v1alpha1.ToolPolicySupportExact
			h.Spec.ConversationToolPolicySafeDenyTools = []v1alpha1.ToolID{"group:fs"}
			return h
		}, "spec.conversationToolPolicySafeDenyTools[0]", "canonical core tool id"),
		Entry("duplicates after normalization are refused", func(ns string) *v1alpha1.AgentHarness {
			h := externalHarness(ns, "h-"+rand.String(5), "codex")
			h.Spec.ConversationToolPolicyNativeTools = []v1alpha1.ToolID{"exec", "bash"}
			return h
		}, "spec.conversationToolPolicyNativeTools[1]", "Duplicate value"),
		Entry("minVersion can raise the codex-app-server floor, never lower it", func(ns string) *v1alpha1.AgentHarness {
			h := externalHarness(ns, "h-"+rand.String(5), "codex")
			h.Spec.MinVersion = "0.148.0"
			return h
		}, "spec.minVersion", "must not be below the codex-app-server floor 0.149.0"),
		Entry("a prerelease of the floor is below it", func(ns string) *v1alpha1.AgentHarness {
			h := externalHarness(ns, "h-"+rand.String(5), "codex")
			h.Spec.MinVersion = "0.149.0-alpha.1"
			return h
		}, "spec.minVersion", "must not be below the codex-app-server floor"),
		Entry("authBootstrap Host is refused for codex-app-server", func(ns string) *v1alpha1.AgentHarness {
			h := externalHarness(ns, "h-"+rand.String(5), "codex")
			h.Spec.AuthBootstrap = v1alpha1.AuthBootstrapHost
			return h
		}, "spec.authBootstrap", `Unsupported value: "Host"`),
		// A line break would add a header of the author's own to the model
		// gateway's upstream request; the control is the same harness
		// admitted without it (the gateway entries of the requester specs).
		Entry("a model gateway header value with a line break", func(ns string) *v1alpha1.AgentHarness {
			h := managedHarness(ns)
			h.Spec.AppServer.Credentials = nil
			h.Spec.ModelGateway = &v1alpha1.ModelGateway{BaseURL: "https://models.example/v1",
				CredentialSecretRef: v1alpha1.SecretKeyReference{Name: "provider-key", Key: "api-key"},
				Headers:             map[string]string{"X-Team": "a\r\nX-Injected: 1", "X-Fine": "b\tc"}}
			return h
		}, "spec.modelGateway.headers[X-Team]", "must not hold control characters"),
	)

	Describe("harness ids are unique among the harnesses one namespace can see", func() {
		It("refuses a second id in the same namespace, naming the other object", func() {
			_, err := create(externalHarness(ns, "first", "codex"))
			Expect(err).NotTo(HaveOccurred())
			_, err = create(externalHarness(ns, "second", "codex"))
			expectFieldError(err, "spec.harnessId", "already declared by AgentHarness "+ns+"/first")
		})

		It("refuses an id shared with every namespace (from: All) that a namespace already sees", func() {
			other := newNamespace(accepting(nil, ns))
			_, err := create(externalHarness(other, "local", "shared-id"))
			Expect(err).NotTo(HaveOccurred())
			h := externalHarness(ns, "everywhere", "shared-id")
			h.Spec.AllowedNamespaces = &v1alpha1.AllowedNamespaces{From: v1alpha1.NamespacesFromAll}
			_, err = create(h)
			expectFieldError(err, "spec.harnessId", "already declared by AgentHarness "+other+"/local")
		})

		It("refuses a selector that reaches a namespace where the id is taken", func() {
			team := newNamespace(accepting(map[string]string{"team": "a"}, ns))
			_, err := create(externalHarness(team, "local", "team-codex"))
			Expect(err).NotTo(HaveOccurred())
			h := externalHarness(ns, "for-team-a", "team-codex")
			h.Spec.AllowedNamespaces = &v1alpha1.AllowedNamespaces{From: v1alpha1.NamespacesFromSelector,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}}
			_, err = create(h)
			expectFieldError(err, "spec.harnessId", "already declared by AgentHarness "+team+"/local")
		})

		It("admits an id shared with every namespace (from: All) when the namespace that has it did not consent", func() {
			other := newNamespace(nil)
			_, err := create(externalHarness(other, "local", "shared-id"))
			Expect(err).NotTo(HaveOccurred())
			h := externalHarness(ns, "everywhere", "shared-id")
			h.Spec.AllowedNamespaces = &v1alpha1.AllowedNamespaces{From: v1alpha1.NamespacesFromAll}
			_, err = create(h)
			Expect(err).NotTo(HaveOccurred())
		})

		It("admits exactly one of several creates of one id sent at once (the webhook reads its cache)", func() {
			const racing = 8
			errs := make(chan error, racing)
			for i := range racing {
				go func() {
					defer GinkgoRecover()
					_, err := create(externalHarness(ns, fmt.Sprintf("racer-%d", i), "raced-id"))
					errs <- err
				}()
			}
			admitted := 0
			for range racing {
				if err := <-errs; err == nil {
					admitted++
				} else {
					expectFieldError(err, "spec.harnessId", "already declared by AgentHarness "+ns+"/racer-")
				}
			}
			Expect(admitted).To(Equal(1))
		})

		It("admits the same id in namespaces no session can see together", func() {
			other := newNamespace(nil)
			_, err := create(externalHarness(ns, "codex", "codex"))
			Expect(err).NotTo(HaveOccurred())
			_, err = create(externalHarness(other, "codex", "codex"))
			Expect(err).NotTo(HaveOccurred())
		})
	})

	Describe("warnings for what is allowed but risky", func() {
		It("warns that from: All makes a replica shared across trust domains", func() {
			h := externalHarness(ns, "all", "all-"+rand.String(5))
			h.Spec.AllowedNamespaces = &v1alpha1.AllowedNamespaces{From: v1alpha1.NamespacesFromAll}
			warnings, err := create(h)
			Expect(err).NotTo(HaveOccurred())
			expectWarning(warnings, "a replica is one trust domain")
		})

		It("warns that implicit Codex looks for the id codex when no policy names another id", func() {
			warnings, err := create(externalHarness(ns, "pool", "codex-pool-"+rand.String(5)))
			Expect(err).NotTo(HaveOccurred())
			expectWarning(warnings, `implicit Codex selection for OpenAI looks for the id "codex"`)
		})

		It("does not warn about implicit Codex once a policy names the id, even one this server admitted a moment ago", func() {
			id := "codex-named-" + rand.String(5)
			mustCreate(providerPolicy("names-"+id, uniqueProvider(), v1alpha1.RuntimeID(id), ""))
			warnings, err := create(externalHarness(ns, "named", id))
			Expect(err).NotTo(HaveOccurred())
			for _, w := range warnings {
				Expect(w).NotTo(ContainSubstring("implicit Codex selection"), "a policy names %q", id)
			}
		})

		It("warns that Exact cannot be kept by codex-app-server for every model (contract rule 6)", func() {
			h := externalHarness(ns, "codex", "codex")
			h.Spec.ConversationToolPolicySupport = v1alpha1.ToolPolicySupportExact
			warnings, err := create(h)
			Expect(err).NotTo(HaveOccurred())
			expectWarning(warnings, "ToolPolicyUnenforceable")
		})

		It("warns when a written support block claims more than the adapter's defaults", func() {
			h := externalHarness(ns, "codex", "codex")
			h.Spec.Support = &v1alpha1.HarnessSupport{
				Providers:                 []v1alpha1.ProviderID{"openai", "anthropic"},
				RequestTransportOverrides: v1alpha1.RequestTransportOverridesSupported,
				RoutePolicy:               v1alpha1.RoutePolicyAny,
			}
			warnings, err := create(h)
			Expect(err).NotTo(HaveOccurred())
			expectWarning(warnings, `spec.support claims more than the codex-app-server adapter's defaults: provider "anthropic", requestTransportOverrides: Supported, routePolicy: Any`)
		})
	})
})
