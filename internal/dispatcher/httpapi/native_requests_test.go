package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// The answer routes take the turn token, refuse a malformed answer naming
// its field, and answer NoPendingRequest for a request the run does not
// have (the engine's own tests cover 202 and 409 with a running turn).
func TestNativeAnswerRoutes(t *testing.T) {
	t.Parallel()
	f := newAPIFixture(t, 0, nil)
	f.run(t, 1, 10, false)
	token := f.handler.TurnToken(f.session, "run-1")
	cases := []struct {
		name, route, body, token string
		status                   int
		code                     wire.ErrorCode
		inMessage                string
	}{
		{"an approval of an unknown request", "/approvals", `{"requestId":"call_9","decision":"approve_once"}`, token,
			http.StatusNotFound, wire.CodeNoPendingRequest, "call_9"},
		{"user input of an unknown request", "/user-input", `{"requestId":"call_9","answers":{"q":{"text":"x"}}}`, token,
			http.StatusNotFound, wire.CodeNoPendingRequest, "call_9"},
		{"an unknown decision", "/approvals", `{"requestId":"call_9","decision":"maybe"}`, token,
			http.StatusBadRequest, wire.CodeBadRequest, "decision"},
		{"no requestId", "/user-input", `{"answers":{}}`, token,
			http.StatusBadRequest, wire.CodeBadRequest, "requestId"},
		{"an unknown field", "/approvals", `{"requestId":"call_9","decision":"deny","scope":"session"}`, token,
			http.StatusBadRequest, wire.CodeBadRequest, "scope"},
		{"another run's token", "/approvals", `{"requestId":"call_9","decision":"deny"}`, f.handler.TurnToken(f.session, "run-2"),
			http.StatusForbidden, wire.CodeTurnTokenInvalid, ""},
	}
	for _, tc := range cases {
		r := httptest.NewRequest(http.MethodPost, sessionPath("/turns/run-1"+tc.route), strings.NewReader(tc.body))
		r.Header.Set("Authorization", "Bearer gateway-token")
		r.Header.Set(wire.TurnTokenHeader, tc.token)
		w := httptest.NewRecorder()
		f.handler.ServeHTTP(w, r)
		var e wire.Error
		_ = json.Unmarshal(w.Body.Bytes(), &e)
		if w.Code != tc.status || e.Code != tc.code || !strings.Contains(e.Message, tc.inMessage) {
			t.Errorf("%s: %d %s, want %d %s naming %q", tc.name, w.Code, w.Body, tc.status, tc.code, tc.inMessage)
		}
	}
}
