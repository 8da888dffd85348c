package engine

import (
	"testing"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// The decision record shows the route facts a turn carried, but never a
// credential an authored base URL may hold.
func TestLoggedRouteMasksCredentialsOfTheBaseURL(t *testing.T) {
	for _, tc := range []struct{ baseURL, want string }{
		{"http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"},
		{"", ""},
		{"https://user:s3cret@models.example/v1", "https://redacted@models.example/v1"},
		{"https://models.example/v1?key=s3cret&x=1", "https://models.example/v1?redacted"},
		{"https://models.example/v1#s3cret", "https://models.example/v1"},
		{"http://[::1", "(unparseable, not shown)"},
	} {
		in := wire.ModelProvider{API: "openai-responses", BaseURL: tc.baseURL, RequestTransportOverrides: "none",
			RuntimePolicy: &wire.RouteRuntimePolicy{CompatibleIDs: []string{"codex"}}}
		got := loggedRoute(in)
		if got.BaseURL != tc.want {
			t.Errorf("loggedRoute(%q).BaseURL = %q, want %q", tc.baseURL, got.BaseURL, tc.want)
		}
		if got.API != in.API || got.RequestTransportOverrides != in.RequestTransportOverrides || got.RuntimePolicy != in.RuntimePolicy {
			t.Errorf("loggedRoute(%q) changed another fact: %+v", tc.baseURL, got)
		}
	}
}
