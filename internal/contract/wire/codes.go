package wire

import "net/http"

// ErrorCode is the machine-readable code of an Error.
type ErrorCode string

// The turn's error codes (docs/dispatcher-api.md, "Errors"): a turn that
// fails closed or is refused.
// Selection produces HarnessNotRegistered, HarnessUnsupported,
// VersionBelowFloor, ToolPolicyUnenforceable, OverrideDenied,
// HarnessUnavailable and SessionMismatch; the others belong to the
// dispatcher.
const (
	// CodeHarnessNotRegistered: an explicit id with no visible AgentHarness.
	CodeHarnessNotRegistered ErrorCode = "HarnessNotRegistered"
	// CodeHarnessUnsupported: the harness's support facts reject the route.
	CodeHarnessUnsupported ErrorCode = "HarnessUnsupported"
	// CodeVersionBelowFloor: the server is older than the version floor.
	CodeVersionBelowFloor ErrorCode = "VersionBelowFloor"
	// CodeToolPolicyUnenforceable: a restricted turn on a harness that cannot enforce it.
	CodeToolPolicyUnenforceable ErrorCode = "ToolPolicyUnenforceable"
	// CodeOverrideDenied: an override or pin contradicts a Deny policy.
	CodeOverrideDenied ErrorCode = "OverrideDenied"
	// CodeArtifactMismatch: the expected runtime artifact differs or is unattested.
	CodeArtifactMismatch ErrorCode = "ArtifactMismatch"
	// CodeNativeThreadLost: the bound server is gone; reset the session.
	CodeNativeThreadLost ErrorCode = "NativeThreadLost"
	// CodeSessionMismatch: the attempt contradicts its AgentSession.
	CodeSessionMismatch ErrorCode = "SessionMismatch"
	// CodeEmbeddedRuntimeSelected: the decision is `openclaw`; run it on the gateway.
	CodeEmbeddedRuntimeSelected ErrorCode = "EmbeddedRuntimeSelected"
	// CodeRunIDConflict: a runId reused with a different body.
	CodeRunIDConflict ErrorCode = "RunIdConflict"
	// CodeTranscriptLimitExceeded: the session's transcript is full.
	CodeTranscriptLimitExceeded ErrorCode = "TranscriptLimitExceeded"
	// CodeRunPayloadPruned: the runId is known and ended, but retention
	// pruned its events and result; it is never run again.
	CodeRunPayloadPruned ErrorCode = "RunPayloadPruned"
	// CodeRetentionLimitReached: the session's namespace holds as many runs
	// as the journal keeps for one namespace; new runIds wait until old ones
	// age out.
	CodeRetentionLimitReached ErrorCode = "RetentionLimitReached"
	// CodeHarnessUnavailable: registered but not ready now.
	CodeHarnessUnavailable ErrorCode = "HarnessUnavailable"
	// CodeHarnessAtCapacity: every ready server is full.
	CodeHarnessAtCapacity ErrorCode = "HarnessAtCapacity"
	// CodeAuthFailed: the model provider refused the harness's credential
	// (HTTP 401); the same turn fails again until the credential is fixed.
	CodeAuthFailed ErrorCode = "AuthFailed"
	// CodeAuthProfileNotIsolated: the turn's auth profile would sit in an
	// app-server that also serves other namespaces' sessions.
	CodeAuthProfileNotIsolated ErrorCode = "AuthProfileNotIsolated"
	// CodeAuthProfileUnsupported: the harness cannot authenticate this
	// session's model requests with the turn's auth profile.
	CodeAuthProfileUnsupported ErrorCode = "AuthProfileUnsupported"
)

// The dispatcher API's own codes: requests the API refuses before (or
// besides) a turn.
const (
	CodeBadRequest        ErrorCode = "BadRequest"
	CodeUnauthorized      ErrorCode = "Unauthorized"
	CodeForbidden         ErrorCode = "Forbidden"
	CodeTurnTokenInvalid  ErrorCode = "TurnTokenInvalid"
	CodeSessionNotFound   ErrorCode = "SessionNotFound"
	CodeRunNotFound       ErrorCode = "RunNotFound"
	CodeNotFound          ErrorCode = "NotFound"
	CodeMethodNotAllowed  ErrorCode = "MethodNotAllowed"
	CodeNoPendingToolCall ErrorCode = "NoPendingToolCall"
	CodeTurnNotRunning    ErrorCode = "TurnNotRunning"
	CodeRequestTooLarge   ErrorCode = "RequestTooLarge"
	CodeInternalError     ErrorCode = "InternalError"
	CodeAuthUnavailable   ErrorCode = "AuthUnavailable"
	// CodeNoPendingRequest: the run has no approval or user-input request
	// with that requestId (never asked, or the turn ended).
	CodeNoPendingRequest ErrorCode = "NoPendingRequest"
	// CodeRequestAlreadyResolved: the request was answered (or timed out)
	// before this answer; the first resolution stands.
	CodeRequestAlreadyResolved ErrorCode = "RequestAlreadyResolved"
	// CodeRateLimited: too many requests with tokens the dispatcher has not
	// verified yet came from the caller's address (each would cost a
	// TokenReview); retry after Retry-After.
	CodeRateLimited ErrorCode = "RateLimited"
	// CodeNoNativeThread: the session has no native thread bound on a live
	// server, so there is nothing to read (the MCP inventory); reads never
	// start one.
	CodeNoNativeThread ErrorCode = "NoNativeThread"
	// CodeStoreUnavailable: the dispatcher's store could not take a write
	// the request needed (its volume is full); nothing ran, and the same
	// request may pass after Retry-After.
	CodeStoreUnavailable ErrorCode = "StoreUnavailable"
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
