// Package httpapi is the dispatcher's HTTP API over the turn engine
// (internal/dispatcher/engine) and its journal (internal/dispatcher/store/journal):
// docs/dispatcher-api.md describes it.
//
// Handler serves the routes of the wire contract (internal/contract/wire,
// routes.go), each under wire.SessionPath; docs/dispatcher-api.md lists
// them with their bodies.
//
// Every request carries a bearer token. An Authorizer authenticates it
// (KubeAuthorizer: TokenReview) and checks the permission
// (SubjectAccessReview) on agentsessions/turns of group
// harness.openclaw.dev in the session's namespace (resource name: the
// session): verb `create` for the POSTs (a delegated turn's: delegate.go),
// `get` for the reads. The Handler caches a token's identity (keyed by its
// SHA-256) and each identity's verdicts per attributes briefly
// (Config.AuthCacheTTL), and bounds what a caller costs the API server
// (authcache.go); raw tokens are never stored or logged.
//
// The token comes in Authorization, or, when the caller goes through the
// Kubernetes API server's service proxy (as `kubectl harness` does without
// --dispatcher), in wire.ProxyAuthorizationHeader (X-Harness-Authorization: Bearer
// <token>): the API server deletes Authorization once it has authenticated
// the caller for itself, and forwards the other headers. Both are checked the
// same way; a bearer token in Authorization wins when both are present. The
// header is only meaningful behind that proxy: it adds no trust (the token is
// still reviewed), so a direct caller gains nothing by using it. A caller
// through the proxy also needs RBAC on services/proxy of the dispatcher
// Service: `create` for the POSTs, `get` for the reads (the API server maps
// the HTTP method to the verb). The API server does not verify the
// dispatcher's serving certificate on that hop (its proxy transport skips
// verification; the connection is TLS but unauthenticated).
//
// Decisions taken here:
//   - The turn stream is read from the store (store.Run.Events): every
//     event's `id:` is its journal sequence number, and a fresh turn, a
//     reconnect (Last-Event-ID, or the same runId in the body) and a late
//     reader see exactly the same bytes. A fresh request calls Engine.Start,
//     which returns the run once it is journaled — or the known run of the
//     same runId and body (RunIdConflict for another body); it never runs a
//     turn twice. A reconnect with Last-Event-ID only looks the run up.
//   - A turn refused before anything was journaled (SessionMismatch,
//     EmbeddedRuntimeSelected, fail-closed decisions, HarnessUnavailable,
//     HarnessAtCapacity, NativeThreadLost, …) is Start's error, answered
//     with its HTTP status and the JSON error, not with a stream. A turn that
//     failed after it was journaled ends its (200) stream with `error`.
//   - The client's disconnect does not interrupt a turn (it keeps running
//     and is journaled; a reconnect receives the rest). Use …/interrupt.
//   - The `selected` event carries two fields besides the decision: `runId`
//     and `turnToken`. The turn token is signed by Config.TurnTokens
//     (internal/dispatcher/turntoken: bound to the session's UID and the runId), so
//     nothing secret is stored per turn and a reconnect gets the same token.
//     The dispatcher loads that key from a Secret, so every replica and every
//     restart accepts it; only a new key (the Secret deleted) invalidates
//     older tokens. tool-results and interrupt present it in the
//     X-Harness-Turn-Token header; a missing or wrong token is 403
//     TurnTokenInvalid.
//   - A Last-Event-ID for a runId the journal does not know is 404
//     RunNotFound (running it again would not be a resume).
//   - …/decide answers 200 with the decision whenever the session exists,
//     also when the decision carries an error (a fail-closed decision or a
//     SessionMismatch is the decision's answer, as `explain` shows it).
//   - The reads need `get` on agentsessions/turns (the transcript included).
//   - Streamed answers (turn streams, the transcript) have a deadline on
//     each write to the client (Config.StreamWriteTimeout, 30 s), not on the
//     whole answer: a client that stops reading is cut off and its handler
//     ends, an idle turn stream stays open. The transcript is copied from
//     the store as the client takes it; its status goes with the first
//     bytes, so an error before them is a JSON error and one after them
//     aborts the response (http.ErrAbortHandler: no end of the chunked body).
//
// Errors are JSON {code, message, scope, retryable, replaySafe?}: the turn's
// error codes (docs/dispatcher-api.md, "Errors") with their statuses, and
// BadRequest (400), Unauthorized (401), Forbidden and TurnTokenInvalid (403),
// SessionNotFound, RunNotFound and NotFound (404), MethodNotAllowed (405),
// NoPendingToolCall and TurnNotRunning (409), RequestTooLarge (413),
// InternalError (500), AuthUnavailable and StoreUnavailable (503). Every 503
// carries Retry-After.
package httpapi
