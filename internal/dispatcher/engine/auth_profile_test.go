package engine

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

var _ = Describe("Auth profiles of a turn", Ordered, func() {
	const (
		profileKey = "profile-key-51d2e8"
		readable   = "openai-work"  // alice may get it
		unreadable = "openai-other" // exists; alice may not get it
	)
	var (
		ns    string
		h     *v1alpha1.AgentHarness
		alice = store.Requester{User: "alice", UID: "alice-uid", Groups: []string{"system:authenticated"}}
	)
	BeforeAll(func() {
		ns = newNamespace()
		h = registerCodex(ns, codexSrv.URL, true)
		createSecrets(ns, "apiKey", profileKey, readable, unreadable)
		grantSecretGet(ns, "profile-reader", alice.User, readable)
	})

	profileReq := func(runID, prompt, secret string) *wire.TurnRequest {
		req := textReq(runID, prompt)
		req.AuthProfile = &wire.AuthProfileRef{ID: "openai:work", SecretKeyRef: &wire.SecretKeyRef{Name: secret, Key: "apiKey"}}
		return req
	}
	runAs := func(name string, req *wire.TurnRequest) []event {
		GinkgoHelper()
		run, err := eng.Start(ctx, ns, name, req, alice)
		Expect(err).NotTo(HaveOccurred())
		c := &collector{}
		Expect(Follow(ctx, run, c.sink)).To(Succeed())
		return c.events()
	}
	authorization := func(marker string) string {
		GinkgoHelper()
		reqs := stub.RequestsContaining(marker)
		Expect(reqs).NotTo(BeEmpty(), "no model request carried %q", marker)
		return reqs[len(reqs)-1].Header.Get("Authorization")
	}

	It("authenticates the session's model requests with the key from a Secret the requester may read, keeps it out of events, status, journal and logs, and re-seeds when a turn drops the profile", func() {
		newSession(ns, "profile", testModel)
		evs := runAs("profile", profileReq("run-profile-1", "profile-turn-1", readable))
		Expect(resultOf(evs).Terminal.Kind).To(Equal(wire.TerminalOK))
		Expect(authorization("profile-turn-1")).To(Equal("Bearer " + profileKey))
		b := getSession(ns, "profile").Status.NativeBinding
		Expect(b).NotTo(BeNil())
		Expect(b.AuthProfile).To(Equal("openai:work"))
		first := b.ThreadID

		expectSecretValueNowhere(profileKey, evs, ns, "profile")

		// Without the profile the session's requests use the harness's own
		// credential, on a new thread that carries the conversation.
		evs = runAs("profile", textReq("run-profile-2", "profile-turn-2"))
		Expect(resultOf(evs).Terminal.Kind).To(Equal(wire.TerminalOK))
		Expect(authorization("profile-turn-2")).To(Equal("Bearer " + codextest.StubAPIKey))
		Expect(stub.RequestsContaining("profile-turn-2")[0].UserTexts()).To(ContainElement("profile-turn-1"))
		b = getSession(ns, "profile").Status.NativeBinding
		Expect(b.ThreadID).NotTo(Equal(first), "Codex fixes a thread's credential source: the session moved to a new thread")
		Expect(b.AuthProfile).To(BeEmpty())
	})

	It("authenticates an isolated completion's model request with the profile's key", func() {
		newSession(ns, "profile-completion", testModel)
		stub.When("profile-completion", stubmodel.Text("PROFILE-COMPLETION-ANSWER"))
		res, _, err := eng.Complete(ctx, ns, "profile-completion", "", &wire.CompletionRequest{
			Prompt: "profile-completion question", Instructions: "Be brief.",
			AuthProfileTurnFields: wire.AuthProfileTurnFields{AuthProfile: &wire.AuthProfileRef{ID: "openai:work",
				SecretKeyRef: &wire.SecretKeyRef{Name: readable, Key: "apiKey"}}}}, alice)
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Text).To(Equal("PROFILE-COMPLETION-ANSWER"))
		Expect(authorization("profile-completion")).To(Equal("Bearer " + profileKey))
		Expect(stub.RequestsContaining("profile-completion")[0].Tools).To(BeEmpty())
	})

	It("refuses a profile Secret the requester may not read, naming the field, before anything is journaled or sent", func() {
		newSession(ns, "profile-denied", testModel)
		req := profileReq("run-profile-denied", "profile-denied", unreadable)
		_, err := eng.Start(ctx, ns, "profile-denied", req, alice)
		var we *wire.Error
		Expect(errors.As(err, &we)).To(BeTrue(), "err = %v", err)
		Expect(we.Code).To(Equal(wire.CodeForbidden))
		Expect(we.Message).To(ContainSubstring("authProfile.secretKeyRef"))
		Expect(we.Message).To(ContainSubstring(`user "alice" may not get secrets "openai-other"`))
		_, ferr := jrnl.FindRun(keyOf(ns, "profile-denied"), req.RunID)
		Expect(errors.Is(ferr, store.ErrNotFound)).To(BeTrue(), "the refused run was journaled: %v", ferr)
		Expect(stub.RequestsContaining("profile-denied")).To(BeEmpty())

		evs := runAs("profile-denied", profileReq("run-profile-denied-control", "profile-denied control", readable))
		Expect(resultOf(evs).Terminal.Kind).To(Equal(wire.TerminalOK), "control")
	})

	// The inline form: the gateway holds the key (OpenClaw's auth store)
	// and sends it with the turn. bob may read no Secret at all: no
	// SubjectAccessReview applies to a key the requester already holds.
	It("authenticates with an inline key the requester sends, without Secret rights, and keeps it out of the journal, events, status, Events and logs", func() {
		const inlineKey = "sk-inline-profile-key-3f9a70"
		bob := store.Requester{User: "bob", UID: "bob-uid", Groups: []string{"system:authenticated"}}
		newSession(ns, "profile-inline", testModel)
		req := textReq("run-profile-inline-1", "profile-inline-turn-1")
		req.AuthProfile = &wire.AuthProfileRef{ID: "openai:inline", APIKey: inlineKey}
		run, err := eng.Start(ctx, ns, "profile-inline", req, bob)
		Expect(err).NotTo(HaveOccurred())
		c := &collector{}
		Expect(Follow(ctx, run, c.sink)).To(Succeed())
		evs := c.events()
		Expect(resultOf(evs).Terminal.Kind).To(Equal(wire.TerminalOK))
		Expect(authorization("profile-inline-turn-1")).To(Equal("Bearer "+inlineKey), "the key reached the model")
		Expect(getSession(ns, "profile-inline").Status.NativeBinding.AuthProfile).To(Equal("openai:inline"))

		expectSecretValueNowhere(inlineKey, evs, ns, "profile-inline")
		events := &corev1.EventList{}
		Expect(k8sClient.List(ctx, events, client.InNamespace(ns))).To(Succeed())
		raw, err := json.Marshal(events)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).NotTo(ContainSubstring(inlineKey), "Kubernetes Events of the namespace")
		// The controls: the searches see what they search — the journal
		// holds the run (its prompt), the status names the profile.
		Expect(filesHolding(jrnlDir, "profile-inline-turn-1")).NotTo(BeEmpty(), "control: the journal holds the turn")
		status, err := json.Marshal(getSession(ns, "profile-inline").Status)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(status)).To(ContainSubstring("openai:inline"), "control: the status names the profile")

		// The same request again (a retry; its key rotated meanwhile) is the
		// same run: the key is no part of the request's identity.
		again := textReq("run-profile-inline-1", "profile-inline-turn-1")
		again.AuthProfile = &wire.AuthProfileRef{ID: "openai:inline", APIKey: "sk-rotated-4b1c"}
		replay, err := eng.Start(ctx, ns, "profile-inline", again, bob)
		Expect(err).NotTo(HaveOccurred())
		Expect(replay.Info().RunID).To(Equal(run.Info().RunID))
		Expect(stub.RequestsContaining("profile-inline-turn-1")).To(HaveLen(1), "the run was not run again")

		// The isolation rule holds for an inline key as for a Secret's.
		updateHarness(h, true, func(h *v1alpha1.AgentHarness) {
			h.Spec.AllowedNamespaces = &v1alpha1.AllowedNamespaces{From: v1alpha1.NamespacesFromAll}
		})
		DeferCleanup(updateHarness, h, true, func(h *v1alpha1.AgentHarness) {
			h.Spec.AllowedNamespaces = &v1alpha1.AllowedNamespaces{From: v1alpha1.NamespacesFromSame}
		})
		shared := textReq("run-profile-inline-2", "profile-inline-turn-2")
		shared.AuthProfile = &wire.AuthProfileRef{ID: "openai:inline", APIKey: inlineKey}
		_, err = eng.Start(ctx, ns, "profile-inline", shared, bob)
		var we *wire.Error
		Expect(errors.As(err, &we)).To(BeTrue(), "err = %v", err)
		Expect(we.Code).To(Equal(wire.CodeAuthProfileNotIsolated))
		Expect(we.Message).NotTo(ContainSubstring(inlineKey))
		Expect(stub.RequestsContaining("profile-inline-turn-2")).To(BeEmpty())
		Expect(logs.all()).NotTo(ContainSubstring(inlineKey))
	})

	It("refuses AuthProfileNotIsolated on a harness that admits other namespaces, whoever asks, and runs the same turn once it admits only its own", func() {
		newSession(ns, "profile-shared", testModel)
		updateHarness(h, true, func(h *v1alpha1.AgentHarness) {
			h.Spec.AllowedNamespaces = &v1alpha1.AllowedNamespaces{From: v1alpha1.NamespacesFromAll}
		})
		req := profileReq("run-profile-shared", "profile-shared", readable)
		_, err := eng.Start(ctx, ns, "profile-shared", req, alice)
		var we *wire.Error
		Expect(errors.As(err, &we)).To(BeTrue(), "err = %v", err)
		Expect(we.Code).To(Equal(wire.CodeAuthProfileNotIsolated))
		Expect(we.Message).To(ContainSubstring("spec.allowedNamespaces.from: All"))
		Expect(stub.RequestsContaining("profile-shared")).To(BeEmpty())

		updateHarness(h, true, func(h *v1alpha1.AgentHarness) {
			h.Spec.AllowedNamespaces = &v1alpha1.AllowedNamespaces{From: v1alpha1.NamespacesFromSame}
		})
		evs := runAs("profile-shared", profileReq("run-profile-shared-control", "profile-shared control", readable))
		Expect(resultOf(evs).Terminal.Kind).To(Equal(wire.TerminalOK), "control")
	})
})

// A profile's key may sit only in an app-server that serves no other
// namespace: a harness in another namespace, or one that admits others
// (All, Selector), would hold it beside other tenants' sessions.
func TestSharedHarness(t *testing.T) {
	harness := func(ns string, from v1alpha1.NamespacesFrom) *v1alpha1.AgentHarness {
		h := &v1alpha1.AgentHarness{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "codex"}}
		if from != "-" {
			h.Spec.AllowedNamespaces = &v1alpha1.AllowedNamespaces{From: from}
		}
		return h
	}
	for _, tc := range []struct {
		name string
		h    *v1alpha1.AgentHarness
		want string // "" isolated, else a part of the reason
	}{
		{"own namespace, allowedNamespaces unset", harness("team-a", "-"), ""},
		{"own namespace, from empty (defaults to Same)", harness("team-a", ""), ""},
		{"own namespace, from Same", harness("team-a", v1alpha1.NamespacesFromSame), ""},
		{"own namespace, from All", harness("team-a", v1alpha1.NamespacesFromAll), "from: All"},
		{"own namespace, from Selector", harness("team-a", v1alpha1.NamespacesFromSelector), "from: Selector"},
		{"another namespace's harness", harness("platform", v1alpha1.NamespacesFromAll), "is in namespace platform"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := sharedHarness(tc.h, "team-a")
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("sharedHarness = %q, want %q", got, tc.want)
			}
		})
	}
}
