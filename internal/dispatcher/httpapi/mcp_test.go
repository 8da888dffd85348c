package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/engine"
	"github.com/openclaw/harness-operator/internal/dispatcher/httpapi"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
)

// recordingAuth allows everything and remembers what was asked.
type recordingAuth struct{ asked []httpapi.Attributes }

func (a *recordingAuth) Authorize(_ context.Context, _ string, attrs httpapi.Attributes) (httpapi.Verdict, error) {
	a.asked = append(a.asked, attrs)
	return httpapi.Verdict{Authenticated: true, Allowed: true, User: "gateway"}, nil
}

// GET …/mcp-inventory of a session that never ran a turn is 404
// NoNativeThread (nothing is started to answer it), of a session that does
// not exist 404 SessionNotFound; it is authorized like the session's other
// reads (get agentsessions/turns). The listing of a bound thread is pinned
// with the real Codex in internal/dispatcher/engine ("MCP servers of a turn").
func TestMCPInventoryOfAnUnboundSessionIsNoNativeThread(t *testing.T) {
	jrnl, err := journal.Open(t.TempDir(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = jrnl.Close() })
	sessions := oneSession{&v1alpha1.AgentSession{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: testName, UID: "u-1"}}}
	eng := engine.New(sessions, nil, jrnl, engine.Options{})
	t.Cleanup(eng.Close)
	auth := &recordingAuth{}
	h, err := httpapi.NewHandler(httpapi.Config{Engine: eng, Store: jrnl, Sessions: sessions, Authorizer: auth})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		code wire.ErrorCode
	}{
		{sessionPath("/mcp-inventory"), wire.CodeNoNativeThread},
		{"/v1/namespaces/" + testNS + "/agentsessions/other/mcp-inventory", wire.CodeSessionNotFound},
	} {
		req := httptest.NewRequest(http.MethodGet, tc.path, nil)
		req.Header.Set("Authorization", "Bearer t")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var got wire.Error
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != http.StatusNotFound || got.Code != tc.code {
			t.Errorf("GET %s = %d %s, want 404 %s", tc.path, rec.Code, rec.Body, tc.code)
		}
	}
	want := httpapi.Attributes{Verb: httpapi.VerbGet, Namespace: testNS, Name: testName, Subresource: httpapi.SubresourceTurns}
	if len(auth.asked) == 0 || auth.asked[0] != want {
		t.Errorf("authorized %+v, want %+v", auth.asked, want)
	}
}
