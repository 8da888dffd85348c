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
// Admit is the pure decision, in order: the route (only POST
// /v1/responses, else 404), the credential (401 with its modelcred reason
// in the code), a place among the lease's requests in flight (429), the
// body (413 over its limit, 400 without one string "model", 403 for a
// model the credential does not allow), then liveness (401 when the grant
// ended, and when that could not be checked: fail closed). A refusal is
// JSON, {"error": {"type": "harness_model_gateway", "code", "message"}};
// its message never holds the credential, a key or an upstream's address.
//
// Gateway is the http.Handler around Admit. It forwards the same body
// bytes to the upstream's base URL joined with the path after /v1, with
// Codex's headers minus Authorization, the hop-by-hop ones and
// Accept-Encoding, plus the upstream's headers, query parameters and
// bearer credential. It streams the answer back as the upstream sent it,
// status and headers (minus hop-by-hop) first, flushing after every read.
// The upstream's answers pass unchanged, errors included.
//
// Its limits (Limits, each with the design's default): the body (64 MiB,
// 413); the request headers (10 s, 64 KiB) and the keep-alive idle time
// (120 s), which are the http.Server's (Gateway.Server); the connections
// (1,024), which are the listener's (Gateway.Listener); the upstream's
// response headers (120 s, 504); the upstream idle between bytes (300 s)
// and one server-sent event (16 MiB), past which the answer is cut; one
// 32 KiB copy buffer and a 30 s deadline per write to the client, so a
// slow reader's back-pressure reaches the upstream, not the gateway's
// memory; 8 requests in flight per lease (429). A POST is never re-sent
// and a redirect never followed. Upstreams are dialled under a netguard
// policy (DefaultDialPolicy refuses metadata, link-local, loopback and the
// private ranges), never through a proxy. A panic fails only its request.
// A cut answer ends its connection without the body's proper end, so the
// client sees a broken stream; its log line names the limit.
//
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
// It is asked on every admitted request, and its answer is never cached:
// a credential replayed right after its turn ended must fail. Holds
// bounds its own time (HoldsClient's timeout); its context ends when the
// client goes away. A store's Holds (internal/dispatcher/store) has this
// method.
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
