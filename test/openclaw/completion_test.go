//go:build e2e

package openclaw

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

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
)

var _ = Describe("Settled-turn finalization through the plugin", func() {
	// The model calls OpenClaw's session_status, then ends its turn without
	// a word. OpenClaw asks the plugin's finalizeSettledTurn, which posts
	// the turn's frozen transcript to the dispatcher's …/finalize. The
	// suite's model is one of Codex's catalog models, for which Codex cannot
	// prove an isolated call (docs/dispatcher-api.md): the dispatcher
	// refuses before any model request, and OpenClaw answers with its
	// side-effect-aware fallback instead of replaying the turn. A successful
	// finalization needs a model outside Codex's catalog pinned to the
	// plugin in the gateway's config (docs/openclaw-plugin.md, "What is
	// left").
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
		Expect(stub.RequestsContaining(settledFinalizationPrompt)).To(BeEmpty(), "no model request for the refused finalization")
		Expect(run.result().texts()).To(ConsistOf(settledFinalizationFallback), "OpenClaw's fallback, not a replayed turn")
	})
})
