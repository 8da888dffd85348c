package engine

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter/codex"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

func TestContinueThreadResumesOrReseeds(t *testing.T) {
	tools := []wire.HostTool{{Name: "lookup", Description: "Look something up."}}
	withTools := codex.HostToolsFingerprint(adapter.TurnInput{Tools: tools})
	bound := func(fp string) *v1alpha1.NativeBinding {
		return &v1alpha1.NativeBinding{ThreadID: "thread-1", HostToolsFingerprint: fp}
	}
	gateway := []wire.GatewayMessage{{Role: wire.RoleUser, Text: "asked on the gateway"}, {Role: wire.RoleAssistant, Text: "answered there"}}
	cases := []struct {
		name            string
		tools           []wire.HostTool
		binding         *v1alpha1.NativeBinding
		gateway         []wire.GatewayMessage
		resume, reseed  string
		wantFingerprint string
	}{
		{"no binding starts a new thread with the turn's tools", tools, nil, nil, "", "", withTools},
		{"the same tools resume the thread", tools, bound(withTools), nil, "thread-1", "", withTools},
		{"other tools re-seed from the thread", nil, bound(withTools), nil, "", "thread-1", noHostTools},
		{"an unknown surface and no tools resume, still unknown", nil, bound(""), nil, "thread-1", "", ""},
		{"an unknown surface and host tools re-seed", tools, bound(""), nil, "", "thread-1", withTools},
		{"the gateway's messages go to the resumed thread", tools, bound(withTools), gateway, "thread-1", "", withTools},
		{"the gateway's messages go to a thread whose tools are unknown", nil, bound(""), gateway, "thread-1", "", ""},
		{"the gateway's messages follow the history on a re-seed", nil, bound(withTools), gateway, "", "thread-1", noHostTools},
		{"the gateway's messages alone seed a session's first thread", tools, nil, gateway, "", "", withTools},
	}
	for _, c := range cases {
		in := adapter.TurnInput{Tools: c.tools}
		fp := continueThread(&in, c.binding, c.gateway)
		if in.ReseedFromProvider != "" {
			t.Errorf("%s: reseedFromProvider %q, want none: no provider changed", c.name, in.ReseedFromProvider)
		}
		if in.ThreadID != c.resume || in.ReseedFrom != c.reseed || fp != c.wantFingerprint || len(in.GatewayMessages) != len(c.gateway) {
			t.Errorf("%s: threadId %q reseedFrom %q fingerprint %q gateway messages %d; want %q %q %q %d",
				c.name, in.ThreadID, in.ReseedFrom, fp, len(in.GatewayMessages), c.resume, c.reseed, c.wantFingerprint, len(c.gateway))
		}
	}
}

// TestContinueThreadReseedsWhenTheModelProviderChanges: Codex refuses to
// resume a thread on another model provider, so a turn whose provider
// differs from the one the bound thread started with re-seeds from it, and
// names the old provider for the adapter to define while it reads the
// history.
func TestContinueThreadReseedsWhenTheModelProviderChanges(t *testing.T) {
	const gw, profile = "harness-gateway", "harness-auth-profile"
	bound := func(provider, authProfile string) *v1alpha1.NativeBinding {
		return &v1alpha1.NativeBinding{ThreadID: "thread-1", HostToolsFingerprint: noHostTools, ModelProvider: provider, AuthProfile: authProfile}
	}
	key := &adapter.AuthProfile{ID: "openai:work", APIKey: "k"}
	cases := []struct {
		name           string
		in             adapter.TurnInput
		binding        *v1alpha1.NativeBinding
		resume, reseed string
		from           string
	}{
		{"the server's provider, then the gateway: re-seed", adapter.TurnInput{ModelCredential: "hmg1.x"}, bound("", ""), "", "thread-1", ""},
		{"the gateway, then the gateway with a new credential: resume", adapter.TurnInput{ModelCredential: "hmg1.y"}, bound(gw, ""), "thread-1", "", ""},
		{"the gateway with a profile sealed in, then without: resume", adapter.TurnInput{ModelCredential: "hmg1.y"}, bound(gw, "openai:work"), "thread-1", "", ""},
		{"the gateway, then the server's own (the gateway turned off): re-seed", adapter.TurnInput{}, bound(gw, ""), "", "thread-1", gw},
		{"a profile thread of before the field, then the gateway: re-seed", adapter.TurnInput{ModelCredential: "hmg1.x"}, bound("", "openai:work"), "", "thread-1", profile},
		{"a profile thread of before the field, then the profile again: resume", adapter.TurnInput{AuthProfile: key}, bound("", "openai:work"), "thread-1", "", ""},
		{"the profile's provider recorded, then no profile: re-seed", adapter.TurnInput{}, bound(profile, "openai:work"), "", "thread-1", profile},
		{"the server's own, then a profile: re-seed", adapter.TurnInput{AuthProfile: key}, bound("", ""), "", "thread-1", ""},
	}
	for _, c := range cases {
		in := c.in
		continueThread(&in, c.binding, nil)
		if in.ThreadID != c.resume || in.ReseedFrom != c.reseed || in.ReseedFromProvider != c.from {
			t.Errorf("%s: threadId %q reseedFrom %q (provider %q); want %q %q (%q)",
				c.name, in.ThreadID, in.ReseedFrom, in.ReseedFromProvider, c.resume, c.reseed, c.from)
		}
	}
}

var _ = Describe("A session whose host tools change", Ordered, func() {
	var ns string
	oldTool := wire.HostTool{Name: "old_tool", Description: "Removed later."}
	keptTool := wire.HostTool{Name: "kept_tool", Description: "Always offered.", Parameters: json.RawMessage(`{"type":"object"}`)}
	newTool := wire.HostTool{Name: "new_tool", Description: "Added later."}
	withTools := func(runID, prompt string, tools ...wire.HostTool) *wire.TurnRequest {
		req := textReq(runID, prompt)
		req.Tools = tools
		return req
	}
	reseeded := func(evs []event) []wire.AgentEvent {
		var out []wire.AgentEvent
		for _, p := range ofType(evs, wire.EventAgent) {
			var a wire.AgentEvent
			Expect(json.Unmarshal(p, &a)).To(Succeed())
			if a.Stream == wire.StreamLifecycle && a.Phase == wire.PhaseReseeded {
				out = append(out, a)
			}
		}
		return out
	}
	BeforeAll(func() {
		ns = newNamespace()
		registerCodex(ns, codexSrv.URL, true)
		newSession(ns, "rs", testModel)
	})

	It("records the fingerprint of the tools its thread started with, and resumes the thread while they stay the same", func() {
		stub.When("rs-1", stubmodel.Text("RS-FIRST-REPLY"))
		evs, err := turn(ns, "rs", withTools("run-rs1", "rs-1 first question", oldTool, keptTool))
		Expect(err).NotTo(HaveOccurred())
		b := getSession(ns, "rs").Status.NativeBinding
		Expect(b.ThreadID).To(Equal(resultOf(evs).ThreadID))
		Expect(b.HostToolsFingerprint).To(Equal(codex.HostToolsFingerprint(adapter.TurnInput{Tools: []wire.HostTool{oldTool, keptTool}})))

		evs, err = turn(ns, "rs", withTools("run-rs2", "rs-2 same tools, other order", keptTool, oldTool))
		Expect(err).NotTo(HaveOccurred())
		Expect(resultOf(evs).ThreadID).To(Equal(b.ThreadID), "an unchanged tool set resumes the thread")
		Expect(reseeded(evs)).To(BeEmpty())
		Expect(getSession(ns, "rs").Status.NativeBinding.HostToolsFingerprint).To(Equal(b.HostToolsFingerprint))
	})

	It("continues the conversation on a new thread with the new tools, binds the session to it and says so in the stream", func() {
		before := getSession(ns, "rs").Status.NativeBinding
		evs, err := turn(ns, "rs", withTools("run-rs3", "rs-3 with a tool added and one removed", keptTool, newTool))
		Expect(err).NotTo(HaveOccurred())
		res := resultOf(evs)
		Expect(res.Terminal.Kind).To(Equal(wire.TerminalOK))
		Expect(res.ThreadID).NotTo(Equal(before.ThreadID))

		req, err := stub.WaitMarker(ctx, "rs-3")
		Expect(err).NotTo(HaveOccurred())
		Expect(req.UserTexts()).To(ContainElement("rs-1 first question"), "the new thread carries the first user message")
		Expect(req.AssistantTexts()).To(ContainElement("RS-FIRST-REPLY"), "and the first reply")
		Expect(req.ToolNames()).To(ContainElements("kept_tool", "new_tool"))
		Expect(req.ToolNames()).NotTo(ContainElement("old_tool"))

		events := reseeded(evs)
		Expect(events).To(HaveLen(1))
		Expect(events[0].Text).To(And(ContainSubstring(before.ThreadID), ContainSubstring(res.ThreadID)))

		after := getSession(ns, "rs").Status.NativeBinding
		Expect(after.ThreadID).To(Equal(res.ThreadID))
		Expect(after.HostToolsFingerprint).To(Equal(codex.HostToolsFingerprint(adapter.TurnInput{Tools: []wire.HostTool{keptTool, newTool}})))
		Expect(after.Pod).To(Equal(before.Pod))
	})

	It("keeps a thread bound before fingerprints existed while a turn offers no host tools, and re-seeds it for the first turn that does", func() {
		s := getSession(ns, "rs")
		s.Status.NativeBinding.HostToolsFingerprint = ""
		Expect(k8sClient.Status().Update(ctx, s)).To(Succeed())
		eng.forget(s.UID) // the dispatcher learns the status from the API server
		Eventually(func() string { return getSession(ns, "rs").Status.NativeBinding.HostToolsFingerprint }).Should(BeEmpty())
		thread := s.Status.NativeBinding.ThreadID

		evs, err := turn(ns, "rs", textReq("run-rs4", "rs-4 no tools"))
		Expect(err).NotTo(HaveOccurred())
		Expect(resultOf(evs).ThreadID).To(Equal(thread))
		Expect(reseeded(evs)).To(BeEmpty())
		Expect(getSession(ns, "rs").Status.NativeBinding.HostToolsFingerprint).To(BeEmpty(), "still unknown")

		evs, err = turn(ns, "rs", withTools("run-rs5", "rs-5 tools again", keptTool))
		Expect(err).NotTo(HaveOccurred())
		Expect(resultOf(evs).ThreadID).NotTo(Equal(thread))
		Expect(reseeded(evs)).To(HaveLen(1))
		Expect(getSession(ns, "rs").Status.NativeBinding.HostToolsFingerprint).NotTo(BeEmpty())
	})
})
