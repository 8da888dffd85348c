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

// secondModel is an OpenAI model pinned to the plugin's harness for this
// spec alone (no other spec's RuntimePolicy names it, which the long-lived
// gateway's registry could still hold); the suite's policy sends every
// OpenAI model to the cluster's `codex`.
const secondModel = "openai/gpt-5.4-pro"

// A session's model may change between turns (OpenClaw's /model, or `openclaw
// agent --model` on the same session): the plugin writes the new model to the
// AgentSession before the turn, so the dispatcher, which refuses an attempt
// that contradicts spec.model, runs it. OpenClaw's embedded fallback model
// also answers from the stub, so the harness id and Codex's requests tell a
// cluster turn from a turn OpenClaw ran itself.
var _ = Describe("A session whose model changes between turns", func() {
	It("runs the next turn on the cluster with the new model, on the same native thread, and the AgentSession's spec.model follows", func(ctx context.Context) {
		g := gateway
		suffix := randomHex()
		id, key := "OpenClaw_E2E-"+suffix, "agent:main:e2e-"+suffix

		first := "marker-" + randomHex()
		stub.When(first, stubmodel.Text("First reply "+first))
		run := g.turn(ctx, id, key, "First question "+first)
		Expect(run.exit).To(Equal(0), "%s", run)
		reqs := codexRequests(first)
		Expect(reqs).To(HaveLen(1), "%s", run)
		Expect(reqs[0].Model).To(Equal(strings.TrimPrefix(model, "openai/")), "the first turn ran on the session's first model")
		s := pluginSession(ctx, id, key)
		before := s.lastTurn(ctx)
		thread := s.get(ctx).Status.NativeBinding
		Expect(thread).NotTo(BeNil())

		second := "marker-" + randomHex()
		reply := "Second reply " + second
		stub.When(second, stubmodel.Text(reply))
		run = g.turn(ctx, id, key, "Second question "+second, "--model", secondModel)

		Expect(run.exit).To(Equal(0), "%s", run)
		res := run.result()
		Expect(res.Meta.AgentMeta.AgentHarnessID).To(Equal(pluginID), "the cluster ran the turn, not OpenClaw's fallback:\n%s", run)
		Expect(res.texts()).To(ContainElement(ContainSubstring(reply)), "%s", run)
		reqs = codexRequests(second)
		Expect(reqs).To(HaveLen(1), "one request of Codex's:\n%s", run)
		Expect(reqs[0].Model).To(Equal(strings.TrimPrefix(secondModel, "openai/")), "Codex asked the new model")
		Expect(reqs[0].UserTexts()).To(ContainElement(ContainSubstring(first)), "the conversation went on: the first turn is in the request")

		Eventually(func() string {
			return s.lastTurn(ctx).RunID
		}).WithContext(ctx).WithTimeout(30*time.Second).ShouldNot(Equal(before.RunID), "the second turn's status")
		sess := s.get(ctx)
		Expect(sess.Spec.Model).To(Equal(secondModel), "the plugin wrote the new model")
		Expect(sess.Status.LastTurn.Outcome).To(Equal(v1alpha1.TurnSucceeded))
		Expect(sess.Status.NativeBinding).NotTo(BeNil())
		Expect(sess.Status.NativeBinding.ThreadID).To(Equal(thread.ThreadID), "the same harness resumed its thread with the new model: no re-seed")
	})
})

// codexRequests are the stub's requests from the cluster's Codex (its turn
// metadata header) whose latest user message holds marker: OpenClaw's own
// side requests (an activity recap) may quote the prompt too.
func codexRequests(marker string) []*stubmodel.Request {
	var out []*stubmodel.Request
	for _, r := range stub.RequestsContaining(marker) {
		if r.Header.Get("X-Codex-Turn-Metadata") != "" {
			out = append(out, r)
		}
	}
	return out
}

// pluginSession is the AgentSession the plugin created for an OpenClaw session.
func pluginSession(ctx context.Context, id, key string) session {
	GinkgoHelper()
	s := session{id: id, key: key}
	Eventually(func(g Gomega) {
		list := &v1alpha1.AgentSessionList{}
		g.Expect(k8s.List(ctx, list, client.InNamespace(agentsNS))).To(Succeed())
		var names []string
		for _, item := range list.Items {
			if item.Spec.SessionID == id {
				names = append(names, item.Name)
			}
		}
		g.Expect(names).To(HaveLen(1), "one AgentSession of OpenClaw's session %s", id)
		s.name = names[0]
	}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	return s
}
