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
		{"a query and percent-encoded letters pass", with(func(s *MCPServer) { s.URL = "https://mcp.example.com/tools/%41b?x=%2e%2F" }), "", ""},
		{"a port, an IPv6 host and a trailing slash pass", with(func(s *MCPServer) { s.URL = "https://[::1]:8443/tools/" }), "", ""},
		// Codex's URL parser (WHATWG) reads each of these as another URL
		// than Go's net/url does: the URL must be the one Codex requests.
		{"a backslash, which Codex reads as '/'", with(func(s *MCPServer) { s.URL = `http://127.0.0.1:18080/allowed/..\secret` }),
			"mcpServers[0].url", `'\'`},
		{"a backslash without dots", with(func(s *MCPServer) { s.URL = `https://h/tools\admin` }), "mcpServers[0].url", `'\'`},
		{"a dot segment with uppercase encoding", with(func(s *MCPServer) { s.URL = "https://h/tools/.%2E/admin" }), "mcpServers[0].url", "percent-encode"},
		{"an encoded slash", with(func(s *MCPServer) { s.URL = "https://h/tools%2f..%2fadmin" }), "mcpServers[0].url", "percent-encode"},
		{"an encoded backslash", with(func(s *MCPServer) { s.URL = "https://h/tools/..%5cadmin" }), "mcpServers[0].url", "percent-encode"},
		{"a double encoding", with(func(s *MCPServer) { s.URL = "https://h/tools/%252e%252e/admin" }), "mcpServers[0].url", "percent-encode"},
		{"an encoded control character", with(func(s *MCPServer) { s.URL = "https://h/tools/%00" }), "mcpServers[0].url", "control"},
		{"a segment a server reads as ..", with(func(s *MCPServer) { s.URL = "https://h/tools/..;/admin" }), "mcpServers[0].url", ".."},
		{"an empty segment", with(func(s *MCPServer) { s.URL = "https://h/tools//admin" }), "mcpServers[0].url", "//"},
		{"a tab, which Codex drops", with(func(s *MCPServer) { s.URL = "https://h/tools/.\t./admin" }), "mcpServers[0].url", "control"},
		{"a line break", with(func(s *MCPServer) { s.URL = "https://h/tools/\nadmin" }), "mcpServers[0].url", "control"},
		{"a leading space", with(func(s *MCPServer) { s.URL = " https://h/tools/" }), "mcpServers[0].url", "whitespace"},
		{"a space in the path", with(func(s *MCPServer) { s.URL = "https://h/tools admin" }), "mcpServers[0].url", "whitespace"},
		{"an uppercase host", with(func(s *MCPServer) { s.URL = "https://MCP.example.com/tools/" }), "mcpServers[0].url", `"https://mcp.example.com/tools/"`},
		{"the default port", with(func(s *MCPServer) { s.URL = "https://h:443/tools/" }), "mcpServers[0].url", `"https://h/tools/"`},
		{"no path", with(func(s *MCPServer) { s.URL = "https://h" }), "mcpServers[0].url", `"https://h/"`},
		{"a host in hexadecimal", with(func(s *MCPServer) { s.URL = "https://0x7f.1/tools/" }), "mcpServers[0].url", `"https://127.0.0.1/tools/"`},
		{"a percent-encoded host", with(func(s *MCPServer) { s.URL = "https://%68/tools/" }), "mcpServers[0].url", "canonical"},
		{"a non-ASCII host", with(func(s *MCPServer) { s.URL = "https://bücher.example/tools/" }), "mcpServers[0].url", "xn--"},
		{"a non-ASCII path", with(func(s *MCPServer) { s.URL = "https://h/tööls/" }), "mcpServers[0].url", "%C3%B6"},
		{"a host with a character other parsers refuse", with(func(s *MCPServer) { s.URL = "https://a!b.example/tools/" }), "mcpServers[0].url", "DNS name"},
		{"one slash after the scheme", with(func(s *MCPServer) { s.URL = "https:/h/tools/" }), "mcpServers[0].url", `"https://h/tools/"`},
		{"an empty user", with(func(s *MCPServer) { s.URL = "https://@h/tools/" }), "mcpServers[0].url", "canonical"},
		{"a fragment", with(func(s *MCPServer) { s.URL = "https://h/tools/#x" }), "mcpServers[0].url", "fragment"},
		{"header without a Secret", with(func(s *MCPServer) { s.Headers = []MCPHeader{{Name: "X-Key"}} }),
			"mcpServers[0].headers[0].valueFrom.secretKeyRef", "Secret"},
		{"bad header name", with(func(s *MCPServer) { s.Headers = []MCPHeader{{Name: "X Key", ValueFrom: secret}} }),
			"mcpServers[0].headers[0].name", "header name"},
		{"ordinary header names pass", with(func(s *MCPServer) {
			s.Headers = []MCPHeader{{Name: "Authorization", ValueFrom: secret}, {Name: "X-Api-Key", ValueFrom: secret}, {Name: "Cookie", ValueFrom: secret}}
		}), "", ""},
		{"an underscore, which CGI servers read as '-'", with(func(s *MCPServer) {
			s.Headers = []MCPHeader{{Name: "Authorization", ValueFrom: secret}, {Name: "X_Forwarded_For", ValueFrom: secret}}
		}), "mcpServers[0].headers[1].name", "header name"},
		{"a name of another token character", with(func(s *MCPServer) { s.Headers = []MCPHeader{{Name: "X-Key.", ValueFrom: secret}} }),
			"mcpServers[0].headers[0].name", "header name"},
		{"too long a header name", with(func(s *MCPServer) { s.Headers = []MCPHeader{{Name: strings.Repeat("X", 129), ValueFrom: secret}} }),
			"mcpServers[0].headers[0].name", "at most 128"},
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

// Headers that change where a request goes or how it is framed are
// refused, whatever their case; the field is the header's name.
func TestMCPHeaderNamesThatRouteOrFrameAreRefused(t *testing.T) {
	secret := MCPHeaderSource{SecretKeyRef: &SecretKeyRef{Name: "mcp-token", Key: "token"}}
	for _, name := range []string{"Host", "host", "Connection", "Keep-Alive", "Transfer-Encoding", "TE", "Trailer", "Upgrade",
		"Content-Length", "Content-Type", "Expect", "Proxy-Authorization", "proxy-connection", "Forwarded", "Via", "X-Forwarded-Host",
		"X-Forwarded-For", "X-Real-IP", "X-Original-URL", "X-Rewrite-URL", "X-HTTP-Method-Override", "Mcp-Session-Id",
		"MCP-Protocol-Version", "Sec-Fetch-Site", "Max-Forwards"} {
		t.Run(name, func(t *testing.T) {
			s := MCPServer{Name: "docs", URL: "https://mcp.example.com/tools/",
				Headers: []MCPHeader{{Name: "Authorization", ValueFrom: secret}, {Name: name, ValueFrom: secret}}}
			err := (&MCPTurnFields{MCPServers: []MCPServer{s}}).Validate()
			if msg := expectFieldError(t, err, "mcpServers[0].headers[1].name"); !strings.Contains(msg, "may not be set by a turn") {
				t.Fatalf("err = %v, want a message saying the header may not be set", err)
			}
		})
	}
}

// An allowed prefix admits a URL only at a path-segment boundary and only
// in the canonical form both are written in; a prefix that is not an MCP
// URL in canonical form admits nothing.
func TestMCPURLHasPrefix(t *testing.T) {
	for _, tc := range []struct {
		url, prefix string
		want        bool
	}{
		{"https://h/tools/x", "https://h/tools/", true},
		{"https://h/tools/", "https://h/tools/", true},
		{"https://h/tools", "https://h/tools/", false},
		{"https://h/tools", "https://h/tools", true},
		{"https://h/tools/x", "https://h/tools", true},
		{"https://h/tools?x=1", "https://h/tools", true},
		{"https://h/toolsx", "https://h/tools", false},
		{"https://h/tools-admin/x", "https://h/tools", false},
		{"https://h/x", "https://h/", true},
		{"https://h.evil.test/x", "https://h/", false},
		{"https://h:8443/x", "https://h/", false},
		{"http://h/x", "https://h/", false},
		{`https://h/tools/..\admin`, "https://h/tools/", false},
		{"https://h/tools/%2e%2e/admin", "https://h/tools/", false},
		{"https://h/tools/..;/admin", "https://h/tools/", false},
		{"https://H/tools/x", "https://h/tools/", false},
		{"https://h/tools/x", "https://H/tools/", false},
		{"https://h/tools/x", "https://h/tools/?", false},
		{"https://h/tools/x", "https://h/tools/?a=1", false},
		{"https://h/tools/x", "", false},
	} {
		if got := MCPURLHasPrefix(tc.url, tc.prefix); got != tc.want {
			t.Errorf("MCPURLHasPrefix(%q, %q) = %v, want %v", tc.url, tc.prefix, got, tc.want)
		}
	}
}

// Each entry of spec.mcp.allowedURLPrefixes must be an MCP URL in
// canonical form without a query.
func TestValidMCPURLPrefix(t *testing.T) {
	for _, tc := range []struct{ prefix, want string }{
		{"https://mcp.example.com/tools/", ""},
		{"http://127.0.0.1:18080/allowed/", ""},
		{"https://mcp.example.com/", ""},
		{"https://MCP.example.com/tools/", "canonical"},
		{"https://mcp.example.com", "canonical"},
		{`https://mcp.example.com/tools\`, `'\'`},
		{"https://mcp.example.com/tools/?x=1", "query"},
		{"https://mcp.example.com/tools/?", "query"},
		{"https://mcp.example.com/a/../b/", ".."},
		{"ftp://mcp.example.com/", "https"},
	} {
		err := ValidMCPURLPrefix(tc.prefix)
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ValidMCPURLPrefix(%q) = %v, want %q", tc.prefix, err, tc.want)
		}
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
