//go:build e2e

package openclaw

import (
	"context"
	"encoding/json"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/testutil/mcpserver"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// mcpHarness is the suite's Codex with one MCP server admitted: the
// loopback server this spec runs (plain http on loopback, which the
// dispatcher devcluster starts admits in development mode).
const mcpHarness = "codex-mcp"

// The MCP server's name in OpenClaw's config (mcp.servers) and its tool.
const (
	mcpServerName = "docs"
	mcpToolName   = "lookup"
)

// A gateway of its own: its config names the MCP server, which every turn
// through it then carries, so the shared gateway's specs see none of it.
var _ = Describe("MCP servers OpenClaw's config names", Ordered, func() {
	var (
		mcp   *mcpserver.Server
		owner *openClaw
	)

	BeforeAll(func(ctx context.Context) {
		mcp = mcpserver.Start(GinkgoTB(), mcpserver.Tool{Name: mcpToolName, Description: "Look a word up", Reply: "looked up",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"word":{"type":"string"}}}`),
			Annotations: json.RawMessage(`{"readOnlyHint":true}`)})
		createMCPHarness(ctx, mcp.URL)
		owner = newOpenClaw(gateway.tools, gateway.tarball, stub.BaseURL(), cluster, gateway.identity)
		owner.serve(ctx, func(cfg map[string]any) {
			cfg["mcp"] = map[string]any{"servers": map[string]any{
				mcpServerName: map[string]any{"url": mcp.URL, "transport": "streamable-http"},
			}}
		})
	})

	It("reach the session's thread on the cluster, and OpenClaw's Tool access view lists the cluster's MCP tools", func(ctx context.Context) {
		marker := "marker-" + randomHex()
		stub.When(marker, stubmodel.Text("MCP reply "+marker))
		s := newSession(ctx, mcpHarness)

		run := owner.turn(ctx, s.id, s.key, "Which tools? "+marker)

		Expect(run.exit).To(Equal(0), "%s", run)
		Expect(run.result().Meta.AgentMeta.AgentHarnessID).To(Equal(pluginID), "%s", run)
		reqs := modelRequests(model, marker)
		Expect(reqs).To(HaveLen(1), "one model request, from the cluster's Codex:\n%s", run)
		// Codex offers a catalog model an MCP server's tools behind its
		// tool_search, naming the server's namespace; other models get the
		// tool itself.
		offered := append(offeredTools(reqs[0]), deferredNamespaces(reqs[0])...)
		Expect(offered).To(Or(ContainElement("mcp__"+mcpServerName+"."+mcpToolName), ContainElement("mcp__"+mcpServerName)),
			"the cluster's Codex connected the server OpenClaw's config names and offered its tools:\n%s", run)
		Expect(s.lastTurn(ctx).Outcome).To(Equal(v1alpha1.TurnSucceeded))
		Expect(s.get(ctx).Status.AgentHarnessID).To(Equal(mcpHarness))
		counters := s.get(ctx).Status.Counters
		Expect(counters).NotTo(BeNil())
		turns := counters.Turns
		requests := len(stub.Requests())

		// The composer's Tool access view: the gateway method it reads,
		// through OpenClaw's own client.
		view := owner.served.call(ctx, "tools.effective", map[string]any{"sessionKey": s.key})

		Expect(mcpTools(view)).To(ContainElement(mcpServerName+"/"+mcpToolName), "the view lists the cluster's MCP tool:\n%s", view)
		Expect(stub.Requests()).To(HaveLen(requests), "the view asked no model")
		Expect(mcp.Calls()).To(BeEmpty(), "nor called the tool")
		Expect(s.get(ctx).Status.Counters.Turns).To(Equal(turns), "nor ran a turn on the cluster")
	})
})

// mcpTools are the MCP tools (server/tool) an answer of tools.effective
// lists, in any of its groups.
func mcpTools(answer string) []string {
	GinkgoHelper()
	var inv struct {
		Groups []struct {
			Tools []struct {
				Source      string `json:"source"`
				MCPServer   string `json:"mcpServer"`
				MCPToolName string `json:"mcpToolName"`
			} `json:"tools"`
		} `json:"groups"`
	}
	Expect(json.Unmarshal([]byte(strings.TrimSpace(answer)), &inv)).To(Succeed(), "tools.effective:\n%s", answer)
	var out []string
	for _, g := range inv.Groups {
		for _, t := range g.Tools {
			if t.Source == "mcp" {
				out = append(out, t.MCPServer+"/"+t.MCPToolName)
			}
		}
	}
	return out
}

// deferredNamespaces are the tool namespaces a model request names as
// deferred (Codex's "Deferred tool namespaces:" list beside tool_search):
// their tools are found with tool_search rather than listed.
func deferredNamespaces(r *stubmodel.Request) []string {
	var out []string
	for _, it := range r.Input {
		_, rest, ok := strings.Cut(it.Text(), "Deferred tool namespaces:")
		if !ok {
			continue
		}
		for _, line := range strings.Split(rest, "\n") {
			line = strings.TrimSpace(line)
			if name, ok := strings.CutPrefix(line, "- "); ok {
				out = append(out, name)
			} else if line != "" {
				break
			}
		}
	}
	return out
}

// createMCPHarness creates mcpHarness from the suite's codex harness (its
// server and support facts) admitting the MCP server at url, and waits
// until it is Ready.
func createMCPHarness(ctx context.Context, url string) {
	GinkgoHelper()
	base := &v1alpha1.AgentHarness{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: agentsNS, Name: codexHarness}, base)).To(Succeed())
	h := &v1alpha1.AgentHarness{
		ObjectMeta: metav1.ObjectMeta{Name: mcpHarness, Namespace: agentsNS},
		Spec:       *base.Spec.DeepCopy(),
	}
	h.Spec.HarnessID = mcpHarness
	h.Spec.MCP = &v1alpha1.HarnessMCP{AllowedURLPrefixes: []string{url}}
	if err := k8s.Create(ctx, h); !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
	waitHarnessReady(ctx, k8s, mcpHarness)
}
