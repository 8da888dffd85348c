package wire

// The HTTP headers of the dispatcher's API that its clients (the OpenClaw
// plugin, kubectl-harness) set or read.
const (
	// TurnTokenHeader carries the turn token of tool-results, interrupt,
	// approvals and user-input.
	TurnTokenHeader = "X-Harness-Turn-Token"
	// RunIDHeader names the run of a turn stream.
	RunIDHeader = "X-Harness-Run-Id"
	// ProxyAuthorizationHeader carries the bearer token of a request that
	// comes through the Kubernetes API server's service proxy
	// (/api/v1/namespaces/{ns}/services/https:{name}:https/proxy/…). The API
	// server authenticates the caller itself and then deletes the
	// Authorization header before proxying, so a token in Authorization never
	// reaches the dispatcher that way; the API server forwards other headers
	// unchanged. The token in this header is checked exactly like one in
	// Authorization (TokenReview and SubjectAccessReview): the header grants
	// nothing by itself, it is only a second place for the same token.
	ProxyAuthorizationHeader = "X-Harness-Authorization"
	// LastEventIDHeader resumes a turn's stream after the event with this id.
	LastEventIDHeader = "Last-Event-ID"
	// RetryAfterHeader is the seconds to wait, on every 503 and some 429s.
	RetryAfterHeader = "Retry-After"
)
