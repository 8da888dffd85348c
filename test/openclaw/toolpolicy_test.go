//go:build e2e

package openclaw

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// exactHarness is a Codex harness (the suite's Codex, codexHarness's
// support facts) that declares Exact tool-policy support and the plugin's
// safe-deny list, so the cluster enforces those denies itself.
const exactHarness = "codex-exact"

// deniedTools are denied by the restricted gateway's agent: Codex's native
// web search and one of OpenClaw's own tools, both in the plugin's safe-deny
// list. session_status is a tool the plain gateway offers (the host tool
// round-trip spec calls it); web_search is offered natively by Codex.
var deniedTools = []string{wire.SafeDenyWebSearch, wire.SafeDenySessionStatus}

var _ = Describe("OpenClaw's tool policy with the plugin's registration", Ordered, func() {
	var restricted *openClaw

	BeforeAll(func(ctx context.Context) {
		createExactHarness(ctx)
		restricted = gateway.withConfig(func(cfg map[string]any) {
			// The main agent's deny list: an explicit OpenClaw tool-policy
			// layer, which OpenClaw rejected before calling a harness that
			// declared no conversationToolPolicySupport.
			cfg["agents"].(map[string]any)["entries"] = map[string]any{
				"main": map[string]any{"tools": map[string]any{"deny": deniedTools}},
			}
		})
	})

	// The control: the same harness, no deny list; both tools reach the model.
	It("offers the model the tools the restricted gateway denies when nothing denies them (the control)", func(ctx context.Context) {
		marker := "marker-" + randomHex()
		stub.When(marker, stubmodel.Text("Control reply "+marker))
		s := newSession(ctx, exactHarness)

		run := gateway.turn(ctx, s.id, s.key, "Which tools? "+marker)

		Expect(run.exit).To(Equal(0), "%s", run)
		reqs := modelRequests(model, marker)
		Expect(reqs).To(HaveLen(1), "one model request, from the cluster's Codex:\n%s", run)
		Expect(offeredTools(reqs[0])).To(ContainElements(deniedTools), "%s", run)
		Expect(s.lastTurn(ctx).Outcome).To(Equal(v1alpha1.TurnSucceeded))
	})

	It("runs a conversation under an agent's deny list on the cluster, and the denied tools never reach the model", func(ctx context.Context) {
		marker := "marker-" + randomHex()
		reply := "Restricted reply " + marker
		stub.When(marker, stubmodel.Text(reply))
		s := newSession(ctx, exactHarness)

		run := restricted.turn(ctx, s.id, s.key, "Which tools? "+marker)

		Expect(run.exit).To(Equal(0), "%s", run)
		Expect(run.result().texts()).To(ContainElement(ContainSubstring(reply)), "%s", run)
		Expect(run.result().Meta.AgentMeta.AgentHarnessID).To(Equal(pluginID), "%s", run)
		reqs := modelRequests(model, marker)
		Expect(reqs).To(HaveLen(1), "one model request, from the cluster's Codex:\n%s", run)
		offered := offeredTools(reqs[0])
		Expect(offered).NotTo(BeEmpty(), "Codex offered the model its other tools")
		for _, denied := range deniedTools {
			Expect(offered).NotTo(ContainElement(denied), "the denied %s, natively or as OpenClaw's tool:\n%s", denied, run)
		}
		Expect(s.lastTurn(ctx).Outcome).To(Equal(v1alpha1.TurnSucceeded))
		Expect(s.get(ctx).Status.AgentHarnessID).To(Equal(exactHarness))
	})

	// The suite's codex declares no Exact support: the dispatcher refuses
	// the restricted turn with ToolPolicyUnenforceable scoped to the
	// harness, and OpenClaw moves on to the model's configured fallback on
	// its own runtime — visibly, never the cluster with the policy relaxed.
	It("refuses a restricted turn on a harness that cannot enforce it, scoped to the harness, so OpenClaw's fallback runs it", func(ctx context.Context) {
		marker := "marker-" + randomHex()
		s := newSession(ctx, codexHarness)

		run := restricted.turn(ctx, s.id, s.key, "Say hello "+marker)

		Expect(run.stdout+run.stderr).To(ContainSubstring("ToolPolicyUnenforceable"), "%s", run)
		Expect(run.exit).To(Equal(0), "OpenClaw's fallback model ran the turn:\n%s", run)
		Expect(run.result().Meta.AgentMeta.AgentHarnessID).NotTo(Equal(pluginID), "%s", run)
		Expect(modelRequests(model, marker)).To(BeEmpty(), "no request for the cluster's model:\n%s", run)
		Expect(modelRequests(embeddedModel, marker)).NotTo(BeEmpty(), "OpenClaw's embedded runtime ran the fallback:\n%s", run)
		Expect(s.get(ctx).Status.LastTurn).To(BeNil(), "the cluster ran no turn")
	})
})

// withConfig is the same gateway (its HOME, the installed plugin) with a
// config of its own: a copy of this one's, changed by mutate.
func (o *openClaw) withConfig(mutate func(cfg map[string]any)) *openClaw {
	GinkgoHelper()
	b, err := os.ReadFile(o.configPath())
	Expect(err).NotTo(HaveOccurred())
	var cfg map[string]any
	Expect(json.Unmarshal(b, &cfg)).To(Succeed())
	mutate(cfg)
	b, err = json.MarshalIndent(cfg, "", "  ")
	Expect(err).NotTo(HaveOccurred())
	other := *o
	other.config = filepath.Join(GinkgoT().TempDir(), "openclaw.json")
	Expect(os.WriteFile(other.config, b, 0o600)).To(Succeed())
	return &other
}

// createExactHarness creates exactHarness from the suite's codex harness
// (its server and support facts) with Exact support and the plugin's
// safe-deny list, and waits until it is Ready.
func createExactHarness(ctx context.Context) {
	GinkgoHelper()
	base := &v1alpha1.AgentHarness{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: agentsNS, Name: codexHarness}, base)).To(Succeed())
	h := &v1alpha1.AgentHarness{
		ObjectMeta: metav1.ObjectMeta{Name: exactHarness, Namespace: agentsNS},
		Spec:       *base.Spec.DeepCopy(),
	}
	h.Spec.HarnessID = exactHarness
	h.Spec.ConversationToolPolicySupport = v1alpha1.ToolPolicySupportExact
	h.Spec.ConversationToolPolicySafeDenyTools = nil
	for _, name := range wire.SafeDenyTools() {
		h.Spec.ConversationToolPolicySafeDenyTools = append(h.Spec.ConversationToolPolicySafeDenyTools, v1alpha1.ToolID(name))
	}
	if err := k8s.Create(ctx, h); !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
	waitHarnessReady(ctx, k8s, exactHarness)
}

// modelRequests are the stub's requests for m (a provider/model ref) whose
// body names marker. OpenClaw's own side requests (an activity recap on
// another model quotes the prompt) are not among them.
func modelRequests(m, marker string) []*stubmodel.Request {
	var out []*stubmodel.Request
	for _, r := range stub.Requests() {
		if r.Model == strings.TrimPrefix(m, "openai/") && strings.Contains(string(r.Body), marker) {
			out = append(out, r)
		}
	}
	return out
}

// offeredTools are the tools a model request offers, however Codex offered
// them: the request's tools (functions by name, native tools such as
// web_search by type), additional_tools input items, and the tools nested
// in code mode's exec.
func offeredTools(r *stubmodel.Request) []string {
	return append(append(r.ToolNames(), r.AdditionalTools()...), r.CodeModeTools()...)
}
