//go:build e2e

package openclaw

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// emptyResponseNudge is how OpenClaw 2026.9.6's embedded runner retries an
// attempt that said nothing, under the same runId: its
// EMPTY_RESPONSE_RETRY_INSTRUCTION becomes the next attempt's prompt.
const emptyResponseNudge = "The previous attempt did not produce a user-visible answer."

var _ = Describe("The attempt result the plugin returns to OpenClaw", func() {
	// The model's first answer is empty. OpenClaw retries the attempt under
	// its runId (the same prompt, then its nudge); the dispatcher keeps a
	// runId to one body, so each retry must reach it as a run of its own
	// (docs/openclaw-plugin.md "One run per attempt body").
	It("lets OpenClaw retry an empty reply on the cluster until the model answers", func(ctx context.Context) {
		marker := "marker-" + randomHex()
		reply := "Visible answer " + marker
		// Codex's requests carry the prompt as their latest user message
		// (the marker for OpenClaw's same-prompt retry, should it reach
		// the model), then the nudge.
		stub.When(marker, stubmodel.Reply{}, stubmodel.Reply{})
		stub.When(emptyResponseNudge, stubmodel.Text(reply))
		s := newSession(ctx, "")

		run := gateway.turn(ctx, s.id, s.key, "Say hello "+marker)

		Expect(run.output()).NotTo(ContainSubstring("RunIdConflict"), "%s", run)
		Expect(run.exit).To(Equal(0), "%s", run)
		Expect(run.result().texts()).To(ContainElement(ContainSubstring(reply)), "%s", run)
		Expect(stub.RequestsContaining(emptyResponseNudge)).To(HaveLen(1), "OpenClaw's nudge reached the model once, through the cluster")
		last := s.lastTurn(ctx)
		Expect(last.Outcome).To(Equal(v1alpha1.TurnSucceeded))
	})
})
