//go:build e2e

package openclaw

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

const (
	// settledFinalizationPrompt begins OpenClaw 2026.9.6's
	// SETTLED_TOOL_TERMINAL_CONTINUATION_INSTRUCTION: the prompt OpenClaw
	// gives the harness's finalizeSettledTurn for a turn whose tools settled
	// without an answer.
	settledFinalizationPrompt = "The previous assistant turn completed its tool calls but did not produce a user-visible answer."
	// settledFinalizationFallback is OpenClaw 2026.9.6's
	// SETTLED_TOOL_FINALIZATION_FALLBACK_TEXT: its answer when the
	// finalization failed.
	settledFinalizationFallback = "The tool run finished, but no final summary was produced. I did not repeat any completed actions."

	// completionModel is an OpenAI model of OpenClaw's catalog that is not
	// in Codex's (Codex 0.169.0 lists none whose name it contains), pinned
	// to the plugin's harness: Codex can prove an isolated call for it
	// (docs/dispatcher-api.md). No other spec names it.
	completionModel = "openai/chat-latest"
	// completionCaller is the test plugin whose tool asks OpenClaw for an
	// isolated completion (testdata/plugins/isolated-completion-caller).
	completionCaller = "isolated-completion-caller"
)

// completionCallerEntry is the caller's entry in the gateway's config:
// OpenClaw lets a plugin name the model of its completions only when its
// entry allows it, and then only the models listed.
var completionCallerEntry = map[string]any{
	"enabled": true,
	"llm":     map[string]any{"allowModelOverride": true, "allowedModels": []string{completionModel}},
}

var _ = Describe("Settled-turn finalization through the plugin", func() {
	// The model calls OpenClaw's session_status, then ends its turn without
	// a word. OpenClaw asks the plugin's finalizeSettledTurn, which posts
	// the turn's frozen transcript to the dispatcher's …/finalize.

	// The suite's model is one of Codex's catalog models, for which Codex
	// cannot prove an isolated call (docs/dispatcher-api.md): the dispatcher
	// refuses before any model request, and OpenClaw answers with its
	// side-effect-aware fallback instead of replaying the turn.
	It("asks the cluster to finalize a turn whose tools settled without text, and the refusal for a catalog model reaches OpenClaw with nothing run", func(ctx context.Context) {
		marker := "marker-" + randomHex()
		callID := "call_" + marker
		stub.When(marker, stubmodel.Call(stubmodel.FunctionCall{Name: "session_status", Arguments: `{}`, CallID: callID}), stubmodel.Reply{})
		s := newSession(ctx, "")

		run := gateway.turn(ctx, s.id, s.key, "What is my session's status? "+marker)

		Expect(run.exit).To(Equal(0), "%s", run)
		turn := stub.RequestsContaining(marker)
		Expect(turn).To(HaveLen(2), "the turn: the call, then the empty answer\n%s", run)
		Expect(turn[1].FunctionCallOutputs()).To(ContainElement(HaveField("CallID", callID)), "the tool ran and its output reached the model")
		// The gateway may print its lines after the client has its answer.
		Eventually(run.console).WithTimeout(30*time.Second).Should(ContainSubstring("running isolated finalization"),
			"OpenClaw asked the harness to finalize")
		Eventually(run.console).WithTimeout(30*time.Second).Should(
			ContainSubstring("harness-operator settled-turn finalization: the dispatcher refused it: ToolPolicyUnenforceable"),
			"the plugin posted the finalization and the dispatcher's refusal reached OpenClaw")
		Expect(finalizationsOf(marker)).To(BeEmpty(), "no model request for the refused finalization")
		Expect(run.result().texts()).To(ConsistOf(settledFinalizationFallback), "OpenClaw's fallback, not a replayed turn")
	})

	// The same turn on completionModel: the dispatcher runs the
	// finalization on a fresh ephemeral thread of the harness that ran the
	// turn, and the stub model's answer is OpenClaw's.
	It("finalizes a turn whose tools settled without text on the cluster: the model gets OpenClaw's prompt after the frozen tool transcript, with no tools, and its answer is OpenClaw's", func(ctx context.Context) {
		marker := "marker-" + randomHex()
		callID := "call_" + marker
		prompt := "What is my session's status? " + marker
		answer := "Finalized answer " + randomHex()
		stub.When(marker, stubmodel.Call(stubmodel.FunctionCall{Name: "session_status", Arguments: `{}`, CallID: callID}), stubmodel.Reply{})
		// OpenClaw's prompt is the finalization's one new user message; the
		// marker is in the transcript before it (finalizationsOf).
		stub.When(settledFinalizationPrompt, stubmodel.Text(answer))
		s := newModelSession(ctx, completionModel)

		run := gateway.turn(ctx, s.id, s.key, prompt, "--model", completionModel)

		Expect(run.exit).To(Equal(0), "%s", run)
		res := run.result()
		Expect(res.Meta.AgentMeta.AgentHarnessID).To(Equal(pluginID), "the cluster ran the turn:\n%s", run)
		turn := stub.RequestsContaining(marker)
		Expect(turn).To(HaveLen(2), "the turn: the call, then the empty answer\n%s", run)
		Expect(turn[0].Model).To(Equal(strings.TrimPrefix(completionModel, "openai/")))
		var output string
		for _, o := range turn[1].FunctionCallOutputs() {
			if o.CallID == callID {
				output = o.Output
			}
		}
		Expect(output).To(ContainSubstring("🦞 OpenClaw "), "session_status ran and its output reached the model")

		fin := finalizationsOf(marker)
		Expect(fin).To(HaveLen(1), "one model request for the finalization:\n%s", run)
		Expect(fin[0].Model).To(Equal(strings.TrimPrefix(completionModel, "openai/")), "on the turn's model")
		Expect(fin[0].LastUserText()).To(ContainSubstring(settledFinalizationPrompt), "OpenClaw's finalization prompt is the new user message")
		Expect(fin[0].HasTools).To(BeTrue(), "Codex sent the call's tool list")
		Expect(fin[0].Tools).To(BeEmpty(), "and it is empty")
		Expect(fin[0].AdditionalTools()).To(BeEmpty(), "no tools offered another way")
		Expect(fin[0].UserTexts()).To(ContainElement(ContainSubstring(prompt)), "the frozen transcript has the turn's prompt")
		Expect(fin[0].Input).To(ContainElement(And(HaveField("Type", "function_call"), HaveField("CallID", callID), HaveField("Name", "session_status"))),
			"its tool call")
		Expect(fin[0].FunctionCallOutputs()).To(ConsistOf(stubmodel.FunctionCallOutput{CallID: callID, Output: output}),
			"and the tool's result as the turn's model got it")

		Expect(res.texts()).To(ConsistOf(answer), "the finalization's answer, not OpenClaw's fallback:\n%s", run)
		Expect(stub.RequestsContaining(marker)).To(HaveLen(2), "the turn was not replayed")
	})
})

// finalizationsOf are the model requests of a finalization of the turn whose
// prompt holds marker: OpenClaw's finalization prompt is their latest user
// message, the turn's prompt an earlier one.
func finalizationsOf(marker string) []*stubmodel.Request {
	var out []*stubmodel.Request
	for _, r := range stub.RequestsContaining(settledFinalizationPrompt) {
		for _, u := range r.UserTexts() {
			if strings.Contains(u, marker) {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

// OpenClaw's api.runtime.llm.complete in "isolated-agent-runtime" mode, from
// a plugin's tool (testdata/plugins/isolated-completion-caller) that a
// cluster turn's model calls, for completionModel: OpenClaw routes the call
// to the runIsolatedCompletionV2 of the model's harness, the plugin's. The
// plugin runs only a harness-owned call, and OpenClaw 2026.9.6 prepares one
// only for its own `codex` harness id (its runtime plan's harness auth
// provider): every call it routes here is host-owned, and the plugin refuses
// it before any request (docs/openclaw-plugin.md, "Isolated completion and
// settled-turn finalization").
var _ = Describe("Isolated completion through the plugin", func() {
	It("reaches the plugin's runIsolatedCompletionV2 from OpenClaw's api.runtime.llm.complete, and the host-owned call OpenClaw prepares is refused before any request", func(ctx context.Context) {
		marker := "marker-" + randomHex()
		question := "Isolated question " + randomHex()
		reply := "Turn reply " + marker
		stub.When(marker, stubmodel.CallJSON("isolated_completion", map[string]string{"prompt": question, "model": completionModel}), stubmodel.Text(reply))
		// What the stub would answer the completion with, had it run.
		stub.When(question, stubmodel.Text("Isolated answer "+randomHex()))
		s := newSession(ctx, "")
		sessionsBefore := isolatedSessions(ctx)

		run := gateway.turn(ctx, s.id, s.key, "Ask the isolated model. "+marker)

		Expect(run.exit).To(Equal(0), "%s", run)
		Expect(run.result().texts()).To(ContainElement(ContainSubstring(reply)), "%s", run)
		turn := stub.RequestsContaining(marker)
		Expect(turn).To(HaveLen(2), "the turn: the call, then the answer\n%s", run)
		Expect(turn[0].ToolNames()).To(ContainElement("isolated_completion"), "the caller's tool was offered to the model")
		outputs := turn[1].FunctionCallOutputs()
		Expect(outputs).To(HaveLen(1), "%s", run)
		AddReportEntry("the isolated completion tool's output", outputs[0].Output)
		Expect(outputs[0].Output).To(ContainSubstring("harness-operator isolated completion refused: OpenClaw resolved the credential (owner host)"),
			"OpenClaw called the plugin's runIsolatedCompletionV2 with a host-owned authorization, and the plugin refused it")
		Expect(requestsNaming(question)).To(Equal(1), "no model request for the completion: only the turn's, which carries the tool call's arguments")
		Expect(stub.RequestsContaining(question)).To(BeEmpty())
		Expect(isolatedSessions(ctx)).To(Equal(sessionsBefore), "the plugin prepared no AgentSession for the refused call")
	})
})

// isolatedSessions are the names of the AgentSessions the plugin keeps for
// isolated completions (session ids harness-operator-isolated-completion.*).
func isolatedSessions(ctx context.Context) []string {
	GinkgoHelper()
	list := &v1alpha1.AgentSessionList{}
	Expect(k8s.List(ctx, list, client.InNamespace(agentsNS))).To(Succeed())
	names := []string{}
	for _, s := range list.Items {
		if strings.HasPrefix(s.Spec.SessionID, "harness-operator-isolated-completion.") {
			names = append(names, s.Name)
		}
	}
	return names
}
