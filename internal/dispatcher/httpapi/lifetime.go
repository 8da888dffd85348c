package httpapi

import (
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// DefaultMaxTokenLifetime is the longest lifetime (exp − iat) of a token
// for the dispatcher's audience that the dispatcher accepts by default. It
// admits a projected ServiceAccount token volume (one hour unless its
// expirationSeconds says more) and the CLI's 10-minute tokens, and refuses
// a token minted to last for months.
const DefaultMaxTokenLifetime = 24 * time.Hour

// tokenClaims reads a JWT's registered claims without checking its
// signature: it is only called for a token the TokenReview has accepted.
func tokenClaims(token string) (*jwt.RegisteredClaims, error) {
	claims := &jwt.RegisteredClaims{}
	if _, _, err := jwt.NewParser().ParseUnverified(token, claims); err != nil {
		return nil, err
	}
	return claims, nil
}

// lifetimeRefusal says why a token with these claims (or claimsErr) lives
// too long for max, or "". A token whose lifetime cannot be read is
// refused: the bound is kept only if every token shows it keeps it. The
// message names the lifetime and the flag, never the token.
func lifetimeRefusal(c *jwt.RegisteredClaims, claimsErr error, max time.Duration) string {
	ask := fmt.Sprintf("request a token for the dispatcher's audience valid for at most %s (--max-token-lifetime)", max)
	switch {
	case claimsErr != nil:
		return "the bearer token's lifetime cannot be read (it is not a JWT); " + ask
	case c.ExpiresAt == nil || c.IssuedAt == nil:
		return "the bearer token has no exp or no iat claim, so its lifetime is unknown; " + ask
	}
	if life := c.ExpiresAt.Sub(c.IssuedAt.Time); life > max {
		return fmt.Sprintf("the bearer token was issued for %s (exp − iat), longer than the dispatcher accepts; %s", life, ask)
	}
	return ""
}
