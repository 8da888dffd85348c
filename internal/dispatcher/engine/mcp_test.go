package engine

import (
	"encoding/json"
	"errors"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/mcpserver"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

var _ = Describe("MCP servers of a turn", Ordered, func() {
	const (
		headerValue = "mcp-header-value-7c1e"
		readable    = "mcp-token"   // alice may get it
		unreadable  = "other-token" // exists; alice may not get it
	)
	var (
		ns    string
		mcp   *mcpserver.Server
		front *mcpFront
		alice = store.Requester{User: "alice", UID: "alice-uid", Groups: []string{"system:authenticated"}}
	)
	BeforeAll(func() {
		ns = newNamespace()
		// Read-only: the suite's external server keeps its own sandbox, in
		// which Codex would ask for approval of any other MCP tool (see
		// codex.TestSandboxedMCPCallNeedsApproval).
		mcp = mcpserver.Start(suiteT, mcpserver.Tool{Name: "lookup", Description: "Look a word up", Reply: "lookup-result-42",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"word":{"type":"string"}}}`),
			Annotations: json.RawMessage(`{"readOnlyHint":true}`)})
		front = startMCPFront(mcp.URL, "/allowed", "/tools")
		h := registerCodex(ns, codexSrv.URL, true)
		updateHarness(h, true, func(h *v1alpha1.AgentHarness) {
			h.Spec.MCP = &v1alpha1.HarnessMCP{AllowedURLPrefixes: []string{mcp.URL, "https://169.254.169.254/",
				front.URL + "/allowed/", front.URL + "/tools"}}
		})
		createSecrets(ns, "token", headerValue, readable, unreadable)
		grantSecretGet(ns, "mcp-token-reader", alice.User, readable)
	})

	// mcpReq is a turn naming the test's MCP server with its header from
	// secret; change alters it.
	mcpReq := func(runID, prompt, secret string, change func(*wire.MCPServer)) *wire.TurnRequest {
		s := wire.MCPServer{Name: "docs", URL: mcp.URL, Headers: []wire.MCPHeader{{Name: "X-Api-Key",
			ValueFrom: wire.MCPHeaderSource{SecretKeyRef: &wire.SecretKeyRef{Name: secret, Key: "token"}}}}}
		if change != nil {
			change(&s)
		}
		req := textReq(runID, prompt)
		req.MCPServers = []wire.MCPServer{s}
		return req
	}
	// run runs req as alice to its end and returns its events.
	run := func(name string, req *wire.TurnRequest) []event {
		GinkgoHelper()
		run, err := eng.Start(ctx, ns, name, req, alice)
		Expect(err).NotTo(HaveOccurred())
		c := &collector{}
		Expect(Follow(ctx, run, c.sink)).To(Succeed())
		return c.events()
	}

	It("calls the turn's MCP server with the header value from a Secret the requester may read, and keeps the value out of events, status, journal and logs", func() {
		newSession(ns, "mcp", testModel)
		stub.When("mcp-call-1", stubmodel.Call(stubmodel.FunctionCall{Namespace: "mcp__docs", Name: "lookup", Arguments: `{"word":"x"}`}),
			stubmodel.Text("looked it up"))

		evs := run("mcp", mcpReq("run-mcp-1", "mcp-call-1: look it up", readable, nil))
		Expect(resultOf(evs).Terminal.Kind).To(Equal(wire.TerminalOK))
		calls := mcp.Calls()
		Expect(calls).To(HaveLen(1), "the MCP server sees the call exactly once")
		Expect(calls[0].Tool).To(Equal("lookup"))
		Expect(calls[0].Header.Get("X-Api-Key")).To(Equal(headerValue))
		reqs := stub.RequestsContaining("mcp-call-1")
		Expect(reqs).NotTo(BeEmpty())
		Expect(reqs[0].ToolNames()).To(ContainElement("mcp__docs.lookup"), "the model was offered the MCP tool")
		var tools []string
		for _, raw := range ofType(evs, wire.EventAgent) {
			var a wire.AgentEvent
			Expect(json.Unmarshal(raw, &a)).To(Succeed())
			if a.Stream == wire.StreamTool {
				tools = append(tools, a.Tool+"/"+a.Phase)
			}
		}
		Expect(tools).To(ContainElements("docs__lookup/"+wire.PhaseStart, "docs__lookup/"+wire.PhaseEnd))
		var terminals []string
		for _, raw := range ofType(evs, wire.EventToolTerminal) {
			var tt wire.ToolTerminal
			Expect(json.Unmarshal(raw, &tt)).To(Succeed())
			terminals = append(terminals, tt.Tool+"/"+string(tt.Outcome))
		}
		Expect(terminals).To(Equal([]string{"docs__lookup/" + string(wire.OutcomeSuccess)}), "one native tool_terminal")

		expectSecretValueNowhere(headerValue, evs, ns, "mcp")
	})

	It("lists the MCP tools of the session's bound thread, and starts no thread, turn or model request for it", func() {
		before := len(stub.Requests())
		calls := len(mcp.Calls())
		sess := getSession(ns, "mcp")
		srv, err := eng.serverOf(ctx, ns, "codex", ExternalServerName)
		Expect(err).NotTo(HaveOccurred())
		threads, err := codextest.ThreadsIn(ctx, srv.client, workDir(srv.root, sess), false)
		Expect(err).NotTo(HaveOccurred())

		inv, err := eng.MCPInventory(ctx, ns, "mcp")
		Expect(err).NotTo(HaveOccurred())
		Expect(inv.ThreadID).To(Equal(sess.Status.NativeBinding.ThreadID))
		Expect(inv.Servers).To(HaveLen(1))
		Expect(inv.Servers[0].Name).To(Equal("docs"))
		Expect(inv.Servers[0].Tools).To(HaveLen(1))
		Expect(inv.Servers[0].Tools[0].Name).To(Equal("lookup"))
		Expect(inv.Servers[0].Tools[0].Description).To(Equal("Look a word up"))
		Expect(string(inv.Servers[0].Tools[0].InputSchema)).To(ContainSubstring(`"word"`))

		Expect(stub.Requests()).To(HaveLen(before), "no model request")
		Expect(mcp.Calls()).To(HaveLen(calls), "no tool call")
		after, err := codextest.ThreadsIn(ctx, srv.client, workDir(srv.root, sess), false)
		Expect(err).NotTo(HaveOccurred())
		Expect(after).To(ConsistOf(threads), "no new thread")
		Expect(getSession(ns, "mcp").Status.Counters.Turns).To(Equal(sess.Status.Counters.Turns), "no turn")
	})

	It("answers NoNativeThread for a session without a bound thread, and binds none", func() {
		newSession(ns, "unbound", testModel)
		before := len(stub.Requests())
		_, err := eng.MCPInventory(ctx, ns, "unbound")
		var we *wire.Error
		Expect(errors.As(err, &we)).To(BeTrue(), "err = %v", err)
		Expect(we.Code).To(Equal(wire.CodeNoNativeThread))
		Expect(we.HTTPStatus()).To(Equal(404))
		Expect(getSession(ns, "unbound").Status.NativeBinding).To(BeNil())
		Expect(stub.Requests()).To(HaveLen(before))
	})

	// Each refusal happens before anything is journaled or reaches the model
	// or the MCP server, names the field, and has a control: the same turn
	// without the attacking difference runs.
	DescribeTable("refuses an MCP server",
		func(session string, attack func(*wire.TurnRequest), wantField, wantMsg string) {
			newSession(ns, session, testModel)
			marker := "mcp-refused-" + session
			methods := len(mcp.Methods())
			req := mcpReq("run-"+session, marker, readable, nil)
			attack(req)
			_, err := eng.Start(ctx, ns, session, req, alice)
			var we *wire.Error
			Expect(errors.As(err, &we)).To(BeTrue(), "err = %v", err)
			Expect(we.Code).To(Equal(wire.CodeForbidden))
			Expect(we.Message).To(ContainSubstring(wantField))
			Expect(we.Message).To(ContainSubstring(wantMsg))
			_, ferr := jrnl.FindRun(keyOf(ns, session), req.RunID)
			Expect(errors.Is(ferr, store.ErrNotFound)).To(BeTrue(), "the refused run was journaled: %v", ferr)
			Expect(stub.RequestsContaining(marker)).To(BeEmpty())
			Expect(mcp.Methods()).To(HaveLen(methods), "the MCP server was contacted")

			evs := run(session, mcpReq("run-"+session+"-control", marker+" control", readable, nil))
			Expect(resultOf(evs).Terminal.Kind).To(Equal(wire.TerminalOK), "control")
		},
		Entry("whose URL matches none of the harness's allowed prefixes", "not-allowed",
			func(r *wire.TurnRequest) {
				r.MCPServers[0].URL = strings.Replace(r.MCPServers[0].URL, "127.0.0.1", "127.0.0.3", 1)
			},
			"mcpServers[0].url", "spec.mcp.allowedURLPrefixes"),
		Entry("whose host is a metadata address, though allowed by the harness", "metadata",
			func(r *wire.TurnRequest) { r.MCPServers[0].URL = "https://169.254.169.254/mcp" },
			"mcpServers[0].url", "metadata address"),
		Entry("whose header Secret the requester may not read", "secret-denied",
			func(r *wire.TurnRequest) { r.MCPServers[0].Headers[0].ValueFrom.SecretKeyRef.Name = unreadable },
			"mcpServers[0].headers[0].valueFrom.secretKeyRef", `user "alice" may not get secrets "other-token"`),
	)

	// Codex's URL parser (WHATWG) and the servers behind an address read a
	// URL and headers their own way: each attack below would have Codex
	// request another path or another virtual host than the harness's owner
	// allowed. The front records what Codex really requested: nothing
	// outside the allowed paths or with another Host, while the control on
	// an allowed URL reaches the MCP server through it.
	DescribeTable("keeps Codex on the paths and the host the harness allowed",
		func(session string, attack func(*wire.TurnRequest), wantField string) {
			newSession(ns, session, testModel)
			marker := "mcp-strayed-" + session
			before := front.received()
			req := mcpReq("run-"+session, marker, readable, func(s *wire.MCPServer) { s.URL = front.URL + "/allowed/mcp" })
			attack(req)
			started, err := eng.Start(ctx, ns, session, req, alice)
			if err == nil {
				// Admitted (a regression): let the turn run, so that the
				// check below shows where Codex went.
				_ = Follow(ctx, started, (&collector{}).sink)
			}
			Expect(front.strayedSince(before)).To(BeEmpty(), "Codex requested a path or host the harness did not allow")
			Expect(err).To(HaveOccurred(), "the turn was admitted")
			var fe *wire.FieldError
			var we *wire.Error
			switch {
			case errors.As(err, &fe):
				Expect(fe.Field).To(Equal(wantField))
			case errors.As(err, &we):
				Expect(we.Code).To(Equal(wire.CodeForbidden))
				Expect(we.Retryable).To(BeFalse())
				Expect(we.Message).To(HavePrefix(wantField + " "))
			default:
				Fail("err = " + err.Error() + ", want a refusal naming " + wantField)
			}
			_, ferr := jrnl.FindRun(keyOf(ns, session), req.RunID)
			Expect(errors.Is(ferr, store.ErrNotFound)).To(BeTrue(), "the refused run was journaled: %v", ferr)
			Expect(stub.RequestsContaining(marker)).To(BeEmpty())

			control := front.received()
			evs := run(session, mcpReq("run-"+session+"-control", marker+" control", readable,
				func(s *wire.MCPServer) { s.URL = front.URL + "/allowed/mcp" }))
			Expect(resultOf(evs).Terminal.Kind).To(Equal(wire.TerminalOK), "control")
			Expect(front.insideSince(control)).NotTo(BeEmpty(), "control: Codex reached the MCP server through the front")
			Expect(front.strayedSince(control)).To(BeEmpty(), "control")
		},
		Entry("a backslash, which Codex reads as '/'", "backslash",
			func(r *wire.TurnRequest) { r.MCPServers[0].URL = front.URL + `/allowed/..\secret` },
			"mcpServers[0].url"),
		Entry("a prefix without a trailing '/' continued by more than a whole segment", "segment",
			func(r *wire.TurnRequest) { r.MCPServers[0].URL = front.URL + "/tools-admin/mcp" },
			"mcpServers[0].url"),
		Entry("a Host header, which selects another virtual host behind the address", "host-header",
			func(r *wire.TurnRequest) { r.MCPServers[0].Headers[0].Name = "Host" },
			"mcpServers[0].headers[0].name"),
	)
})
