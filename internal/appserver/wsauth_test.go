package appserver_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/appserver"
	"github.com/openclaw/harness-operator/internal/codextest"
)

// sharedSecret is a signed-bearer shared secret for test listeners only.
const sharedSecret = "test-signed-bearer-shared-secret-8c41e07d"

// A server started as the operator's pods are (`--ws-auth
// signed-bearer-token` with the operator's issuer and audience) accepts a
// freshly minted short-lived token and refuses, with 401, an expired token,
// a token for another audience, one signed with another secret, and the
// shared secret sent as a static capability token. The control is the same
// dial with a valid token.
func TestSignedBearerTokenAuth(t *testing.T) {
	t.Parallel()
	r := startRig(t, codextest.Options{Transport: codextest.WebSocket, ListenHost: "127.0.0.5",
		WSSharedSecret: sharedSecret + "\n", WSIssuer: appserver.SignedBearerIssuer, WSAudience: appserver.SignedBearerAudience})
	valid := func() *appserver.SignedBearer { return appserver.ManagedServerAuth(sharedSecret) }
	expired := valid()
	// Beyond the 5-minute lifetime and Codex's default 30 s clock skew.
	expired.Now = func() time.Time { return time.Now().Add(-appserver.SignedBearerTTL - time.Minute) }
	otherAudience := valid()
	otherAudience.Audience = "another-service"
	otherIssuer := valid()
	otherIssuer.Issuer = "someone-else"
	otherSecret := appserver.ManagedServerAuth(strings.Repeat("x", 40))

	ctx := testCtx(t, 30*time.Second)
	for _, tc := range []struct {
		name string
		opts appserver.WebSocketOptions
		body string
	}{
		{"expired token", appserver.WebSocketOptions{SignedBearer: expired}, "expired websocket jwt"},
		{"another audience", appserver.WebSocketOptions{SignedBearer: otherAudience}, "websocket jwt audience mismatch"},
		{"another issuer", appserver.WebSocketOptions{SignedBearer: otherIssuer}, "websocket jwt issuer mismatch"},
		{"another secret", appserver.WebSocketOptions{SignedBearer: otherSecret}, "invalid websocket jwt"},
		{"static capability token", appserver.WebSocketOptions{Token: sharedSecret}, "invalid websocket jwt"},
		{"no token", appserver.WebSocketOptions{}, "missing websocket bearer token"},
	} {
		_, err := appserver.DialWebSocket(ctx, r.srv.URL, tc.opts)
		var he *appserver.HandshakeError
		if !errors.Is(err, appserver.ErrUnauthorized) || !errors.As(err, &he) || he.Body != tc.body {
			t.Errorf("%s: %v; want 401 %q", tc.name, err, tc.body)
		}
		if err != nil && strings.Contains(err.Error(), sharedSecret) {
			t.Errorf("%s: the error leaks the secret: %v", tc.name, err)
		}
	}

	// Control: a valid token, minted per dial; two dials both connect.
	for range 2 {
		tr, err := appserver.DialWebSocket(ctx, r.srv.URL, appserver.WebSocketOptions{SignedBearer: valid()})
		if err != nil {
			t.Fatalf("dial with a valid signed token: %v", err)
		}
		c, err := appserver.Connect(ctx, tr, appserver.Options{})
		if err != nil {
			t.Fatalf("handshake: %v", err)
		}
		_ = c.Close()
	}
}

// A shared secret shorter than Codex accepts is refused before any dial.
func TestSignedBearerRefusesShortSecret(t *testing.T) {
	t.Parallel()
	_, err := appserver.ManagedServerAuth("too-short").Mint()
	if err == nil || !strings.Contains(err.Error(), "at least 32") || strings.Contains(err.Error(), "too-short") {
		t.Fatalf("Mint with a short secret: %v", err)
	}
}
