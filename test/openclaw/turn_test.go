//go:build e2e

package openclaw

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// The specs that read one plain cluster turn on a new OpenClaw session share
// it: BeforeAll runs it once, and each spec checks its own promise about
// that run. The other cluster-turn specs still start from a session
// `kubectl harness session create` made.
var _ = Describe("A new OpenClaw session's first turn on the cluster", Ordered, func() {
	var (
		marker, reply string
		run           agentRun
		made          []v1alpha1.AgentSession
		id, key       string
	)
	BeforeAll(func(ctx context.Context) {
		marker = "marker-" + randomHex()
		reply = "Cluster reply " + marker
		stub.When(marker, stubmodel.Text(reply))
		suffix := randomHex()
		id, key = "OpenClaw_E2E-"+suffix, "agent:main:e2e-"+suffix

		run = gateway.turn(ctx, id, key, "Say hello "+marker)

		Expect(run.exit).To(Equal(0), "%s", run)
		// The plugin returns at the `result` event, which the dispatcher
		// streams before it writes the turn's status: wait for the status.
		Eventually(func(g Gomega) {
			made = nil
			list := &v1alpha1.AgentSessionList{}
			g.Expect(k8s.List(ctx, list, client.InNamespace(agentsNS))).To(Succeed())
			for _, s := range list.Items {
				if s.Spec.SessionID == id {
					made = append(made, s)
				}
			}
			g.Expect(made).NotTo(BeEmpty())
			g.Expect(made[0].Status.LastTurn).NotTo(BeNil())
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(Succeed(), "the AgentSession of OpenClaw's session %s with its turn recorded", id)
	})

	It("runs a turn on the cluster's Codex and shows the stub model's reply and the plugin's harness id", func() {
		res := run.result()
		Expect(res.texts()).To(ContainElement(ContainSubstring(reply)), "%s", run)
		Expect(stub.RequestsContaining(marker)).To(HaveLen(1), "one model request, from the cluster's Codex")
		Expect(requestsNaming(marker)).To(Equal(1), "no other request (OpenClaw's own) carried the prompt")
		Expect(res.Meta.AgentMeta.AgentHarnessID).To(Equal(pluginID), "%s", run)

		Expect(made).To(HaveLen(1), "one AgentSession for OpenClaw's session %s", id)
		sess := made[0]
		Expect(sess.Status.LastTurn).NotTo(BeNil())
		Expect(sess.Status.LastTurn.Outcome).To(Equal(v1alpha1.TurnSucceeded))
		Expect(sess.Status.AgentHarnessID).To(Equal(codexHarness), "the cluster's harness owns the native thread")
		Expect(sess.Status.NativeBinding).NotTo(BeNil())
		Expect(sess.Status.NativeBinding.HarnessName).To(Equal(codexHarness))
		Expect(sess.Status.NativeBinding.ThreadID).NotTo(BeEmpty())
	})

	It("creates the AgentSession of a new OpenClaw session on its first turn", func() {
		Expect(made).To(HaveLen(1), "one AgentSession for OpenClaw's session %s", id)
		Expect(made[0].Spec.SessionKey).To(Equal(key))
		Expect(made[0].Spec.Model).To(Equal(model))
		Expect(made[0].Status.LastTurn).NotTo(BeNil())
		Expect(made[0].Status.LastTurn.Outcome).To(Equal(v1alpha1.TurnSucceeded))
	})

	// What OpenClaw prepared is what it handed the plugin's supports() (the
	// plugin logs it at debug level, as OpenClaw gave it: support-log.ts);
	// what the dispatcher received is in its `agent harness selected`
	// record. Both are JSON objects of the same fields, compared whole: a
	// fact the plugin dropped, added or changed fails the spec. The plugin
	// logs a question once per harness instance, and the gateway's instance
	// lives for the whole suite: the facts are read from the whole log (the
	// gateway's and other specs' `--local` runs write there too, each
	// prepared from OpenClaw's own state).
	It("hands the dispatcher OpenClaw's route facts unchanged", func() {
		Expect(made).To(HaveLen(1), "one AgentSession for OpenClaw's session %s", id)
		prepared := gateway.preparedRouteFacts(0, model)
		Expect(prepared).NotTo(BeEmpty(), "route facts OpenClaw prepared for an attempt on %s:\n%s", model, run)
		received := cluster.receivedRouteFacts(agentsNS + "/" + made[0].Name)
		Expect(received).To(HaveLen(1), "one decision for the session's turn")
		Expect(prepared).To(ContainElement(MatchJSON(received[0])), "the dispatcher decided on facts OpenClaw prepared")
		// Not two empty objects: OpenClaw prepared the facts a route has.
		var facts map[string]any
		Expect(json.Unmarshal([]byte(received[0]), &facts)).To(Succeed())
		Expect(facts).To(HaveKey("api"))
		Expect(facts).To(HaveKey("requestTransportOverrides"))
		Expect(facts).To(HaveKey("preparedAuth"))
		AddReportEntry("route facts OpenClaw prepared and the dispatcher received", received[0])
	})
})

var _ = Describe("OpenClaw with the harness-operator plugin", func() {

	It("fails closed with the cluster's code when the selected harness's default support facts refuse OpenClaw's route facts", func(ctx context.Context) {
		marker := "marker-" + randomHex()
		s := newSession(ctx, defaultsHarness)
		before := len(stub.Requests())

		run := gateway.turn(ctx, s.id, s.key, "Say hello "+marker)

		Expect(run.exit).To(Equal(1), "%s", run)
		Expect(run.output()).To(ContainSubstring("HarnessUnsupported"), "%s", run)
		Eventually(run.console).WithTimeout(30*time.Second).Should(ContainSubstring("not falling back to embedded OpenClaw backend"), "%s", run)
		// OpenClaw's own provider is the stub too: an embedded fallback
		// would have sent it a request (the next spec is the control).
		Expect(stub.Requests()).To(HaveLen(before), "no model request, from Codex or from OpenClaw's embedded runtime:\n%s", run)
		Expect(s.get(ctx).Status.NativeBinding).To(BeNil(), "no native thread was started")
	})

	// The control that gives "no model request" above its meaning: a turn
	// OpenClaw runs itself reaches the stub model.
	It("lets OpenClaw's embedded runtime reach the stub model for a model pinned to it", func(ctx context.Context) {
		marker := "marker-" + randomHex()
		s := newSession(ctx, "")

		run := gateway.turn(ctx, s.id, s.key, "Say hello "+marker, "--model", embeddedModel)

		Expect(run.exit).To(Equal(0), "%s", run)
		Expect(requestsNaming(marker)).To(Equal(1), "OpenClaw's own request:\n%s", run)
		Expect(run.result().Meta.AgentMeta.AgentHarnessID).NotTo(Equal(pluginID), "%s", run)
		Expect(s.get(ctx).Status.LastTurn).To(BeNil(), "the cluster ran no turn")
	})

	// session_status is one of OpenClaw's own tools the plugin offers the
	// cluster (read-only: it reports the OpenClaw session): the model's call
	// reaches Codex's dynamic tools, the dispatcher streams it to the plugin,
	// OpenClaw's tool surface runs it, and its output is the next model
	// request's function_call_output.
	It("round-trips a host tool call through OpenClaw's tool surface", func(ctx context.Context) {
		marker := "marker-" + randomHex()
		reply := "Tool reply " + marker
		stub.When(marker, stubmodel.Call(stubmodel.FunctionCall{Name: "session_status", Arguments: `{}`, CallID: "call_" + marker}),
			stubmodel.Text(reply))
		s := newSession(ctx, "")

		run := gateway.turn(ctx, s.id, s.key, "What is my session's status? "+marker)

		Expect(run.exit).To(Equal(0), "%s", run)
		Expect(run.result().texts()).To(ContainElement(ContainSubstring(reply)), "%s", run)
		reqs := stub.RequestsContaining(marker)
		Expect(reqs).To(HaveLen(2), "the call, then the answer with the tool's output")
		Expect(reqs[0].ToolNames()).To(ContainElement("session_status"), "OpenClaw's tool was offered to the model")
		var outputs []string
		for _, o := range reqs[1].FunctionCallOutputs() {
			if o.CallID == "call_"+marker {
				outputs = append(outputs, o.Output)
			}
		}
		Expect(outputs).To(HaveLen(1), "the tool's output reached the model once")
		// session_status's own report (it begins "🦞 OpenClaw <version>"), not
		// a refusal or a timeout of the call.
		Expect(outputs[0]).To(ContainSubstring("🦞 OpenClaw "), "OpenClaw's tool ran and answered")
	})

	// The gateway runs the middle turn itself (its model pinned to OpenClaw's
	// embedded runtime); the plugin sends it with the next cluster turn as
	// gatewayTranscript, so the cluster's thread has the whole conversation.
	It("moves one session cluster → embedded → cluster and sends the embedded turn in the next cluster turn's transcript", func(ctx context.Context) {
		s := newSession(ctx, "")
		first := "marker-" + randomHex()
		stub.When(first, stubmodel.Text("First cluster reply "+first))
		run := gateway.turn(ctx, s.id, s.key, "Cluster question "+first)
		Expect(run.exit).To(Equal(0), "%s", run)

		embeddedPrompt := "Embedded question marker-" + randomHex()
		run = gateway.turn(ctx, s.id, s.key, embeddedPrompt, "--model", embeddedModel)
		Expect(run.exit).To(Equal(0), "%s", run)
		Expect(run.result().Meta.AgentMeta.AgentHarnessID).NotTo(Equal(pluginID), "the middle turn ran embedded:\n%s", run)
		embeddedReply := run.result().texts()
		Expect(embeddedReply).NotTo(BeEmpty(), "%s", run)

		last := "marker-" + randomHex()
		stub.When(last, stubmodel.Text("Last cluster reply "+last))
		run = gateway.turn(ctx, s.id, s.key, "Cluster again "+last)
		Expect(run.exit).To(Equal(0), "%s", run)
		reqs := stub.RequestsContaining(last)
		Expect(reqs).To(HaveLen(1), "%s", run)
		Expect(reqs[0].UserTexts()).To(ContainElements(ContainSubstring(first), ContainSubstring(embeddedPrompt)),
			"the cluster's thread got the embedded turn's question")
		Expect(reqs[0].AssistantTexts()).To(ContainElement(ContainSubstring(embeddedReply[len(embeddedReply)-1])),
			"and its reply")
	})
})

// session is an AgentSession for one OpenClaw session.
type session struct {
	id, key, name string
}

// newSession creates the AgentSession of a new OpenClaw session with
// `kubectl harness session create` (the name derived from the id, as the
// plugin derives it) and, when override is set, its spec.runtimeOverride.
// The id has capitals and an underscore, so the name is not the id.
func newSession(ctx context.Context, override string) session {
	GinkgoHelper()
	s := newModelSession(ctx, model)
	if override != "" {
		sess := s.get(ctx)
		patch := client.MergeFrom(sess.DeepCopy())
		sess.Spec.RuntimeOverride = v1alpha1.RuntimeID(override)
		Expect(k8s.Patch(ctx, sess, patch)).To(Succeed())
	}
	return s
}

// newModelSession creates the AgentSession of a new OpenClaw session on m.
func newModelSession(ctx context.Context, m string) session {
	GinkgoHelper()
	suffix := randomHex()
	s := session{id: "OpenClaw_E2E-" + suffix, key: "agent:main:e2e-" + suffix}
	cmd := exec.CommandContext(ctx, filepath.Join(cluster.bin, "kubectl-harness"), "session", "create",
		"--kubeconfig", cluster.kubeconfig, "-n", agentsNS, "--model", m, "--key", s.key, "--session-id", s.id)
	out, err := cmd.Output()
	Expect(err).NotTo(HaveOccurred(), "kubectl harness session create: %s", exitDetail(err))
	s.name = strings.TrimSpace(string(out))
	return s
}

// lastTurn waits for the session's status.lastTurn: the plugin returns at
// the `result` event, which the dispatcher streams before the turn's status.
func (s session) lastTurn(ctx context.Context) *v1alpha1.LastTurn {
	GinkgoHelper()
	var last *v1alpha1.LastTurn
	Eventually(func() *v1alpha1.LastTurn {
		last = s.get(ctx).Status.LastTurn
		return last
	}).WithContext(ctx).WithTimeout(30*time.Second).ShouldNot(BeNil(), "status.lastTurn of %s", s.name)
	return last
}

func (s session) get(ctx context.Context) *v1alpha1.AgentSession {
	GinkgoHelper()
	sess := &v1alpha1.AgentSession{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: agentsNS, Name: s.name}, sess)).To(Succeed())
	return sess
}

// requestsNaming counts the model requests whose body contains marker
// anywhere: OpenClaw's own requests shape their input otherwise than Codex,
// whose latest user message stubmodel.RequestsContaining reads.
func requestsNaming(marker string) int {
	n := 0
	for _, r := range stub.Requests() {
		if strings.Contains(string(r.Body), marker) {
			n++
		}
	}
	return n
}

func randomHex() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
