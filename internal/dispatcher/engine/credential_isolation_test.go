package engine

import (
	"encoding/json"
	"errors"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/mcpserver"
)

// A credential a turn brings — an MCP server's header values, an auth
// profile's key — sits in the app-server's memory beside every session the
// harness runs, so it goes only to a harness that serves the session's
// namespace alone. The harness is read again for every turn: a harness
// that starts admitting other namespaces refuses the next turn that brings
// one. Each refusal is not retryable, names the field, comes before any
// Secret is read or anything is journaled, and has a control that runs.
var _ = Describe("Credentials a turn brings to a shared harness", Ordered, func() {
	const (
		headerValue = "isolation-header-value-0b4d"
		profileKey  = "isolation-profile-key-9e21"
		secret      = "credentials" // alice may get it
	)
	var (
		ns    string
		h     *v1alpha1.AgentHarness
		mcp   *mcpserver.Server
		alice = store.Requester{User: "alice", UID: "alice-uid", Groups: []string{"system:authenticated"}}
	)
	BeforeAll(func() {
		ns = newNamespace()
		mcp = mcpserver.Start(suiteT, mcpserver.Tool{Name: "lookup", Reply: "lookup-result",
			InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: json.RawMessage(`{"readOnlyHint":true}`)})
		h = registerCodex(ns, codexSrv.URL, true)
		updateHarness(h, true, func(h *v1alpha1.AgentHarness) {
			h.Spec.MCP = &v1alpha1.HarnessMCP{AllowedURLPrefixes: []string{mcp.URL}}
		})
		Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: secret},
			Data: map[string][]byte{"header": []byte(headerValue), "apiKey": []byte(profileKey)}})).To(Succeed())
		grantSecretGet(ns, "credentials-reader", alice.User, secret)
	})

	// share sets the harness's allowedNamespaces.from (Selector with a
	// selector that matches only the harness's own namespace: shared all
	// the same, as the selector may match others tomorrow).
	share := func(from v1alpha1.NamespacesFrom) {
		updateHarness(h, true, func(h *v1alpha1.AgentHarness) {
			h.Spec.AllowedNamespaces = &v1alpha1.AllowedNamespaces{From: from}
			if from == v1alpha1.NamespacesFromSelector {
				h.Spec.AllowedNamespaces.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}
			}
		})
	}
	headerReq := func(runID, prompt string, headers bool) *wire.TurnRequest {
		req := textReq(runID, prompt)
		s := wire.MCPServer{Name: "docs", URL: mcp.URL}
		if headers {
			s.Headers = []wire.MCPHeader{{Name: "X-Api-Key",
				ValueFrom: wire.MCPHeaderSource{SecretKeyRef: &wire.SecretKeyRef{Name: secret, Key: "header"}}}}
		}
		req.MCPServers = []wire.MCPServer{s}
		return req
	}
	profileReq := func(runID, prompt string) *wire.TurnRequest {
		req := textReq(runID, prompt)
		req.AuthProfile = &wire.AuthProfileRef{ID: "openai:work", SecretKeyRef: &wire.SecretKeyRef{Name: secret, Key: "apiKey"}}
		return req
	}
	runIn := func(namespace, name string, req *wire.TurnRequest) []event {
		GinkgoHelper()
		run, err := eng.Start(ctx, namespace, name, req, alice)
		Expect(err).NotTo(HaveOccurred())
		c := &collector{}
		Expect(Follow(ctx, run, c.sink)).To(Succeed())
		return c.events()
	}
	// refused starts req as alice and returns its refusal, after checking
	// that nothing was journaled, asked of the model or sent to the MCP
	// server.
	refused := func(namespace, name string, req *wire.TurnRequest) *wire.Error {
		GinkgoHelper()
		methods := len(mcp.Methods())
		_, err := eng.Start(ctx, namespace, name, req, alice)
		var we *wire.Error
		Expect(errors.As(err, &we)).To(BeTrue(), "err = %v", err)
		Expect(we.Retryable).To(BeFalse())
		_, ferr := jrnl.FindRun(keyOf(namespace, name), req.RunID)
		Expect(errors.Is(ferr, store.ErrNotFound)).To(BeTrue(), "the refused run was journaled: %v", ferr)
		Expect(stub.RequestsContaining(req.Prompt)).To(BeEmpty())
		Expect(mcp.Methods()).To(HaveLen(methods), "the MCP server was contacted")
		return we
	}

	It("refuses a turn whose MCP server has headers once the harness admits other namespaces, and runs it again once the harness admits only its own", func() {
		newSession(ns, "headers", testModel)
		evs := runIn(ns, "headers", headerReq("run-headers-1", "isolation-hdrturn-a", true))
		Expect(resultOf(evs).Terminal.Kind).To(Equal(wire.TerminalOK), "control: an isolated harness")

		share(v1alpha1.NamespacesFromAll)
		DeferCleanup(share, v1alpha1.NamespacesFromSame)
		we := refused(ns, "headers", headerReq("run-headers-2", "isolation-hdrturn-b", true))
		Expect(we.Code).To(Equal(wire.CodeForbidden))
		Expect(we.Message).To(HavePrefix("mcpServers[0].headers: "))
		Expect(we.Message).To(ContainSubstring("spec.allowedNamespaces.from: All"))

		evs = runIn(ns, "headers", headerReq("run-headers-3", "isolation-hdrturn-c", false))
		Expect(resultOf(evs).Terminal.Kind).To(Equal(wire.TerminalOK), "control: the same server without headers")

		share(v1alpha1.NamespacesFromSame)
		evs = runIn(ns, "headers", headerReq("run-headers-4", "isolation-hdrturn-d", true))
		Expect(resultOf(evs).Terminal.Kind).To(Equal(wire.TerminalOK), "control: isolated again")
		expectSecretValueNowhere(headerValue, evs, ns, "headers")
	})

	It("refuses the next turn of a thread that uses an auth profile once the harness admits other namespaces; a turn without the profile leaves that thread", func() {
		newSession(ns, "profile", testModel)
		evs := runIn(ns, "profile", profileReq("run-profile-1", "isolation-profile-1"))
		Expect(resultOf(evs).Terminal.Kind).To(Equal(wire.TerminalOK), "control: an isolated harness")
		bound := getSession(ns, "profile").Status.NativeBinding
		Expect(bound.AuthProfile).To(Equal("openai:work"))

		share(v1alpha1.NamespacesFromSelector)
		DeferCleanup(share, v1alpha1.NamespacesFromSame)
		we := refused(ns, "profile", profileReq("run-profile-2", "isolation-profile-2"))
		Expect(we.Code).To(Equal(wire.CodeAuthProfileNotIsolated))
		Expect(we.Message).To(HavePrefix(`authProfile "openai:work": `))
		Expect(we.Message).To(ContainSubstring("spec.allowedNamespaces.from: Selector"))
		Expect(getSession(ns, "profile").Status.NativeBinding.ThreadID).To(Equal(bound.ThreadID))

		evs = runIn(ns, "profile", textReq("run-profile-3", "isolation-profile-3"))
		Expect(resultOf(evs).Terminal.Kind).To(Equal(wire.TerminalOK), "control: the harness's own credential")
		b := getSession(ns, "profile").Status.NativeBinding
		Expect(b.ThreadID).NotTo(Equal(bound.ThreadID), "the session left the profile's thread")
		Expect(b.AuthProfile).To(BeEmpty())
		expectSecretValueNowhere(profileKey, evs, ns, "profile")
	})

	// The session's namespace has neither the Secret nor alice's grant: a
	// refusal for isolation, not for the Secret, shows that the rule comes
	// before any Secret is looked at (the dispatcher has no Secret access
	// in a namespace that is not a harness namespace).
	It("refuses MCP headers and auth profiles for a session of another namespace the harness serves, before looking at its Secret", func() {
		share(v1alpha1.NamespacesFromAll)
		DeferCleanup(share, v1alpha1.NamespacesFromSame)
		tenant := testutil.SuiteNamespace(nsPrefix, int(nsCounter.Add(1)))
		Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenant,
			Labels: map[string]string{v1alpha1.AcceptHarnessesLabel(ns): v1alpha1.AcceptHarnessesLabelValue}}})).To(Succeed())
		newSession(tenant, "tenant", testModel)

		we := refused(tenant, "tenant", headerReq("run-tenant-1", "isolation-tenant-1", true))
		Expect(we.Code).To(Equal(wire.CodeForbidden))
		Expect(we.Message).To(HavePrefix("mcpServers[0].headers: "))
		Expect(we.Message).To(ContainSubstring("is in namespace " + ns))

		we = refused(tenant, "tenant", profileReq("run-tenant-2", "isolation-tenant-2"))
		Expect(we.Code).To(Equal(wire.CodeAuthProfileNotIsolated))
		Expect(we.Message).To(ContainSubstring("is in namespace " + ns))

		evs := runIn(tenant, "tenant", headerReq("run-tenant-3", "isolation-tenant-3", false))
		Expect(resultOf(evs).Terminal.Kind).To(Equal(wire.TerminalOK), "control: the same server without headers")
	})
})
