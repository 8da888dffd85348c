package wire

import "net/http"

// ErrorCode is the machine-readable code of an Error.
type ErrorCode string

// The turn's error codes (docs/dispatcher-api.md, "Errors"): a turn that
// fails closed or is refused.
// Selection produces HarnessNotRegistered, HarnessUnsupported,
// VersionBelowFloor, ToolPolicyUnenforceable, OverrideDenied,
// HarnessUnavailable and SessionMismatch; the others belong to the
// dispatcher. Each comment after the name is the code's "When" in the
// docs' table (make generate-wire), in table order.
const (
	// CodeHarnessNotRegistered: an explicit runtime id with no AgentHarness
	// visible to the session's namespace.
	CodeHarnessNotRegistered ErrorCode = "HarnessNotRegistered"
	// CodeHarnessUnsupported: the harness's support facts reject the route (no
	// scope: another model or route may be supported); also an AgentHarness
	// whose adapter this dispatcher cannot drive, or a turn input the adapter
	// refuses (stream `error`, `replaySafe: true`).
	CodeHarnessUnsupported ErrorCode = "HarnessUnsupported"
	// CodeVersionBelowFloor: the harness (at selection) or its server (at the
	// handshake) is older than the version floor.
	CodeVersionBelowFloor ErrorCode = "VersionBelowFloor"
	// CodeToolPolicyUnenforceable: a restricted turn on a harness that cannot
	// enforce it; at selection (HTTP, scope `harness`) or when the adapter
	// proves it before the thread starts (stream `error`, `replaySafe: true`; no
	// scope when it depends on the model, e.g. a Codex catalog model).
	CodeToolPolicyUnenforceable ErrorCode = "ToolPolicyUnenforceable"
	// CodeOverrideDenied: the session's override, or the pin of a session whose
	// model selection is locked, contradicts a `Deny` RuntimePolicy; the message
	// names the remedy (drop or change `spec.runtimeOverride`; reset the
	// session, which clears the pin, or unlock its model selection).
	CodeOverrideDenied ErrorCode = "OverrideDenied"
	// CodeArtifactMismatch: `expectedRuntimeArtifact` names another harness, or
	// the chosen server is external, not attested, or runs another artifact.
	CodeArtifactMismatch ErrorCode = "ArtifactMismatch"
	// CodeNativeThreadLost: the server that held the session's native thread is
	// gone, or no longer has the thread (a replaced native home, or a rollout it
	// cannot read: empty or cut short); bump `spec.resetGeneration` to start a
	// new thread. Not for a thread no turn ever ended on with a result
	// (`status.nativeBinding.threadState: Provisional`, e.g. its first turn died
	// with its server): there is no conversation to lose, and the next turn
	// starts a new thread by itself.
	CodeNativeThreadLost ErrorCode = "NativeThreadLost"
	// CodeSessionMismatch: the attempt contradicts its AgentSession (checked
	// first; also on every reconnect). Scope `harness` when only the model
	// differs from `spec.model` (another model here meets the same session;
	// update `spec.model` first, which a Locked session refuses); none
	// otherwise.
	CodeSessionMismatch ErrorCode = "SessionMismatch"
	// CodeEmbeddedRuntimeSelected: the decision is the embedded `openclaw`
	// runtime (scope `harness`): run the turn on the gateway's own runtime.
	CodeEmbeddedRuntimeSelected ErrorCode = "EmbeddedRuntimeSelected"
	// CodeRunIDConflict: a `runId` reused with a different body.
	CodeRunIDConflict ErrorCode = "RunIdConflict"
	// CodeTranscriptLimitExceeded: the session's transcript mirror reached its
	// limit (64 MiB): the turn whose records no longer fit is interrupted and
	// ends with stream `error`, `replaySafe: false`; every later turn of the
	// session is refused before it starts (nothing runs, nothing is journaled,
	// the runId stays free) until the session is reset — bumping
	// `spec.resetGeneration` starts a new native thread and a new transcript.
	CodeTranscriptLimitExceeded ErrorCode = "TranscriptLimitExceeded"
	// CodeRunPayloadPruned: the `runId` is known and its turn ended, but
	// retention pruned its events and result
	// ([retention](#journal-retention-and-limits)); it is never run again. Any
	// request naming it — the turn repeated with any body, a reconnect, `GET`,
	// tool-results, interrupt — gets this.
	CodeRunPayloadPruned ErrorCode = "RunPayloadPruned"
	// CodeRetentionLimitReached: the session's namespace holds as many runs as
	// the journal keeps for one namespace: a turn with a new `runId` is refused
	// before anything runs (nothing is journaled); `Retry-After` says when its
	// oldest run ages out, when known
	// ([retention](#journal-retention-and-limits)).
	CodeRetentionLimitReached ErrorCode = "RetentionLimitReached"
	// CodeHarnessUnavailable: the harness is registered but not ready; no
	// app-server pod is ready; the session's bound pod is not ready or is being
	// recreated; the server could not be reached; in a stream: the turn could
	// not start (`replaySafe: true`), or its server went away mid-turn and
	// stayed away for 30 s (`replaySafe: false`, no scope), or the dispatcher
	// restarted mid-turn (outcome unknown, `replaySafe: false`).
	CodeHarnessUnavailable ErrorCode = "HarnessUnavailable"
	// CodeHarnessAtCapacity: every ready server of the harness is full.
	CodeHarnessAtCapacity ErrorCode = "HarnessAtCapacity"
	// CodeAuthFailed: the model provider refused the harness's credential (HTTP
	// 401): stream `error` naming the AgentHarness and the credential to renew
	// (`spec.appServer.credentials`, or the external server's login); the same
	// turn fails again until then. Not the caller's bearer token (that is `401
	// Unauthorized`); also, before any model request, a turn without
	// `authProfile` on an app-server that is not logged in (the harness's
	// `LoggedIn=False`).
	CodeAuthFailed ErrorCode = "AuthFailed"
	// CodeAuthProfileNotIsolated: the turn's `authProfile` would sit in an
	// app-server that serves other namespaces' sessions ([Auth profiles of a
	// turn](#auth-profiles-of-a-turn)).
	CodeAuthProfileNotIsolated ErrorCode = "AuthProfileNotIsolated"
	// CodeAuthProfileUnsupported: the harness cannot carry the profile's key
	// (its Codex model provider is built in).
	CodeAuthProfileUnsupported ErrorCode = "AuthProfileUnsupported"
)

// The dispatcher API's own codes: requests the API refuses before (or
// besides) a turn. Documented like the turn's codes.
const (
	// CodeBadRequest: a body that is not valid (named field), a bad
	// `Last-Event-ID`, a reconnect without `runId`, an empty `callId`, an
	// invalid session name or runId.
	CodeBadRequest ErrorCode = "BadRequest"
	// CodeUnauthorized: no bearer token, or the API server did not accept it.
	CodeUnauthorized ErrorCode = "Unauthorized"
	// CodeForbidden: the SubjectAccessReview denied the verb; a turn's MCP
	// server outside the harness's allow-list, at a refused address, or with a
	// header Secret the caller may not read ([MCP
	// servers](#mcp-servers-of-a-turn)).
	CodeForbidden ErrorCode = "Forbidden"
	// CodeTurnTokenInvalid: `X-Harness-Turn-Token` missing or not this turn's.
	CodeTurnTokenInvalid ErrorCode = "TurnTokenInvalid"
	// CodeSessionNotFound: no such AgentSession (or it is being deleted).
	CodeSessionNotFound ErrorCode = "SessionNotFound"
	// CodeRunNotFound: the runId is not in the journal (GET, tool-results,
	// interrupt, a `Last-Event-ID` reconnect).
	CodeRunNotFound ErrorCode = "RunNotFound"
	// CodeNotFound: no such endpoint.
	CodeNotFound ErrorCode = "NotFound"
	// CodeMethodNotAllowed: another method is served there (`Allow` lists it).
	CodeMethodNotAllowed ErrorCode = "MethodNotAllowed"
	// CodeNoPendingToolCall: no host tool call with that id is waiting.
	CodeNoPendingToolCall ErrorCode = "NoPendingToolCall"
	// CodeTurnNotRunning: interrupt of a run that is not running.
	CodeTurnNotRunning ErrorCode = "TurnNotRunning"
	// CodeNoPendingRequest: the run has no approval or user-input request with
	// that `requestId` (never asked, or the turn ended).
	CodeNoPendingRequest ErrorCode = "NoPendingRequest"
	// CodeRequestAlreadyResolved: the request was answered, timed out or
	// cancelled before this answer; the first resolution stands.
	CodeRequestAlreadyResolved ErrorCode = "RequestAlreadyResolved"
	// CodeRequestTooLarge: the body exceeds 1 MiB.
	CodeRequestTooLarge ErrorCode = "RequestTooLarge"
	// CodeInternalError: anything else (a failed read of the API server, the
	// journal).
	CodeInternalError ErrorCode = "InternalError"
	// CodeAuthUnavailable: the token could not be checked with the API server,
	// or the API server could not evaluate the caller's rights: a binding of the
	// caller's to a role that does not exist, as every binding is on a
	// kube-apiserver that just restarted before its RBAC roles are loaded, or
	// any refusal that grants nothing while the API server's `/readyz` fails
	// (the message names the evaluation error or the failing check; nothing is
	// cached, so the same token passes once the role exists or the server is
	// ready).
	CodeAuthUnavailable ErrorCode = "AuthUnavailable"
	// CodeRateLimited: too many requests whose token is not cached came from
	// the caller's address (each would cost a TokenReview), or the caller's
	// user was refused too often (each new verdict would cost a
	// SubjectAccessReview); `Retry-After` says when to retry. A gateway whose
	// token and verdicts are cached, or whose reviews grant, is never limited.
	CodeRateLimited ErrorCode = "RateLimited"
	// CodeStoreUnavailable: the dispatcher's store could not take a write the
	// request needed: its volume is full (the journal's PVC) or its quota used
	// up. A turn refused so was not started; post the same request again after
	// `Retry-After` (a `runId` never runs twice). The dispatcher's `/readyz`
	// fails below `--journal-min-free-bytes` before this happens, so a Service
	// stops routing to it first.
	CodeStoreUnavailable ErrorCode = "StoreUnavailable"
	// CodeNoNativeThread: `GET …/mcp-inventory` of a session without a bound
	// native thread on a live server (nothing is started to answer it).
	CodeNoNativeThread ErrorCode = "NoNativeThread"
)

// errorCodes is the one table of HTTP status and retryability per code:
// the turn's codes (turn), then the API's own. It is read-only.
var errorCodes = [...]struct {
	code      ErrorCode
	status    int
	retryable bool
	turn      bool // a turn's error code, not one of the API's own
}{
	{CodeHarnessNotRegistered, http.StatusUnprocessableEntity, false, true},
	{CodeHarnessUnsupported, http.StatusUnprocessableEntity, false, true},
	{CodeVersionBelowFloor, http.StatusUnprocessableEntity, false, true},
	{CodeToolPolicyUnenforceable, http.StatusUnprocessableEntity, false, true},
	{CodeOverrideDenied, http.StatusUnprocessableEntity, false, true},
	{CodeArtifactMismatch, http.StatusUnprocessableEntity, false, true},
	{CodeNativeThreadLost, http.StatusUnprocessableEntity, false, true},
	{CodeSessionMismatch, http.StatusUnprocessableEntity, false, true},
	{CodeEmbeddedRuntimeSelected, http.StatusConflict, false, true},
	{CodeRunIDConflict, http.StatusConflict, false, true},
	{CodeTranscriptLimitExceeded, http.StatusRequestEntityTooLarge, false, true},
	// 410: the run existed and its record is gone for good; 429: the
	// namespace ran more turns than the retention window can remember, and
	// the same request succeeds once old runs age out (Retry-After).
	{CodeRunPayloadPruned, http.StatusGone, false, true},
	{CodeRetentionLimitReached, http.StatusTooManyRequests, true, true},
	{CodeHarnessUnavailable, http.StatusServiceUnavailable, true, true},
	{CodeHarnessAtCapacity, http.StatusServiceUnavailable, true, true},
	// 502: an upstream (the model provider) refused the harness's
	// credential; not the caller's bearer token (that is 401 Unauthorized).
	{CodeAuthFailed, http.StatusBadGateway, false, true},
	// 403: the harness's tenancy refuses a credential, whoever asks; 422:
	// the harness cannot use one.
	{CodeAuthProfileNotIsolated, http.StatusForbidden, false, true},
	{CodeAuthProfileUnsupported, http.StatusUnprocessableEntity, false, true},

	{CodeBadRequest, http.StatusBadRequest, false, false},
	{CodeUnauthorized, http.StatusUnauthorized, false, false},
	{CodeForbidden, http.StatusForbidden, false, false},
	{CodeTurnTokenInvalid, http.StatusForbidden, false, false},
	{CodeSessionNotFound, http.StatusNotFound, false, false},
	{CodeRunNotFound, http.StatusNotFound, false, false},
	{CodeNotFound, http.StatusNotFound, false, false},
	{CodeMethodNotAllowed, http.StatusMethodNotAllowed, false, false},
	{CodeNoPendingToolCall, http.StatusConflict, false, false},
	{CodeTurnNotRunning, http.StatusConflict, false, false},
	{CodeNoPendingRequest, http.StatusNotFound, false, false},
	{CodeRequestAlreadyResolved, http.StatusConflict, false, false},
	{CodeRequestTooLarge, http.StatusRequestEntityTooLarge, false, false},
	{CodeInternalError, http.StatusInternalServerError, false, false},
	// The authorizer could not be asked: the same request may pass later.
	{CodeAuthUnavailable, http.StatusServiceUnavailable, true, false},
	{CodeRateLimited, http.StatusTooManyRequests, true, false},
	{CodeStoreUnavailable, http.StatusServiceUnavailable, true, false},
	{CodeNoNativeThread, http.StatusNotFound, false, false},
}

// ErrorCodes returns the turn's error codes (not the API's own) in table
// order.
func ErrorCodes() []ErrorCode {
	var out []ErrorCode
	for _, e := range errorCodes {
		if e.turn {
			out = append(out, e.code)
		}
	}
	return out
}

// IsTurnError says whether the code is one of the turn's error codes: a
// fail-closed decision or a dispatcher's refusal or failure of the turn.
func (c ErrorCode) IsTurnError() bool {
	for _, e := range errorCodes {
		if e.code == c {
			return e.turn
		}
	}
	return false
}

// HTTPStatus is the HTTP status the dispatcher answers the code with; an
// unknown code is 500.
func (c ErrorCode) HTTPStatus() int {
	for _, e := range errorCodes {
		if e.code == c {
			return e.status
		}
	}
	return http.StatusInternalServerError
}

// Retryable says whether a request that failed with the code may succeed when
// repeated unchanged; an unknown code is not retryable.
func (c ErrorCode) Retryable() bool {
	for _, e := range errorCodes {
		if e.code == c {
			return e.retryable
		}
	}
	return false
}
