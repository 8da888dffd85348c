package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

type countingAuthorizer struct {
	calls   int
	verdict Verdict
	err     error
}

func (c *countingAuthorizer) Authorize(_ context.Context, _ string, _ Attributes) (Verdict, error) {
	c.calls++
	return c.verdict, c.err
}

func TestAuthorizeCachesVerdictsByTokenHashAndAttributes(t *testing.T) {
	now := time.Unix(1000, 0)
	fake := &countingAuthorizer{verdict: Verdict{Authenticated: true, User: "u", Allowed: true}}
	h := &Handler{auth: wholeAuthorizer{fake}, principals: newPrincipalLimiter(-1, 0), retryAfter: time.Second, limiter: newSourceLimiter(-1, 0),
		cache: newAuthCache(10*time.Second, 10*time.Second, func() time.Time { return now })}
	run := func(token string, a Attributes) int {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		h.authorize(w, r, a)
		if w.Code == 0 {
			return http.StatusOK
		}
		return w.Code
	}
	create := Attributes{Verb: VerbCreate, Namespace: "ns", Name: "s", Subresource: SubresourceTurns}
	get := create
	get.Verb = VerbGet

	first, second := run("tok", create), run("tok", create)
	if first != http.StatusOK || second != http.StatusOK || fake.calls != 1 {
		t.Fatalf("want one review for two equal requests, got %d", fake.calls)
	}
	if run("tok", get) != http.StatusOK || fake.calls != 2 {
		t.Fatalf("other attributes: %d reviews", fake.calls)
	}
	if run("tok2", create) != http.StatusOK || fake.calls != 3 {
		t.Fatalf("other token: %d reviews", fake.calls)
	}
	// A one-step Authorizer's principal is the token's hash, never the token.
	for _, k := range h.cache.verdicts.Keys() {
		tok, tok2 := sha256.Sum256([]byte("tok")), sha256.Sum256([]byte("tok2"))
		if k != "token "+hex.EncodeToString(tok[:]) && k != "token "+hex.EncodeToString(tok2[:]) {
			t.Fatalf("unexpected cache key %q", k)
		}
	}
	for _, k := range h.cache.identities.Keys() {
		if k != sha256.Sum256([]byte("tok")) && k != sha256.Sum256([]byte("tok2")) {
			t.Fatalf("unexpected identity key %x", k)
		}
	}
	now = now.Add(11 * time.Second)
	if run("tok", create) != http.StatusOK || fake.calls != 4 {
		t.Fatalf("expired entry: %d reviews", fake.calls)
	}

	fake.verdict = Verdict{Authenticated: true, User: "u", Allowed: false, Reason: "no RBAC"}
	if got := run("tok3", create); got != http.StatusForbidden {
		t.Fatalf("denied: %d", got)
	}
	fake.verdict = Verdict{}
	if got := run("tok4", create); got != http.StatusUnauthorized {
		t.Fatalf("unauthenticated: %d", got)
	}
	if got := run("", create); got != http.StatusUnauthorized {
		t.Fatalf("no token: %d", got)
	}
	calls := fake.calls
	fake.err = errors.New("apiserver down")
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	r.Header.Set("Authorization", "Bearer tok5")
	w := httptest.NewRecorder()
	h.authorize(w, r, create)
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), string(wire.CodeAuthUnavailable)) {
		t.Fatalf("review error: %d %v %s", w.Code, w.Header(), w.Body)
	}
	fake.err = nil
	if run("tok5", create) != http.StatusUnauthorized || fake.calls != calls+2 {
		t.Fatalf("an error must not be cached: %d reviews", fake.calls-calls)
	}
}

func TestBearerToken(t *testing.T) {
	for hdr, want := range map[string]string{
		"Bearer abc": "abc", "bearer  abc ": "abc", "Basic abc": "", "Bearer": "", "": "",
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Authorization", hdr)
		if got := bearerToken(r); got != want {
			t.Errorf("%q: got %q, want %q", hdr, got, want)
		}
	}
}

// TestBearerTokenThroughTheServiceProxy: the API server's service proxy
// removes Authorization, so the token may come in wire.ProxyAuthorizationHeader;
// a bearer token in Authorization wins when both are present.
func TestBearerTokenThroughTheServiceProxy(t *testing.T) {
	for _, tc := range []struct {
		authz, proxy, want string
	}{
		{"", "Bearer abc", "abc"},
		{"", "bearer  abc ", "abc"},
		{"", "Basic abc", ""},
		{"Bearer direct", "Bearer proxied", "direct"},
		{"Basic dXNlcjpwdw==", "Bearer proxied", "proxied"},
		{"Bearer", "Bearer proxied", "proxied"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		if tc.authz != "" {
			r.Header.Set("Authorization", tc.authz)
		}
		r.Header.Set(wire.ProxyAuthorizationHeader, tc.proxy)
		if got := bearerToken(r); got != tc.want {
			t.Errorf("Authorization %q, %s %q: got %q, want %q", tc.authz, wire.ProxyAuthorizationHeader, tc.proxy, got, tc.want)
		}
	}
}

// TestAuthorizeReviewsTheProxiedToken: the token of the proxy header goes to
// the Authorizer like any other (no verdict without a review), and a request
// with neither header is 401 naming both.
func TestAuthorizeReviewsTheProxiedToken(t *testing.T) {
	fake := &recordingAuthorizer{verdict: Verdict{}}
	h := &Handler{auth: wholeAuthorizer{fake}, principals: newPrincipalLimiter(-1, 0), retryAfter: time.Second, limiter: newSourceLimiter(-1, 0),
		cache: newAuthCache(0, 0, time.Now)}
	a := Attributes{Verb: VerbGet, Namespace: "ns", Name: "s", Subresource: SubresourceTurns}

	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set(wire.ProxyAuthorizationHeader, "Bearer not-a-valid-token")
	w := httptest.NewRecorder()
	if _, ok := h.authorize(w, r, a); ok || w.Code != http.StatusUnauthorized || len(fake.tokens) != 1 || fake.tokens[0] != "not-a-valid-token" {
		t.Fatalf("unauthenticated proxied token: code %d, reviewed %q", w.Code, fake.tokens)
	}
	fake.verdict = Verdict{Authenticated: true, User: "u", Allowed: true}
	w = httptest.NewRecorder()
	if _, ok := h.authorize(w, r, a); !ok || len(fake.tokens) != 2 {
		t.Fatalf("allowed proxied token: code %d, reviewed %q", w.Code, fake.tokens)
	}

	w = httptest.NewRecorder()
	if _, ok := h.authorize(w, httptest.NewRequest(http.MethodGet, "/", nil), a); ok || w.Code != http.StatusUnauthorized ||
		!strings.Contains(w.Body.String(), wire.ProxyAuthorizationHeader) || len(fake.tokens) != 2 {
		t.Fatalf("no token: code %d, body %s, reviews %d", w.Code, w.Body, len(fake.tokens))
	}
}

type recordingAuthorizer struct {
	tokens  []string
	verdict Verdict
}

func (a *recordingAuthorizer) Authorize(_ context.Context, token string, _ Attributes) (Verdict, error) {
	a.tokens = append(a.tokens, token)
	return a.verdict, nil
}
