package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// jwtFor is a token with these claims; its signature is irrelevant here:
// the lifetime is read only once the TokenReview has accepted the token.
func jwtFor(t *testing.T, aud string, iat, exp *time.Time) string {
	t.Helper()
	c := jwt.RegisteredClaims{Audience: jwt.ClaimStrings{aud}, Subject: "system:serviceaccount:ns:harness-cli"}
	if iat != nil {
		c.IssuedAt = jwt.NewNumericDate(*iat)
	}
	if exp != nil {
		c.ExpiresAt = jwt.NewNumericDate(*exp)
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString([]byte("test key"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The lifetime rule: exp − iat at most the maximum; a token whose lifetime
// cannot be read is refused, naming why and the flag.
func TestTokenLifetimeRule(t *testing.T) {
	iat := time.Unix(1_800_000_000, 0)
	at := func(d time.Duration) *time.Time { x := iat.Add(d); return &x }
	for _, tc := range []struct {
		name  string
		token string
		want  string // "" accepted, else a part of the refusal
	}{
		{"control: the CLI's 10 minutes", jwtFor(t, "harness-dispatcher", &iat, at(10*time.Minute)), ""},
		{"control: a projected volume's hour", jwtFor(t, "harness-dispatcher", &iat, at(time.Hour)), ""},
		{"control: exactly the maximum", jwtFor(t, "harness-dispatcher", &iat, at(24*time.Hour)), ""},
		{"a year", jwtFor(t, "harness-dispatcher", &iat, at(365*24*time.Hour)), "issued for 8760h0m0s"},
		{"no exp", jwtFor(t, "harness-dispatcher", &iat, nil), "no exp or no iat"},
		{"no iat", jwtFor(t, "harness-dispatcher", nil, at(time.Hour)), "no exp or no iat"},
		{"not a JWT", "opaque-static-token", "not a JWT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tokenClaims(tc.token)
			got := lifetimeRefusal(c, err, 24*time.Hour)
			if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("refusal %q, want %q", got, tc.want)
			}
			if got != "" && (!strings.Contains(got, "--max-token-lifetime") || strings.Contains(got, tc.token)) {
				t.Fatalf("refusal %q must name the flag and never quote the token", got)
			}
		})
	}
}

// audienceAPIServer accepts every token for the audiences it is asked for
// (or the API server's own, "https://kubernetes.default.svc") and grants
// every SubjectAccessReview.
type audienceAPIServer struct{}

func (audienceAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case strings.HasSuffix(r.URL.Path, "/tokenreviews"):
		var tr authnv1.TokenReview
		_ = json.NewDecoder(r.Body).Decode(&tr)
		aud := tr.Spec.Audiences
		if len(aud) == 0 {
			aud = []string{"https://kubernetes.default.svc"}
		}
		_ = json.NewEncoder(w).Encode(authnv1.TokenReview{Status: authnv1.TokenReviewStatus{
			Authenticated: true, Audiences: aud, User: authnv1.UserInfo{Username: "system:serviceaccount:ns:harness-cli"}}})
	case strings.HasSuffix(r.URL.Path, "/subjectaccessreviews"):
		_ = json.NewEncoder(w).Encode(authzv1.SubjectAccessReview{Status: authzv1.SubjectAccessReviewStatus{Allowed: true}})
	default:
		http.NotFound(w, r)
	}
}

// A token for the dispatcher's audience minted for a year is refused 401
// through the Handler, the answer naming its lifetime and the flag and not
// quoting the token; the control, a 10-minute token, is authorized. A
// token for the API server's own audience (accepted without
// --require-token-audience) is not bound by the maximum.
func TestALongLivedDispatcherTokenIsRefused(t *testing.T) {
	ts := httptest.NewServer(audienceAPIServer{})
	defer ts.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	a := NewKubeAuthorizer(cs, "harness-dispatcher")
	if err := a.RequireAudience(); err != nil {
		t.Fatal(err)
	}
	if err := a.SetMaxTokenLifetime(DefaultMaxTokenLifetime); err != nil {
		t.Fatal(err)
	}
	h := &Handler{auth: a, retryAfter: time.Second, limiter: newSourceLimiter(-1, 0),
		principals: newPrincipalLimiter(-1, 0), cache: newAuthCache(time.Minute, time.Minute, time.Now)}
	iat := time.Now()
	year, tenMinutes := iat.Add(365*24*time.Hour), iat.Add(10*time.Minute)

	longLived := jwtFor(t, "harness-dispatcher", &iat, &year)
	w := call(h, "10.0.0.1:1", longLived)
	if w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "issued for 8760h") ||
		!strings.Contains(w.Body.String(), "--max-token-lifetime") || strings.Contains(w.Body.String(), longLived) {
		t.Fatalf("a one-year dispatcher token: %d %s; want 401 naming its lifetime and the flag, without the token", w.Code, w.Body)
	}
	if w := call(h, "10.0.0.1:1", jwtFor(t, "harness-dispatcher", &iat, &tenMinutes)); w.Code != http.StatusOK {
		t.Fatalf("control: a 10-minute dispatcher token: %d %s", w.Code, w.Body)
	}

	open := NewKubeAuthorizer(cs, "harness-dispatcher")
	if err := open.SetMaxTokenLifetime(DefaultMaxTokenLifetime); err != nil {
		t.Fatal(err)
	}
	id, err := open.authenticate(context.Background(), jwtFor(t, "https://kubernetes.default.svc", &iat, &year))
	if err != nil || !id.Authenticated {
		t.Fatalf("a one-year token for the API server's audience: %+v, %v; the maximum binds only the dispatcher's audience", id, err)
	}
}
