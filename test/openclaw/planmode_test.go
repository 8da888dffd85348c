//go:build e2e

package openclaw

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// Plan mode as a user of the long-lived gateway meets it, with OpenClaw's
// own client: chat messages on one session key (`chat.send`, what a chat
// surface sends), the plugin's `/plan on` among them. Codex asks the user
// only in plan mode; its question reaches OpenClaw's Gateway, and the
// person's next plain-text message on the session is its answer, which the
// model gets as the tool's output.
var _ = Describe("Plan mode for a session's turns on the cluster", func() {
	It("asks the user a plan-mode question through OpenClaw's reply path, and the model gets the answer", func(ctx context.Context) {
		gw := gateway.served
		Expect(gw).NotTo(BeNil(), "the suite's long-lived gateway")
		suffix := randomHex()
		key := "agent:main:plan-" + suffix
		question := "Which environment for " + suffix + "?"
		answer := "only the canary pool " + suffix
		ask := stubmodel.CallJSON("request_user_input", map[string]any{"questions": []any{map[string]any{
			"id": "env", "header": "Target", "question": question, "options": []any{
				map[string]any{"label": "staging", "description": "the test cluster"},
				map[string]any{"label": "production", "description": "the live cluster"}}}}})
		defaultPrompt, planPrompt := "ASK-DEFAULT "+suffix, "ASK-PLAN "+suffix
		stub.When(defaultPrompt, ask)
		stub.When(planPrompt, ask)

		send := func(message string) {
			GinkgoHelper()
			out := gw.call(ctx, "chat.send", map[string]any{"sessionKey": key, "message": message, "idempotencyKey": "plan-" + randomHex()})
			Expect(out).To(ContainSubstring(`"started"`), "chat.send accepted %q", message)
		}
		history := func() string { return gw.call(ctx, "chat.history", map[string]any{"sessionKey": key}) }
		outputOf := func(prompt string) func() []stubmodel.FunctionCallOutput {
			return func() []stubmodel.FunctionCallOutput {
				var outs []stubmodel.FunctionCallOutput
				for _, r := range stub.RequestsContaining(prompt) {
					outs = append(outs, r.FunctionCallOutputs()...)
				}
				return outs
			}
		}

		// The control: the same question in the default mode never reaches
		// anyone; Codex answers the model itself.
		send(defaultPrompt)
		Eventually(ctx, outputOf(defaultPrompt)).WithTimeout(turnTimeout).Should(ContainElement(
			HaveField("Output", ContainSubstring("request_user_input is unavailable in Default mode"))))
		Eventually(ctx, turnsOf(ctx, key)).WithTimeout(turnTimeout).WithPolling(time.Second).Should(Equal(int64(1)),
			"the default-mode turn ended on the cluster")
		// And in OpenClaw: a message sent while a run is active would steer it.
		Eventually(ctx, func() bool { return activeRun(history()) }).WithTimeout(time.Minute).WithPolling(time.Second).Should(BeFalse())

		send("/plan on")
		Eventually(ctx, history).WithTimeout(time.Minute).WithPolling(time.Second).Should(ContainSubstring("Plan mode is now on for this session's turns on the cluster"),
			"the plugin's command answered on the session")

		send(planPrompt)
		Eventually(ctx, func() []string { return pendingQuestions(gw.call(ctx, "question.list", map[string]any{}), key) }).
			WithTimeout(turnTimeout).WithPolling(time.Second).Should(ContainElement(ContainSubstring(question)), "the runtime's question is recorded on OpenClaw's Gateway")
		// Codex sends the thread's history again: the control's output is in
		// every request since, an answer to this question not yet.
		Expect(outputOf(planPrompt)()).NotTo(ContainElement(HaveField("Output", ContainSubstring(`"answers"`))), "the model waits for the person's answer")

		// The person's next plain-text message on the session is the answer.
		send(answer)
		Eventually(ctx, outputOf(planPrompt)).WithTimeout(turnTimeout).Should(ContainElement(
			HaveField("Output", MatchJSON(`{"answers":{"env":{"answers":["`+answer+`"]}}}`))), "the model's next request carries the answer as the tool's output")
		Eventually(ctx, turnsOf(ctx, key)).WithTimeout(turnTimeout).WithPolling(time.Second).Should(Equal(int64(2)),
			"the plan-mode turn ended on the cluster")
		Expect(stub.RequestsContaining(answer)).To(BeEmpty(), "the answer started no turn of its own")
	})
})

// turnsOf counts the turns the cluster ran for the AgentSession of OpenClaw's
// session key (OpenClaw chose the session's id; the plugin made it).
func turnsOf(ctx context.Context, sessionKey string) func() (int64, error) {
	return func() (int64, error) {
		list := &v1alpha1.AgentSessionList{}
		if err := k8s.List(ctx, list, client.InNamespace(agentsNS)); err != nil {
			return 0, err
		}
		for _, s := range list.Items {
			if s.Spec.SessionKey == sessionKey && s.Status.Counters != nil {
				return s.Status.Counters.Turns, nil
			}
		}
		return 0, nil
	}
}

// activeRun says whether chat.history's answer shows a run of the session
// still going.
func activeRun(history string) bool {
	GinkgoHelper()
	var h struct {
		SessionInfo struct {
			HasActiveRun bool `json:"hasActiveRun"`
		} `json:"sessionInfo"`
	}
	Expect(json.Unmarshal([]byte(strings.TrimSpace(history)), &h)).To(Succeed(), "chat.history:\n%s", history)
	return h.SessionInfo.HasActiveRun
}

// pendingQuestions are the texts of the questions question.list's answer
// holds for sessionKey that still wait for an answer.
func pendingQuestions(answer, sessionKey string) []string {
	GinkgoHelper()
	var list struct {
		Questions []struct {
			SessionKey string `json:"sessionKey"`
			Status     string `json:"status"`
			Questions  []struct {
				Question string `json:"question"`
			} `json:"questions"`
		} `json:"questions"`
	}
	Expect(json.Unmarshal([]byte(strings.TrimSpace(answer)), &list)).To(Succeed(), "question.list:\n%s", answer)
	var texts []string
	for _, q := range list.Questions {
		if q.SessionKey != sessionKey || q.Status != "pending" {
			continue
		}
		for _, each := range q.Questions {
			texts = append(texts, each.Question)
		}
	}
	return texts
}
