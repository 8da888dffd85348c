package webhook_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

var _ = Describe("AgentHarness admission of MCP URL prefixes", func() {
	It("refuses a prefix Codex would write otherwise, naming the entry and the form to write, and admits it written that way", func() {
		ns := newNamespace(nil)
		h := externalHarness(ns, "mcp", "mcp-codex")
		h.Spec.MCP = &v1alpha1.HarnessMCP{AllowedURLPrefixes: []string{"https://mcp.example.com/", "https://MCP.example.com:443/tools/"}}
		_, err := create(h)
		expectFieldError(err, "spec.mcp.allowedURLPrefixes[1]", `Codex would request "https://mcp.example.com/tools/"`)

		h = externalHarness(ns, "mcp", "mcp-codex")
		h.Spec.MCP = &v1alpha1.HarnessMCP{AllowedURLPrefixes: []string{"https://mcp.example.com/", "https://mcp.example.com/tools/"}}
		_, err = create(h)
		Expect(err).NotTo(HaveOccurred(), "control: the canonical form")
	})
})
