package v1alpha1

// HarnessMCP says which MCP servers a turn on this harness may name
// (a turn's mcpServers): Codex in the harness's pod connects to them, so
// the harness's owner decides where its pods may be sent.
type HarnessMCP struct {
	// allowedURLPrefixes are the URLs under which a turn's MCP server URL must
	// be, e.g. https://mcp.example.com/tools/. A URL is under a prefix when it
	// has the same scheme, host and port, and the prefix's path or a path that
	// continues it after a `/` (https://h/tools admits https://h/tools/x, not
	// https://h/tools-admin). Both are compared in the form the WHATWG URL
	// Standard writes them, which is what Codex requests: a prefix written
	// otherwise (an uppercase host, a default port) admits nothing, and the
	// admission webhook refuses it. Each must be an http(s) URL whose host is
	// followed by a `/`, so a prefix never matches a longer host name
	// (https://mcp.example.com.evil.test/). Empty or omitted: no MCP server is
	// admitted. A URL that matches must also pass the dispatcher's address checks
	// (no metadata, link-local or cluster-internal address).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.all(p, p.matches('^https?://[^/?#@]+/[^?#]*$'))",message="spec.mcp.allowedURLPrefixes entries must be http(s) URLs without query or fragment whose host is followed by a '/', e.g. https://mcp.example.com/"
	AllowedURLPrefixes []string `json:"allowedURLPrefixes,omitempty"`
}
