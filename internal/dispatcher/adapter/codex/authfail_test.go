package codex

import (
	"testing"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// A model that refuses the credential (HTTP 401) fails the turn at once
// (no retry) with Codex 0.169.0's codexErrorInfo
// {"httpConnectionFailed":{"httpStatusCode":401}} — not the `unauthorized`
// class its schema also lists: the dispatcher maps both to AuthFailed
// (docs/codex-app-server.md, "Model authentication").
func TestModelAuthFailureFailsTheTurnAsUnauthorized(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	r.stub.When("AUTH401", stubmodel.HTTPError(401, "invalid api key"))
	res := run(t, r, r.input("AUTH401 please"), &recorder{})
	if res.Terminal.Kind != wire.TerminalFailed || res.Terminal.ErrorInfo != `{"httpConnectionFailed":{"httpStatusCode":401}}` {
		t.Fatalf("turn against a 401 model: %+v", res.Terminal)
	}
	if n := len(r.stub.RequestsContaining("AUTH401")); n != 1 {
		t.Fatalf("Codex sent %d model requests for the 401 turn, want 1 (a 401 is not retried)", n)
	}
}
