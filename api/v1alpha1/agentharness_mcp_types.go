package v1alpha1

// HarnessMCP says which MCP servers a turn on this harness may name
// (a turn's mcpServers): Codex in the harness's pod connects to them, so
// the harness's owner decides where its pods may be sent.
type HarnessMCP struct {
	// allowedURLPrefixes are the URL prefixes a turn's MCP server URL must start
	// with (compared as strings, case-sensitively, on the URL as the turn sends
	// it), e.g. https://mcp.example.com/tools/. Each must be an http(s) URL whose
	// host ends with a `/`, so a prefix never matches a longer host name
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
