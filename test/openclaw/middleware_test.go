//go:build e2e

package openclaw

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// The suite's test plugin testdata/plugins/tool-result-rewriter: a host tool
// of its own, whose output starts "RAW", and a tool-result middleware for
// runtime "codex" whose matcher names only that tool and rewrites "RAW" to
// "REWRITTEN". Its matcher covers no native tool, so every gateway of the
// suite loads it without any turn being refused.
const (
	rewriterPlugin = "tool-result-rewriter"
	rewriterTool   = "probe_lookup"
)

var _ = Describe("OpenClaw's tool-result middleware on cluster turns", func() {
	// The model calls the plugin's tool; the dispatcher streams the call to
	// the plugin, OpenClaw's tool surface runs it, the middleware rewrites
	// its result, and the next model request carries what the model reads.
	It("applies a middleware registered for codex to a host tool's result before the cluster's model reads it", func(ctx context.Context) {
		marker := "marker-" + randomHex()
		callID := "call_" + marker
		reply := "Lookup reply " + marker
		stub.When(marker, stubmodel.Call(stubmodel.FunctionCall{Name: rewriterTool, Arguments: `{"word":"` + marker + `"}`, CallID: callID}),
			stubmodel.Text(reply))
		s := newSession(ctx, "")

		run := gateway.turn(ctx, s.id, s.key, "Look the word up: "+marker)

		Expect(run.exit).To(Equal(0), "%s", run)
		Expect(run.result().Meta.AgentMeta.AgentHarnessID).To(Equal(pluginID), "%s", run)
		Expect(run.result().texts()).To(ContainElement(ContainSubstring(reply)), "%s", run)
		reqs := stub.RequestsContaining(marker)
		Expect(reqs).To(HaveLen(2), "the call, then the answer with the tool's output:\n%s", run)
		Expect(offeredTools(reqs[0])).To(ContainElement(rewriterTool), "the plugin's tool was offered on the cluster:\n%s", run)
		var outputs []string
		for _, o := range reqs[1].FunctionCallOutputs() {
			if o.CallID == callID {
				outputs = append(outputs, o.Output)
			}
		}
		Expect(outputs).To(HaveLen(1), "the tool's output reached the model once:\n%s", run)
		Expect(outputs[0]).To(ContainSubstring("REWRITTEN lookup of "+marker), "the middleware's output reached the model")
		Expect(outputs[0]).NotTo(ContainSubstring("RAW"), "the tool's own output did not")
		Expect(s.lastTurn(ctx).Outcome).To(Equal(v1alpha1.TurnSucceeded))
	})

	// The same plugin with a second middleware whose matcher names exec,
	// Codex's native shell: its results never pass through the gateway, so
	// the plugin refuses the attempt before anything is sent, naming the
	// middleware's plugin, and OpenClaw does not run the turn elsewhere. A
	// config of its own: `agent --local`, not the suite's gateway.
	It("refuses a turn, naming the plugin, when a middleware registered for codex covers a native tool", func(ctx context.Context) {
		covering := gateway.withConfig(func(cfg map[string]any) {
			cfg["plugins"].(map[string]any)["entries"].(map[string]any)[rewriterPlugin] = map[string]any{
				"enabled": true, "config": map[string]any{"nativeMatcher": []string{"exec"}},
			}
		})
		marker := "marker-" + randomHex()
		stub.When(marker, stubmodel.Text("Never "+marker))
		s := newSession(ctx, "")

		run := covering.turn(ctx, s.id, s.key, "Say hello "+marker)

		Expect(run.exit).To(Equal(1), "%s", run)
		Eventually(run.console).WithTimeout(30*time.Second).Should(
			ContainSubstring(`the tool-result middleware of plugin "`+rewriterPlugin+`" covers exec`), "%s", run)
		Eventually(run.console).WithTimeout(30*time.Second).Should(ContainSubstring("not falling back to embedded OpenClaw backend"), "%s", run)
		Expect(requestsNaming(marker)).To(BeZero(), "no model request, from Codex or OpenClaw's embedded runtime:\n%s", run)
		Expect(s.get(ctx).Status.LastTurn).To(BeNil(), "the cluster ran no turn")
	})
})
