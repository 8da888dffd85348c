//go:build e2e

package openclaw

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// A chat surface (OpenClaw's Control UI among them) sends a message with
// `chat.send` and shows the session's transcript from `chat.history`. For
// an embedded harness OpenClaw writes the person's message and leaves the
// reply to the harness: the plugin mirrors the cluster's turn into the
// transcript, and the reply is there once, as the assistant's message,
// whichever client started the turn (an `openclaw agent` turn's: the
// long-lived gateway's concurrent spec).
var _ = Describe("A cluster turn's reply in OpenClaw's chat.history", func() {
	It("is the assistant's message once the run a chat.send started ends", func(ctx context.Context) {
		gw := gateway.served
		Expect(gw).NotTo(BeNil(), "the suite's long-lived gateway")
		marker := "HISTORY " + randomHex()
		reply := "History reply " + marker
		stub.When(marker, stubmodel.Text(reply))
		key := "agent:main:history-" + randomHex()

		out := gw.call(ctx, "chat.send", map[string]any{"sessionKey": key, "message": marker, "idempotencyKey": "history-" + randomHex()})
		Expect(out).To(ContainSubstring(`"started"`), "chat.send accepted the message")
		history := func() string { return gw.call(ctx, "chat.history", map[string]any{"sessionKey": key}) }
		Eventually(ctx, turnsOf(ctx, key)).WithTimeout(turnTimeout).WithPolling(time.Second).Should(Equal(int64(1)),
			"the turn ended on the cluster")
		// Each read is a CLI process: the last one read is the one checked.
		var h string
		Eventually(ctx, func() bool { h = history(); return activeRun(h) }).WithTimeout(time.Minute).WithPolling(time.Second).Should(BeFalse(),
			"the run ended in OpenClaw")
		Expect(historyTexts(h, "user")).To(ContainElement(marker), "chat.history:\n%s", h)
		Expect(historyTexts(h, "assistant")).To(ConsistOf(reply), "chat.history:\n%s", h)
	})
})

// historyTexts are the texts of chat.history's messages of role.
func historyTexts(history, role string) []string {
	GinkgoHelper()
	var h struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	Expect(json.Unmarshal([]byte(strings.TrimSpace(history)), &h)).To(Succeed(), "chat.history:\n%s", history)
	var texts []string
	for _, m := range h.Messages {
		if m.Role != role {
			continue
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			texts = append(texts, s)
			continue
		}
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(m.Content, &parts) == nil {
			for _, p := range parts {
				if p.Type == "text" {
					texts = append(texts, p.Text)
				}
			}
		}
	}
	return texts
}
