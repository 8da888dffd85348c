package wire

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// MaxMCPServers bounds a turn's mcpServers.
const MaxMCPServers = 16

// MaxMCPTimeout bounds startupTimeoutMs and toolTimeoutMs of one MCP server.
const MaxMCPTimeout = MaxToolTimeout

// mcpNameRE is what a server name may be: Codex joins it into tool names
// (mcp__<server>__<tool>), which the Responses API limits to these
// characters.
var mcpNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// mcpHeaderNameRE is what an MCP header name may be: letters and digits
// in words joined by single hyphens. The other characters RFC 9110 allows
// in a name are left out: CGI-style servers and some proxies read '_' as
// '-', so X_Forwarded_For would reach them as X-Forwarded-For.
var mcpHeaderNameRE = regexp.MustCompile(`^[A-Za-z0-9]+(-[A-Za-z0-9]+)*$`)

// maxMCPHeaderName bounds the length of an MCP header name.
const maxMCPHeaderName = 128

// refusedMCPHeaders are header names (lowercase) a turn may not set on its
// MCP server's requests, each with the reason: they would change where a
// request goes or how it is framed, not what it says to the server.
var refusedMCPHeaders = map[string]string{
	"host":                   "it selects the server behind the address",
	"connection":             "it is hop-by-hop",
	"keep-alive":             "it is hop-by-hop",
	"te":                     "it is hop-by-hop",
	"trailer":                "it is hop-by-hop",
	"transfer-encoding":      "it frames the request",
	"upgrade":                "it is hop-by-hop",
	"content-length":         "it frames the request",
	"content-type":           "the MCP client sets it",
	"content-encoding":       "the MCP client sets it",
	"accept":                 "the MCP client sets it",
	"expect":                 "it changes how the request is sent",
	"http2-settings":         "it is hop-by-hop",
	"max-forwards":           "proxies act on it",
	"via":                    "proxies act on it",
	"forwarded":              "proxies and servers route by it",
	"x-real-ip":              "proxies and servers route by it",
	"x-host":                 "proxies and servers route by it",
	"x-original-host":        "proxies and servers route by it",
	"x-original-url":         "servers route by it instead of the path",
	"x-rewrite-url":          "servers route by it instead of the path",
	"x-http-method-override": "servers take it for the request's method",
	"x-http-method":          "servers take it for the request's method",
	"x-method-override":      "servers take it for the request's method",
	"last-event-id":          "the MCP client sets it",
}

// refusedMCPHeaderPrefixes are families of header names a turn may not set,
// with the reason.
var refusedMCPHeaderPrefixes = []struct{ prefix, why string }{
	{"proxy-", "proxies act on it"},
	{"x-forwarded-", "proxies and servers route by it"},
	{"mcp-", "the MCP client sets it (session, protocol version)"},
	{"sec-", "it is reserved for clients"},
}

// validMCPHeaderName refuses a header name that is not an ordinary request
// header (mcpHeaderNameRE) or one that changes routing or framing.
func validMCPHeaderName(name string) error {
	if len(name) > maxMCPHeaderName || !mcpHeaderNameRE.MatchString(name) {
		return fmt.Errorf("must be an HTTP header name of at most %d letters, digits and single '-' between them", maxMCPHeaderName)
	}
	lower := strings.ToLower(name)
	why, refused := refusedMCPHeaders[lower]
	for _, p := range refusedMCPHeaderPrefixes {
		if !refused && strings.HasPrefix(lower, p.prefix) {
			why, refused = p.why, true
		}
	}
	if refused {
		return fmt.Errorf("%q may not be set by a turn: %s", name, why)
	}
	return nil
}

// MCPTurnFields are a turn request's MCP fields (embedded in TurnRequest, so
// the JSON stays flat).
type MCPTurnFields struct {
	// MCPServers are the MCP servers offered to the native runtime in this
	// turn: streamable-HTTP servers by URL. The dispatcher admits each URL
	// only when it matches the harness's spec.mcp.allowedURLPrefixes and
	// resolves to an address its dial policy allows, and reads header values
	// from Secrets only when the requester may get them.
	MCPServers []MCPServer `json:"mcpServers,omitzero"`
}

// MCPServer is one MCP server of a turn.
type MCPServer struct {
	// Name is the server's name (letters, digits, '_' and '-'): the model
	// sees its tools as mcp__<name>__<tool>; the stream reports them as
	// <name>__<tool>.
	Name string `json:"name"`
	// URL is the streamable-HTTP endpoint: https (plain http only to a
	// loopback host on a dispatcher in development mode), no user
	// information, no dot segments.
	URL string `json:"url,omitempty"`
	// Command would start a stdio server inside the harness pod: refused,
	// no harness image declares stdio servers.
	Command string `json:"command,omitempty"`
	// Headers are HTTP headers sent with every request to the server, each
	// value read from a Secret in the session's namespace.
	Headers []MCPHeader `json:"headers,omitzero"`
	// EnabledTools, when not empty, are the only tools of the server offered
	// to the model.
	EnabledTools []string `json:"enabledTools,omitzero"`
	// DisabledTools are tools of the server never offered to the model.
	DisabledTools []string `json:"disabledTools,omitzero"`
	// StartupTimeoutMs bounds connecting and listing the tools (the
	// runtime's default when zero).
	StartupTimeoutMs int64 `json:"startupTimeoutMs,omitempty"`
	// ToolTimeoutMs bounds each call of one of its tools (the runtime's
	// default when zero).
	ToolTimeoutMs int64 `json:"toolTimeoutMs,omitempty"`
}

// MCPHeader is one HTTP header of an MCP server, its value from a Secret.
type MCPHeader struct {
	// Name is the header's name.
	Name string `json:"name"`
	// ValueFrom says where the value comes from.
	ValueFrom MCPHeaderSource `json:"valueFrom"`
}

// MCPHeaderSource is where a header value comes from.
type MCPHeaderSource struct {
	// SecretKeyRef is a key of a Secret in the session's namespace.
	SecretKeyRef *SecretKeyRef `json:"secretKeyRef,omitempty"`
}

// SecretKeyRef names a key of a Secret in the session's namespace.
type SecretKeyRef struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// Validate checks the MCP fields' shape (the dispatcher checks what needs
// the cluster); the error is a *FieldError naming the field.
func (m *MCPTurnFields) Validate() error {
	if len(m.MCPServers) > MaxMCPServers {
		return &FieldError{Field: "mcpServers", Message: fmt.Sprintf("at most %d servers", MaxMCPServers)}
	}
	seen := map[string]bool{}
	for i, s := range m.MCPServers {
		field := "mcpServers[" + strconv.Itoa(i) + "]"
		if !mcpNameRE.MatchString(s.Name) {
			return &FieldError{Field: field + ".name", Message: "must be 1 to 64 letters, digits, '_' or '-'"}
		}
		if seen[s.Name] {
			return &FieldError{Field: field + ".name", Message: fmt.Sprintf("duplicate server name %q", s.Name)}
		}
		seen[s.Name] = true
		if err := s.validate(field); err != nil {
			return err
		}
	}
	return nil
}

func (s *MCPServer) validate(field string) error {
	bad := func(f, msg string) error { return &FieldError{Field: field + f, Message: msg} }
	if s.Command != "" {
		return bad(".command", "stdio MCP servers are not available: the harness image declares none; name a streamable-HTTP server by url")
	}
	if s.URL == "" {
		return bad(".url", "is required")
	}
	if err := ValidMCPURL(s.URL); err != nil {
		return bad(".url", err.Error())
	}
	names := map[string]bool{}
	for j, h := range s.Headers {
		hf := ".headers[" + strconv.Itoa(j) + "]"
		if err := validMCPHeaderName(h.Name); err != nil {
			return bad(hf+".name", err.Error())
		}
		if names[strings.ToLower(h.Name)] {
			return bad(hf+".name", fmt.Sprintf("duplicate header %q", h.Name))
		}
		names[strings.ToLower(h.Name)] = true
		ref := h.ValueFrom.SecretKeyRef
		if ref == nil || ref.Name == "" || ref.Key == "" {
			return bad(hf+".valueFrom.secretKeyRef", "name and key are required (header values come only from a Secret)")
		}
	}
	for _, l := range []struct {
		f     string
		tools []string
	}{{".enabledTools", s.EnabledTools}, {".disabledTools", s.DisabledTools}} {
		for j, t := range l.tools {
			if strings.TrimSpace(t) == "" {
				return bad(l.f+"["+strconv.Itoa(j)+"]", "must not be empty")
			}
		}
	}
	if err := validTimeout(field+".startupTimeoutMs", s.StartupTimeoutMs, MaxMCPTimeout); err != nil {
		return err
	}
	return validTimeout(field+".toolTimeoutMs", s.ToolTimeoutMs, MaxMCPTimeout)
}

// MCPInventory is the MCP tool catalog of a session's bound native thread
// (GET …/mcp-inventory).
type MCPInventory struct {
	// ThreadID is the native thread the catalog belongs to.
	ThreadID string `json:"threadId"`
	// Servers are the thread's MCP servers, by name.
	Servers []MCPServerInventory `json:"servers"`
}

// MCPServerInventory is one MCP server of a thread and its tools.
type MCPServerInventory struct {
	// Name is the server's raw name (the turn's mcpServers[].name).
	Name string `json:"name"`
	// Status is the runtime's connection state (connected, failed, …),
	// when it reports one.
	Status string `json:"status,omitempty"`
	// Error says why the runtime has no tool list for the server.
	Error string `json:"error,omitempty"`
	// Tools are the tools the server offers, by name.
	Tools []MCPTool `json:"tools"`
}

// MCPTool is one tool of an MCP server.
type MCPTool struct {
	// Name is the tool's raw name on its server.
	Name string `json:"name"`
	// Description is the server's description of the tool.
	Description string `json:"description,omitempty"`
	// InputSchema is the JSON schema of its arguments.
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
}
