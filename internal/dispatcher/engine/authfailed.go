package engine

import (
	"encoding/json"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// authFailure is the AuthFailed error of a turn that failed because the
// model provider refused the harness's credential, or nil. Codex 0.169.0
// reports a model's HTTP 401 as codexErrorInfo
// {"httpConnectionFailed":{"httpStatusCode":401}} (or, for a stream that
// failed to connect, responseStreamConnectionFailed), and its schema also
// has the class `unauthorized`; all three are the same failure to the
// gateway: not retryable, fixed only by fixing the credential
// (docs/codex-app-server.md, "Model authentication").
func authFailure(res *wire.TurnResult, h *v1alpha1.AgentHarness) *wire.Error {
	if res == nil || res.Terminal.Kind != wire.TerminalFailed || !unauthorized(res.Terminal.ErrorInfo) {
		return nil
	}
	return wire.Errorf(wire.CodeAuthFailed, "",
		"The model provider refused the credential of AgentHarness %s/%s (HTTP 401): %s. "+
			"Renew or replace the credential the app-server uses (spec.appServer.credentials, or the external server's login); "+
			"the same turn fails again until then.", h.Namespace, h.Name, res.Terminal.Message)
}

// unauthorized reports whether a codexErrorInfo is an authentication
// failure.
func unauthorized(info string) bool {
	if info == "unauthorized" {
		return true
	}
	var http map[string]struct {
		Status *int `json:"httpStatusCode"`
	}
	if json.Unmarshal([]byte(info), &http) != nil {
		return false
	}
	for _, class := range []string{"httpConnectionFailed", "responseStreamConnectionFailed"} {
		if c, ok := http[class]; ok && c.Status != nil && *c.Status == 401 {
			return true
		}
	}
	return false
}
