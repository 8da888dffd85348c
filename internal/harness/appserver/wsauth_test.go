package appserver_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
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
	}{
		{"expired token", appserver.WebSocketOptions{SignedBearer: expired}},
		{"another audience", appserver.WebSocketOptions{SignedBearer: otherAudience}},
		{"another issuer", appserver.WebSocketOptions{SignedBearer: otherIssuer}},
		{"another secret", appserver.WebSocketOptions{SignedBearer: otherSecret}},
		{"static capability token", appserver.WebSocketOptions{Token: sharedSecret}},
		{"no token", appserver.WebSocketOptions{}},
	} {
		_, err := appserver.DialWebSocket(ctx, r.srv.URL, tc.opts)
		// The server's reason (its 401 body) is deliberately not in the
		// error: only the status is.
		if !errors.Is(err, appserver.ErrUnauthorized) {
			t.Errorf("%s: %v; want 401", tc.name, err)
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
