// Package modelgateway is the model gateway (docs/design/model-gateway.md):
// the one process that holds provider credentials. A managed app-server's
// threads send their model requests here with a credential the dispatcher
// sealed for the running turn (internal/dispatcher/modelcred). The gateway
// opens it, checks the path and the requested model, asks the dispatcher
// whether the turn's grant is still current (Liveness), injects the
// harness's provider credential (Upstreams) or the turn's sealed auth
// profile, forwards the request unchanged otherwise, and streams the answer
// back event by event. Every refusal happens before anything reaches the
// upstream.
//
// Admit is the pure decision; Gateway is the http.Handler around it, with
// the limits against a misbehaving client or upstream (limits.go).
// HoldsClient asks the dispatcher's holds endpoint over HTTPS.
package modelgateway

import (
	"context"
	"net/url"

	"github.com/openclaw/harness-operator/internal/dispatcher/modelcred"
)

// Liveness says whether a grant is the current grant of its lease key:
// true while the turn (or call) the credential was sealed for runs. An
// error means it could not tell; the gateway then refuses (fail closed).
type Liveness interface {
	Holds(ctx context.Context, lease string, token int64) (bool, error)
}

// Upstream is where a harness's model requests go, with what the gateway
// adds to each.
type Upstream struct {
	// BaseURL is the provider's base URL; a request's path after the
	// gateway's /v1 is appended to it (…/v1/responses → BaseURL/responses).
	BaseURL *url.URL
	// QueryParams are added to every upstream request.
	QueryParams url.Values
	// Headers are added to every upstream request (after Codex's own).
	Headers map[string]string
	// Credential is the harness's bearer token. It is the Authorization of
	// every request without an auth profile. Printing an Upstream must
	// never show it.
	Credential string
}

// Upstreams resolves a harness to its upstream. It reads the harness and
// its credential Secret as they are now (a rotated key takes effect on the
// next request). An error names the harness and the field at fault, never
// the credential.
type Upstreams interface {
	Upstream(ctx context.Context, h modelcred.Harness) (Upstream, error)
}
