package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// The completion and finalization routes refuse a malformed body with 400
// naming the field before anything is looked up (the engine's tests run
// both on the real Codex). A finalization without the frozen transcript,
// or with a tool call that has no result, is refused: the harness SDK's finalizer
// rejects a missing or unsettled context.
func TestCompletionRoutesRefuseABadBody(t *testing.T) {
	t.Parallel()
	f := newAPIFixture(t, 0, nil)
	cases := []struct {
		name, route, body, inMessage string
	}{
		{"a completion without prompt", "/completions", `{"instructions":"x"}`, "prompt"},
		{"an unknown field", "/completions", `{"prompt":"x","tools":[]}`, "tools"},
		{"a finalization without transcript", "/turns/run-1/finalize", `{"prompt":"finish"}`, "transcriptSource"},
		{"a finalization of an unsettled tool call", "/turns/run-1/finalize",
			`{"prompt":"finish","transcriptSource":"openclaw-transcript","messages":[{"role":"toolCall","callId":"c1","name":"read"}]}`,
			"not settled"},
	}
	for _, tc := range cases {
		r := httptest.NewRequest(http.MethodPost, sessionPath(tc.route), strings.NewReader(tc.body))
		r.Header.Set("Authorization", "Bearer gateway-token")
		w := httptest.NewRecorder()
		f.handler.ServeHTTP(w, r)
		var e wire.Error
		_ = json.Unmarshal(w.Body.Bytes(), &e)
		if w.Code != http.StatusBadRequest || e.Code != wire.CodeBadRequest || !strings.Contains(e.Message, tc.inMessage) {
			t.Errorf("%s: %d %s, want 400 BadRequest naming %q", tc.name, w.Code, w.Body, tc.inMessage)
		}
	}
}
