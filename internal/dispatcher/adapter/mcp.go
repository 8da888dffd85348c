package adapter

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// MCPServer is one MCP server of a turn as the engine admitted it: its URL
// passed the harness's allow-list and the address checks, and its header
// values were read from Secrets the requester may get.
type MCPServer struct {
	// Name is the server's name (the runtime's tool names carry it).
	Name string
	// URL is the streamable-HTTP endpoint.
	URL string
	// Headers are sent with every request to the server. Their values are
	// credentials: they go to the runtime's thread configuration only.
	Headers SecretHeaders
	// EnabledTools, when not empty, are the only tools offered; DisabledTools
	// are never offered.
	EnabledTools, DisabledTools []string
	// StartupTimeout and ToolTimeout are the runtime's defaults when zero.
	StartupTimeout, ToolTimeout time.Duration
}

// SecretHeaders are HTTP headers whose values are credentials. Formatting
// them (%v, %+v, %s) shows the names only.
type SecretHeaders map[string]string

// String lists the header names, never the values.
func (h SecretHeaders) String() string {
	names := make([]string, 0, len(h))
	for n := range h {
		names = append(names, n)
	}
	slices.Sort(names)
	return fmt.Sprintf("[%s: values withheld]", strings.Join(names, " "))
}

// GoString is String, so %#v withholds the values too.
func (h SecretHeaders) GoString() string { return h.String() }
