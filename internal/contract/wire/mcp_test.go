package wire

import (
	"strings"
	"testing"
)

// A turn's MCP servers are refused with a 400 naming the field whenever
// their shape is wrong; a well-formed server passes.
func TestMCPServersRefusedNamingTheField(t *testing.T) {
	secret := MCPHeaderSource{SecretKeyRef: &SecretKeyRef{Name: "mcp-token", Key: "token"}}
	ok := MCPServer{Name: "docs", URL: "https://mcp.example.com/tools/",
		Headers: []MCPHeader{{Name: "Authorization", ValueFrom: secret}}, EnabledTools: []string{"lookup"}}
	with := func(f func(*MCPServer)) []MCPServer {
		s := ok
		f(&s)
		return []MCPServer{s}
	}
	for _, tc := range []struct {
		name    string
		servers []MCPServer
		field   string
		message string
	}{
		{"a well-formed server passes", []MCPServer{ok}, "", ""},
		{"http is a shape the dispatcher decides on", with(func(s *MCPServer) { s.URL = "http://127.0.0.1:9/mcp" }), "", ""},
		{"name with a dot", with(func(s *MCPServer) { s.Name = "a.b" }), "mcpServers[0].name", "letters"},
		{"duplicate names", []MCPServer{ok, ok}, "mcpServers[1].name", "duplicate"},
		{"stdio server", with(func(s *MCPServer) { s.URL, s.Command = "", "npx" }), "mcpServers[0].command", "stdio"},
		{"no url", with(func(s *MCPServer) { s.URL = "" }), "mcpServers[0].url", "required"},
		{"ftp url", with(func(s *MCPServer) { s.URL = "ftp://h/" }), "mcpServers[0].url", "https"},
		{"user information", with(func(s *MCPServer) { s.URL = "https://u:p@h/" }), "mcpServers[0].url", "user information"},
		{"dot segments", with(func(s *MCPServer) { s.URL = "https://h/tools/../admin" }), "mcpServers[0].url", ".."},
		{"encoded dot segments", with(func(s *MCPServer) { s.URL = "https://h/tools/%2e%2e/admin" }), "mcpServers[0].url", ".."},
		{"header without a Secret", with(func(s *MCPServer) { s.Headers = []MCPHeader{{Name: "X-Key"}} }),
			"mcpServers[0].headers[0].valueFrom.secretKeyRef", "Secret"},
		{"bad header name", with(func(s *MCPServer) { s.Headers = []MCPHeader{{Name: "X Key", ValueFrom: secret}} }),
			"mcpServers[0].headers[0].name", "header name"},
		{"duplicate header", with(func(s *MCPServer) {
			s.Headers = []MCPHeader{{Name: "X-Key", ValueFrom: secret}, {Name: "x-key", ValueFrom: secret}}
		}), "mcpServers[0].headers[1].name", "duplicate"},
		{"empty enabled tool", with(func(s *MCPServer) { s.EnabledTools = []string{" "} }), "mcpServers[0].enabledTools[0]", "empty"},
		{"too long a tool timeout", with(func(s *MCPServer) { s.ToolTimeoutMs = MaxMCPTimeout.Milliseconds() + 1 }),
			"mcpServers[0].toolTimeoutMs", "at most"},
		{"too many servers", make([]MCPServer, MaxMCPServers+1), "mcpServers", "at most"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := (&MCPTurnFields{MCPServers: tc.servers}).Validate()
			if msg := expectFieldError(t, err, tc.field); tc.field != "" && !strings.Contains(msg, tc.message) {
				t.Fatalf("err = %v, want a message containing %q", err, tc.message)
			}
		})
	}
}

// A turn request decodes mcpServers flat, next to the attempt's fields, and
// its validation covers them.
func TestTurnRequestCarriesMCPServers(t *testing.T) {
	req, err := DecodeTurnRequest(strings.NewReader(`{"prompt":"hi","mcpServers":[{"name":"docs","url":"https://h/mcp",` +
		`"headers":[{"name":"X-Key","valueFrom":{"secretKeyRef":{"name":"s","key":"k"}}}]}]}`))
	if err != nil || len(req.MCPServers) != 1 || req.MCPServers[0].Headers[0].ValueFrom.SecretKeyRef.Key != "k" {
		t.Fatalf("decode: %+v, %v", req, err)
	}
	_, err = DecodeTurnRequest(strings.NewReader(`{"prompt":"hi","mcpServers":[{"name":"docs"}]}`))
	expectFieldError(t, err, "mcpServers[0].url")
}
