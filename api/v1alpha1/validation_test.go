package v1alpha1_test

import (
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// expectFieldError asserts err is an Invalid error with a cause on field whose
// message contains want: users must learn which field is wrong and why.
func expectFieldError(err error, field, want string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred(), "the API server accepted an invalid object")
	Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got %v", err)
	status, ok := err.(apierrors.APIStatus)
	Expect(ok).To(BeTrue())
	var causes []string
	for _, c := range status.Status().Details.Causes {
		causes = append(causes, fmt.Sprintf("%s: %s", c.Field, c.Message))
		if c.Field == field && strings.Contains(c.Message, want) {
			return
		}
	}
	Fail(fmt.Sprintf("no cause on field %q containing %q; causes:\n  %s", field, want, strings.Join(causes, "\n  ")))
}

func newNamespace() string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "t-" + rand.String(8)}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

var _ = Describe("single-object validation (CEL and schema)", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	harness := func(mutate func(h *v1alpha1.AgentHarness)) func() client.Object {
		return func() client.Object {
			h := validExternalHarness(ns, "h-"+rand.String(6))
			mutate(h)
			return h
		}
	}
	managed := func(mutate func(h *v1alpha1.AgentHarness)) func() client.Object {
		return func() client.Object {
			h := validManagedHarness(ns, "m-"+rand.String(6))
			mutate(h)
			return h
		}
	}
	policy := func(mutate func(p *v1alpha1.RuntimePolicy)) func() client.Object {
		return func() client.Object {
			p := validPolicy("p-" + rand.String(8))
			mutate(p)
			return p
		}
	}
	session := func(mutate func(s *v1alpha1.AgentSession)) func() client.Object {
		return func() client.Object {
			s := validSession(ns, "s-"+rand.String(6))
			mutate(s)
			return s
		}
	}

	It("accepts the valid fixtures the table below breaks", func() {
		for _, obj := range []client.Object{
			validExternalHarness(ns, "ok-external"), validManagedHarness(ns, "ok-managed"),
			validPolicy("ok-" + rand.String(8)), validSession(ns, "ok-session"),
			withURL(validExternalHarness(ns, "ok-wss"), "wss://codex.example:443/v1"),
			withURL(validExternalHarness(ns, "ok-ws-v6-loopback"), "ws://[::1]:4500"),
			func() client.Object {
				h := validExternalHarness(ns, "ok-mcp")
				h.Spec.MCP = &v1alpha1.HarnessMCP{AllowedURLPrefixes: []string{"https://mcp.example.com/tools/", "http://127.0.0.1:9/"}}
				return h
			}(),
			withModelGateway(validManagedHarness(ns, "ok-gateway"), "https://api.openai.com/v1"),
			func() client.Object {
				h := withModelGateway(validManagedHarness(ns, "ok-gateway-dev"), "http://127.0.0.1:9000/v1")
				h.Spec.ModelGateway.Headers = map[string]string{"OpenAI-Organization": "org-1", "x_custom": "v"}
				h.Spec.ModelGateway.QueryParams = map[string]string{"api-version": "2025-04-01-preview"}
				h.Spec.MCP = &v1alpha1.HarnessMCP{AllowedURLPrefixes: []string{"https://mcp.example.com/"}}
				return h
			}(),
			withModelGateway(validManagedHarness(ns, "ok-gateway-v6"), "http://[::1]:9000/v1"),
			func() client.Object {
				h := validExternalHarness(ns, "ok-delegates")
				h.Spec.Delegates = []v1alpha1.Delegate{
					{Kind: v1alpha1.DelegateServiceAccount, Namespace: "voice", Name: "transport"},
					{Kind: v1alpha1.DelegateUser, Name: "alice"}, {Kind: v1alpha1.DelegateGroup, Name: "voice-bots"},
				}
				return h
			}(),
		} {
			Expect(k8sClient.Create(ctx, obj)).To(Succeed(), "%T %s", obj, obj.GetName())
		}
	})

	DescribeTable("refuses an invalid object on create, naming the field",
		func(build func() client.Object, field, message string) {
			expectFieldError(k8sClient.Create(ctx, build()), field, message)
		},
		// AgentHarness identity.
		Entry("harnessId must be a lowercase id", harness(func(h *v1alpha1.AgentHarness) { h.Spec.HarnessID = "Codex_1" }),
			"spec.harnessId", "spec.harnessId must be a lowercase id"),
		Entry("harnessId openclaw is reserved for the embedded runtime", harness(func(h *v1alpha1.AgentHarness) { h.Spec.HarnessID = "openclaw" }),
			"spec.harnessId", "must not be a reserved runtime id"),
		Entry("harnessId pi (alias of openclaw) is reserved", harness(func(h *v1alpha1.AgentHarness) { h.Spec.HarnessID = "pi" }),
			"spec.harnessId", "must not be a reserved runtime id"),
		Entry("harnessId auto is reserved", harness(func(h *v1alpha1.AgentHarness) { h.Spec.HarnessID = "auto" }),
			"spec.harnessId", "must not be a reserved runtime id"),
		Entry("a defaulted harnessId from metadata.name openclaw is reserved", func() client.Object {
			h := validExternalHarness(ns, "openclaw")
			h.Spec.HarnessID = ""
			return h
		}, "spec.harnessId", "spec.harnessId defaults to metadata.name, which is a reserved runtime id"),
		Entry("a defaulted harnessId from a dotted metadata.name is not a harness id", func() client.Object {
			h := validExternalHarness(ns, "codex.v2")
			h.Spec.HarnessID = ""
			return h
		}, "spec.harnessId", "spec.harnessId defaults to metadata.name, which is not a valid harness id"),
		Entry("adapter is an enum", harness(func(h *v1alpha1.AgentHarness) { h.Spec.Adapter = "claude-agent" }),
			"spec.adapter", "Unsupported value"),
		// Workload: exactly one of appServer and external.
		Entry("appServer and external together are refused", harness(func(h *v1alpha1.AgentHarness) {
			h.Spec.AppServer = validManagedHarness(ns, "x").Spec.AppServer
		}), "spec", "exactly one of spec.appServer and spec.external must be set"),
		Entry("neither appServer nor external is refused", harness(func(h *v1alpha1.AgentHarness) { h.Spec.External = nil }),
			"spec", "exactly one of spec.appServer and spec.external must be set"),
		Entry("appServer.image must be pinned by digest", managed(func(h *v1alpha1.AgentHarness) {
			h.Spec.AppServer.Image = "registry.example/codex:0.169.0"
		}), "spec.appServer.image", "appServer.image must be pinned by digest"),
		Entry("appServer.image with a short digest is refused", managed(func(h *v1alpha1.AgentHarness) {
			h.Spec.AppServer.Image = "registry.example/codex@sha256:abc123"
		}), "spec.appServer.image", "appServer.image must be pinned by digest"),
		Entry("appServer.replicas is bounded", managed(func(h *v1alpha1.AgentHarness) { h.Spec.AppServer.Replicas = ptr.To[int32](-1) }),
			"spec.appServer.replicas", "should be greater than or equal to 0"),
		Entry("an Env credential needs an environment variable name", managed(func(h *v1alpha1.AgentHarness) {
			h.Spec.AppServer.Credentials[0].Name = "OPENAI-API-KEY"
		}), "spec.appServer.credentials[0]", "must be an environment variable name when mount is Env"),
		Entry("a HomeFile credential must be a plain file name", managed(func(h *v1alpha1.AgentHarness) {
			h.Spec.AppServer.Credentials[0].Mount = v1alpha1.CredentialMountHomeFile
			h.Spec.AppServer.Credentials[0].Name = "../auth.json"
		}), "spec.appServer.credentials[0]", "must be a plain file name"),
		Entry("an MCP URL prefix must end its host with a slash", harness(func(h *v1alpha1.AgentHarness) {
			h.Spec.MCP = &v1alpha1.HarnessMCP{AllowedURLPrefixes: []string{"https://mcp.example.com"}}
		}), "spec.mcp.allowedURLPrefixes", "host is followed by a '/'"),
		Entry("a ServiceAccount delegate names its namespace", harness(func(h *v1alpha1.AgentHarness) {
			h.Spec.Delegates = []v1alpha1.Delegate{{Kind: v1alpha1.DelegateServiceAccount, Name: "transport"}}
		}), "spec.delegates[0]", "namespace must be set for kind ServiceAccount"),
		Entry("a user delegate has no namespace", harness(func(h *v1alpha1.AgentHarness) {
			h.Spec.Delegates = []v1alpha1.Delegate{{Kind: v1alpha1.DelegateUser, Name: "alice", Namespace: "voice"}}
		}), "spec.delegates[0]", "and only then"),
		Entry("external.url must be ws:// or wss://", harness(func(h *v1alpha1.AgentHarness) { h.Spec.External.URL = "http://127.0.0.1:4500" }),
			"spec.external.url", "external.url must be a ws:// or wss:// URL"),
		// The control of the two below is the valid fixture (ws://127.0.0.1)
		// and the It above that accepts wss:// and a loopback [::1].
		Entry("external.url must not carry userinfo", harness(func(h *v1alpha1.AgentHarness) { h.Spec.External.URL = "wss://user:secret@codex.example:443/" }),
			"spec.external.url", "external.url must not carry userinfo"),
		Entry("external.url plain ws:// to a host that is not loopback is refused", harness(func(h *v1alpha1.AgentHarness) { h.Spec.External.URL = "ws://codex.example:4500" }),
			"spec.external.url", "external.url must be wss:// (plain ws:// only to a loopback host"),
		Entry("external.url plain ws:// to a name that merely starts like loopback is refused", harness(func(h *v1alpha1.AgentHarness) { h.Spec.External.URL = "ws://127.0.0.1.evil.example:4500" }),
			"spec.external.url", "external.url must be wss://"),
		// modelGateway: managed harnesses only, no credential in the pods.
		Entry("modelGateway requires appServer", harness(func(h *v1alpha1.AgentHarness) {
			h.Spec.ModelGateway = validManagedGateway("https://api.openai.com/v1")
		}), "spec", "spec.modelGateway requires spec.appServer"),
		Entry("modelGateway and appServer.credentials are exclusive", managed(func(h *v1alpha1.AgentHarness) {
			h.Spec.ModelGateway = validManagedGateway("https://api.openai.com/v1")
		}), "spec", "spec.modelGateway and spec.appServer.credentials are exclusive"),
		Entry("modelGateway and appServer.args are exclusive", managed(func(h *v1alpha1.AgentHarness) {
			withModelGateway(h, "https://api.openai.com/v1")
			h.Spec.AppServer.Args = []string{"app-server", "--listen", "ws://0.0.0.0:4500"}
		}), "spec", "spec.modelGateway and spec.appServer.args are exclusive"),
		Entry("modelGateway requires authBootstrap Harness", managed(func(h *v1alpha1.AgentHarness) {
			withModelGateway(h, "https://api.openai.com/v1")
			h.Spec.AuthBootstrap = v1alpha1.AuthBootstrapHost
		}), "spec", "spec.modelGateway requires spec.authBootstrap: Harness"),
		Entry("modelGateway.baseURL must be an http(s) URL", managed(func(h *v1alpha1.AgentHarness) {
			withModelGateway(h, "ftp://files.example/v1")
		}), "spec.modelGateway.baseURL", "spec.modelGateway.baseURL must be an http or https URL with a host"),
		Entry("modelGateway.baseURL needs a host", managed(func(h *v1alpha1.AgentHarness) {
			withModelGateway(h, "https:///v1")
		}), "spec.modelGateway.baseURL", "must be an http or https URL with a host"),
		Entry("modelGateway.baseURL plain http to a host that is not loopback is refused", managed(func(h *v1alpha1.AgentHarness) {
			withModelGateway(h, "http://api.openai.com/v1")
		}), "spec.modelGateway.baseURL", "spec.modelGateway.baseURL must be https://"),
		Entry("modelGateway.baseURL plain http to a name that merely starts like loopback is refused", managed(func(h *v1alpha1.AgentHarness) {
			withModelGateway(h, "http://127.0.0.1.evil.example/v1")
		}), "spec.modelGateway.baseURL", "spec.modelGateway.baseURL must be https://"),
		Entry("modelGateway.baseURL must not carry userinfo", managed(func(h *v1alpha1.AgentHarness) {
			withModelGateway(h, "https://user:sk-secret@api.openai.com/v1")
		}), "spec.modelGateway.baseURL", "must not carry userinfo"),
		Entry("modelGateway.baseURL has no query", managed(func(h *v1alpha1.AgentHarness) {
			withModelGateway(h, "https://api.openai.com/v1?api-key=sk-secret")
		}), "spec.modelGateway.baseURL", "must have no query or fragment"),
		Entry("modelGateway.headers must not set Authorization", managed(func(h *v1alpha1.AgentHarness) {
			withModelGateway(h, "https://api.openai.com/v1").Spec.ModelGateway.Headers = map[string]string{"authorization": "Bearer sk-secret"}
		}), "spec.modelGateway.headers", "spec.modelGateway.headers must not set Authorization"),
		Entry("modelGateway.headers must not set a hop-by-hop header", managed(func(h *v1alpha1.AgentHarness) {
			withModelGateway(h, "https://api.openai.com/v1").Spec.ModelGateway.Headers = map[string]string{"Upgrade": "websocket"}
		}), "spec.modelGateway.headers", "or a hop-by-hop header"),
		Entry("modelGateway.headers names are header names", managed(func(h *v1alpha1.AgentHarness) {
			withModelGateway(h, "https://api.openai.com/v1").Spec.ModelGateway.Headers = map[string]string{"X Injected: a": "v"}
		}), "spec.modelGateway.headers", "spec.modelGateway.headers names must be HTTP header names"),
		Entry("modelGateway.headers values are bounded", managed(func(h *v1alpha1.AgentHarness) {
			withModelGateway(h, "https://api.openai.com/v1").Spec.ModelGateway.Headers = map[string]string{"X-Team": strings.Repeat("a", 4097)}
		}), "spec.modelGateway.headers", "values must have at most 4096 characters"),
		Entry("modelGateway.queryParams names are not empty", managed(func(h *v1alpha1.AgentHarness) {
			withModelGateway(h, "https://api.openai.com/v1").Spec.ModelGateway.QueryParams = map[string]string{"": "x"}
		}), "spec.modelGateway.queryParams", "names must have 1 to 128 characters"),
		Entry("modelGateway.credentialSecretRef names a key", managed(func(h *v1alpha1.AgentHarness) {
			withModelGateway(h, "https://api.openai.com/v1").Spec.ModelGateway.CredentialSecretRef.Key = "a/b"
		}), "spec.modelGateway.credentialSecretRef.key", "should match"),
		// Version floor.
		Entry("minVersion must be a semantic version", harness(func(h *v1alpha1.AgentHarness) { h.Spec.MinVersion = "v0.170" }),
			"spec.minVersion", "spec.minVersion must be a semantic version"),
		// autoSelection.
		Entry("autoSelection.providers only with mode Listed", harness(func(h *v1alpha1.AgentHarness) {
			h.Spec.AutoSelection = &v1alpha1.AutoSelection{Mode: v1alpha1.AutoSelectionAllProviders, Providers: []v1alpha1.ProviderID{"openai"}}
		}), "spec.autoSelection", "autoSelection.providers may only be set when autoSelection.mode is Listed"),
		Entry("autoSelection mode Listed needs providers", harness(func(h *v1alpha1.AgentHarness) {
			h.Spec.AutoSelection = &v1alpha1.AutoSelection{Mode: v1alpha1.AutoSelectionListed}
		}), "spec.autoSelection", "must list at least one provider when autoSelection.mode is Listed"),
		// support.
		Entry("support.providers are lowercase provider ids", harness(func(h *v1alpha1.AgentHarness) {
			h.Spec.Support = &v1alpha1.HarnessSupport{Providers: []v1alpha1.ProviderID{"OpenAI"}}
		}), "spec.support.providers[0]", "provider id must be lowercase"),
		Entry("support.priority is bounded", harness(func(h *v1alpha1.AgentHarness) {
			h.Spec.Support = &v1alpha1.HarnessSupport{Priority: ptr.To[int32](5000)}
		}), "spec.support.priority", "should be less than or equal to 1000"),
		Entry("support.requestTransportOverrides is an enum", harness(func(h *v1alpha1.AgentHarness) {
			h.Spec.Support = &v1alpha1.HarnessSupport{RequestTransportOverrides: "Sometimes"}
		}), "spec.support.requestTransportOverrides", "Unsupported value"),
		// Tool policy.
		Entry("conversationToolPolicySafeDenyTools only with Exact", harness(func(h *v1alpha1.AgentHarness) {
			h.Spec.ConversationToolPolicySafeDenyTools = []v1alpha1.ToolID{"exec"}
		}), "spec", "spec.conversationToolPolicySafeDenyTools requires spec.conversationToolPolicySupport: Exact"),
		Entry("safe-deny tools are canonical tool ids, not groups", harness(func(h *v1alpha1.AgentHarness) {
			h.Spec.ConversationToolPolicySupport = v1alpha1.ToolPolicySupportExact
			h.Spec.ConversationToolPolicySafeDenyTools = []v1alpha1.ToolID{"group:fs"}
		}), "spec.conversationToolPolicySafeDenyTools[0]", "tool id must be a canonical core tool id"),
		Entry("native tools are canonical tool ids, not wildcards", harness(func(h *v1alpha1.AgentHarness) {
			h.Spec.ConversationToolPolicyNativeTools = []v1alpha1.ToolID{"*"}
		}), "spec.conversationToolPolicyNativeTools[0]", "tool id must be a canonical core tool id"),
		Entry("conversationToolPolicySupport is an enum", harness(func(h *v1alpha1.AgentHarness) {
			h.Spec.ConversationToolPolicySupport = "exact"
		}), "spec.conversationToolPolicySupport", "Unsupported value"),
		// allowedNamespaces.
		Entry("allowedNamespaces from Selector needs a selector", harness(func(h *v1alpha1.AgentHarness) {
			h.Spec.AllowedNamespaces = &v1alpha1.AllowedNamespaces{From: v1alpha1.NamespacesFromSelector}
		}), "spec.allowedNamespaces", "allowedNamespaces.selector must be set when allowedNamespaces.from is Selector"),
		Entry("allowedNamespaces selector only with from Selector", harness(func(h *v1alpha1.AgentHarness) {
			h.Spec.AllowedNamespaces = &v1alpha1.AllowedNamespaces{From: v1alpha1.NamespacesFromSame, Selector: &metav1.LabelSelector{}}
		}), "spec.allowedNamespaces", "allowedNamespaces.selector must be set when allowedNamespaces.from is Selector, and only then"),

		// RuntimePolicy: runtime ids in normalized form.
		Entry("provider runtime pi must be written openclaw", policy(func(p *v1alpha1.RuntimePolicy) { p.Spec.Providers[0].Runtime = "pi" }),
			"spec.providers[0].runtime", "runtime id must be in normalized form"),
		Entry("model runtime codex-app-server must be written codex", policy(func(p *v1alpha1.RuntimePolicy) {
			p.Spec.Models = []v1alpha1.ModelRuntimePolicy{{Ref: "openai/gpt-5.5", Runtime: "codex-app-server"}}
		}), "spec.models[0].runtime", "runtime id must be in normalized form"),
		Entry("runtime ids are lowercase", policy(func(p *v1alpha1.RuntimePolicy) { p.Spec.Providers[0].Runtime = "Codex" }),
			"spec.providers[0].runtime", "runtime id must be a lowercase id"),
		Entry("catalog row runtime default must be written auto", policy(func(p *v1alpha1.RuntimePolicy) {
			p.Spec.Providers[0].Models = []v1alpha1.ProviderModelRuntime{{ID: "gpt-5.5", Runtime: "default"}}
		}), "spec.providers[0].models[0].runtime", "runtime id must be in normalized form"),
		Entry("models[].ref must be provider/model, provider/* or a bare model", policy(func(p *v1alpha1.RuntimePolicy) {
			p.Spec.Models = []v1alpha1.ModelRuntimePolicy{{Ref: "openai/gpt*", Runtime: "codex"}}
		}), "spec.models[0].ref", "ref must be provider/model, provider/* or a bare model id"),
		Entry("models[].ref provider is lowercase", policy(func(p *v1alpha1.RuntimePolicy) {
			p.Spec.Models = []v1alpha1.ModelRuntimePolicy{{Ref: "OpenAI/gpt-5.5", Runtime: "codex"}}
		}), "spec.models[0].ref", "ref must be provider/model, provider/* or a bare model id"),
		Entry("catalog row ids are bare model ids", policy(func(p *v1alpha1.RuntimePolicy) {
			p.Spec.Providers[0].Models = []v1alpha1.ProviderModelRuntime{{ID: "openai/gpt-5.5", Runtime: "codex"}}
		}), "spec.providers[0].models[0].id", "models[].id must be a bare model id"),
		Entry("a provider entry must set runtime or models", policy(func(p *v1alpha1.RuntimePolicy) { p.Spec.Providers[0].Runtime = "" }),
			"spec.providers[0]", "providers[] entry must set runtime, models, or both"),
		Entry("a policy must set some entries", policy(func(p *v1alpha1.RuntimePolicy) { p.Spec.Providers = nil }),
			"spec", "spec must set at least one of providers, models and agents"),
		Entry("sessionOverrides is Allow or Deny", policy(func(p *v1alpha1.RuntimePolicy) { p.Spec.SessionOverrides = "Maybe" }),
			"spec.sessionOverrides", "Unsupported value"),
		Entry("an agent entry needs models", policy(func(p *v1alpha1.RuntimePolicy) {
			p.Spec.Agents = []v1alpha1.AgentRuntimePolicy{{AgentID: "main", Models: []v1alpha1.ModelRuntimePolicy{}}}
		}), "spec.agents[0].models", "should have at least 1 items"),

		// AgentSession.
		Entry("model must be provider/model", session(func(s *v1alpha1.AgentSession) { s.Spec.Model = "gpt-5.5" }),
			"spec.model", "spec.model must be provider/model"),
		Entry("runtimeOverride is a normalized runtime id", session(func(s *v1alpha1.AgentSession) { s.Spec.RuntimeOverride = "codex-app-server" }),
			"spec.runtimeOverride", "runtime id must be in normalized form"),
		Entry("modelSelectionLocked is Locked or Unlocked, not a bool", session(func(s *v1alpha1.AgentSession) { s.Spec.ModelSelectionLocked = "true" }),
			"spec.modelSelectionLocked", "Unsupported value"),
		Entry("sessionKey has no surrounding spaces", session(func(s *v1alpha1.AgentSession) { s.Spec.SessionKey = " agent:main:x" }),
			"spec.sessionKey", "spec.sessionKey must not have surrounding spaces or control characters"),
		Entry("resetGeneration is not negative", session(func(s *v1alpha1.AgentSession) { s.Spec.ResetGeneration = -1 }),
			"spec.resetGeneration", "should be greater than or equal to 0"),
	)

	DescribeTable("refuses an invalid AgentSession update, naming the field",
		func(mutate func(s *v1alpha1.AgentSession), field, message string) {
			s := validSession(ns, "u-"+rand.String(6))
			s.Spec.ResetGeneration = 3
			Expect(k8sClient.Create(ctx, s)).To(Succeed())
			mutate(s)
			expectFieldError(k8sClient.Update(ctx, s), field, message)
		},
		Entry("sessionId is immutable", func(s *v1alpha1.AgentSession) { s.Spec.SessionID = "other" },
			"spec.sessionId", "spec.sessionId is immutable"),
		Entry("sessionKey is immutable", func(s *v1alpha1.AgentSession) { s.Spec.SessionKey = "agent:main:other" },
			"spec.sessionKey", "spec.sessionKey is immutable"),
		Entry("agentId is immutable", func(s *v1alpha1.AgentSession) { s.Spec.AgentID = "other" },
			"spec.agentId", "spec.agentId is immutable"),
		Entry("resetGeneration never decreases", func(s *v1alpha1.AgentSession) { s.Spec.ResetGeneration = 2 },
			"spec.resetGeneration", "spec.resetGeneration must not decrease"),
	)

	It("lets a gateway bump resetGeneration and change the model", func() {
		s := validSession(ns, "bump")
		Expect(k8sClient.Create(ctx, s)).To(Succeed())
		s.Spec.ResetGeneration = 1
		s.Spec.Model = "openai/gpt-5.6-sol"
		Expect(k8sClient.Update(ctx, s)).To(Succeed())
	})

	It("writes the documented defaults", func() {
		h := validExternalHarness(ns, "defaults")
		h.Spec.AutoSelection = &v1alpha1.AutoSelection{}
		h.Spec.AllowedNamespaces = &v1alpha1.AllowedNamespaces{}
		Expect(k8sClient.Create(ctx, h)).To(Succeed())
		Expect(h.Spec.AuthBootstrap).To(Equal(v1alpha1.AuthBootstrapHarness))
		Expect(h.Spec.AutoSelection.Mode).To(Equal(v1alpha1.AutoSelectionAllProviders))
		Expect(h.Spec.AllowedNamespaces.From).To(Equal(v1alpha1.NamespacesFromSame))

		p := validPolicy("defaults-" + rand.String(6))
		Expect(k8sClient.Create(ctx, p)).To(Succeed())
		Expect(p.Spec.SessionOverrides).To(Equal(v1alpha1.SessionOverridesAllow))

		s := validSession(ns, "defaults")
		Expect(k8sClient.Create(ctx, s)).To(Succeed())
		Expect(s.Spec.ModelSelectionLocked).To(Equal(v1alpha1.ModelSelectionUnlocked))
	})
})

func withURL(h *v1alpha1.AgentHarness, url string) *v1alpha1.AgentHarness {
	h.Spec.External.URL = url
	return h
}

// validManagedGateway is a valid spec.modelGateway with baseURL.
func validManagedGateway(baseURL string) *v1alpha1.ModelGateway {
	return &v1alpha1.ModelGateway{BaseURL: baseURL,
		CredentialSecretRef: v1alpha1.SecretKeyReference{Name: "provider", Key: "api-key"}}
}

// withModelGateway turns a managed harness onto the model gateway: the
// gateway's credential replaces the pods' own.
func withModelGateway(h *v1alpha1.AgentHarness, baseURL string) *v1alpha1.AgentHarness {
	h.Spec.AppServer.Credentials = nil
	h.Spec.ModelGateway = validManagedGateway(baseURL)
	return h
}
