package wire

import (
	"net/http"
	"testing"
)

func TestErrorCodeTable(t *testing.T) {
	want := map[ErrorCode]struct {
		status    int
		retryable bool
	}{
		// The turn's error codes (docs/dispatcher-api.md, "Errors").
		CodeHarnessNotRegistered: {422, false}, CodeHarnessUnsupported: {422, false}, CodeVersionBelowFloor: {422, false},
		CodeToolPolicyUnenforceable: {422, false}, CodeOverrideDenied: {422, false}, CodeArtifactMismatch: {422, false},
		CodeNativeThreadLost: {422, false}, CodeSessionMismatch: {422, false}, CodeEmbeddedRuntimeSelected: {409, false},
		CodeRunIDConflict: {409, false}, CodeTranscriptLimitExceeded: {413, false}, CodeRunPayloadPruned: {410, false},
		CodeRetentionLimitReached: {429, true}, CodeHarnessUnavailable: {503, true}, CodeHarnessAtCapacity: {503, true},
		CodeAuthFailed: {502, false}, CodeAuthProfileNotIsolated: {403, false}, CodeAuthProfileUnsupported: {422, false},
	}
	codes := ErrorCodes()
	if len(codes) != len(want) {
		t.Fatalf("the docs list %d turn error codes, table has %d", len(want), len(codes))
	}
	for _, c := range codes {
		w, ok := want[c]
		if !ok || c.HTTPStatus() != w.status || c.Retryable() != w.retryable || !c.IsTurnError() {
			t.Errorf("%s = %d/%v, want %+v", c, c.HTTPStatus(), c.Retryable(), w)
		}
	}
	if ErrorCode("Nope").HTTPStatus() != http.StatusInternalServerError || ErrorCode("Nope").Retryable() || ErrorCode("Nope").IsTurnError() {
		t.Errorf("an unknown code must be a non-retryable 500")
	}
}

// The API's own codes keep the statuses the dispatcher always answered them
// with; only a 503 and a 429 are retryable, and none is a turn error
// (kubectl-harness exits 3 only for those).
func TestAPICodesAnswerTheirStatus(t *testing.T) {
	for code, status := range map[ErrorCode]int{
		CodeBadRequest: 400, CodeUnauthorized: 401, CodeForbidden: 403, CodeTurnTokenInvalid: 403,
		CodeSessionNotFound: 404, CodeRunNotFound: 404, CodeNotFound: 404, CodeMethodNotAllowed: 405,
		CodeNoPendingToolCall: 409, CodeTurnNotRunning: 409, CodeRequestTooLarge: 413, CodeInternalError: 500,
		CodeAuthUnavailable: 503, CodeRateLimited: 429, CodeNoPendingRequest: 404, CodeRequestAlreadyResolved: 409,
		CodeNoNativeThread: 404, CodeStoreUnavailable: 503,
	} {
		if code.HTTPStatus() != status || code.Retryable() != (status == 503 || status == 429) || code.IsTurnError() {
			t.Errorf("%s = %d retryable=%v turn=%v, want %d", code, code.HTTPStatus(), code.Retryable(), code.IsTurnError(), status)
		}
	}
	if got := len(errorCodes) - len(ErrorCodes()); got != 18 {
		t.Errorf("the table has %d API codes; a new one needs a row in this test", got)
	}
}
