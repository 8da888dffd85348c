package appserver

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// The contract between the operator's managed app-server pods
// (`codex app-server --ws-auth signed-bearer-token`) and the clients that
// dial them, the manager's handshake and the dispatcher: each connection
// presents a fresh HS256 JWT signed with the harness's shared secret (the
// token Secret), so what crosses the network in cleartext expires within
// minutes instead of being a standing credential.
const (
	// SignedBearerIssuer is the `iss` of the tokens and the pods' --ws-issuer.
	SignedBearerIssuer = "harness-operator"
	// SignedBearerAudience is the `aud` of the tokens and the pods'
	// --ws-audience.
	SignedBearerAudience = "codex-app-server"
	// SignedBearerTTL is how long a minted token is valid. Codex checks
	// expiry only at the WebSocket upgrade, so an established connection
	// outlives its token; a redial mints a new one.
	SignedBearerTTL = 5 * time.Minute
	// MinSignedBearerSecret is the shortest shared secret Codex accepts
	// (after trimming whitespace) for --ws-shared-secret-file.
	MinSignedBearerSecret = 32
)

// SignedBearer mints the short-lived bearer tokens that
// `codex app-server --ws-auth signed-bearer-token` verifies: HS256 over the
// shared secret, with exp (required by Codex), iat, nbf, and the issuer and
// audience the server was started with.
type SignedBearer struct {
	// Secret is the shared secret, the content of the server's
	// --ws-shared-secret-file (Codex trims surrounding whitespace).
	Secret []byte
	// Issuer and Audience are the `iss` and `aud` claims.
	Issuer, Audience string
	// TTL is the token's lifetime (SignedBearerTTL when zero).
	TTL time.Duration
	// Now is the clock (time.Now when nil); tests mint expired tokens.
	Now func() time.Time
}

// ManagedServerAuth is the SignedBearer for a managed app-server pod whose
// shared secret is secret (the harness's token Secret).
func ManagedServerAuth(secret string) *SignedBearer {
	return &SignedBearer{Secret: []byte(secret), Issuer: SignedBearerIssuer, Audience: SignedBearerAudience}
}

// Mint returns a new signed token. The error never contains the secret.
func (s *SignedBearer) Mint() (string, error) {
	secret := bytes.TrimSpace(s.Secret) // as Codex reads its secret file
	if len(secret) < MinSignedBearerSecret {
		return "", fmt.Errorf("appserver: the signed-bearer shared secret has %d bytes, Codex requires at least %d",
			len(secret), MinSignedBearerSecret)
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	ttl := s.TTL
	if ttl == 0 {
		ttl = SignedBearerTTL
	}
	t := now()
	claims := jwt.RegisteredClaims{
		Issuer:    s.Issuer,
		IssuedAt:  jwt.NewNumericDate(t),
		NotBefore: jwt.NewNumericDate(t),
		ExpiresAt: jwt.NewNumericDate(t.Add(ttl)),
	}
	if s.Audience != "" {
		claims.Audience = jwt.ClaimStrings{s.Audience}
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
	if err != nil {
		return "", errors.New("appserver: sign the bearer token failed")
	}
	return tok, nil
}
