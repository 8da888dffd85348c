package dispatchapi

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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
	h := &Handler{auth: fake, retryAfter: time.Second,
		cache: &authCache{ttl: 10 * time.Second, now: func() time.Time { return now }, items: map[authKey]authEntry{}}}
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
	for k := range h.cache.items {
		if k.token != sha256.Sum256([]byte("tok")) && k.token != sha256.Sum256([]byte("tok2")) {
			t.Fatalf("unexpected cache key %x", k.token)
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
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), CodeAuthUnavailable) {
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
