package httpapi

import (
	"crypto/sha256"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"
)

// Bounds of the verdict caches and of the rate limiter (Config's defaults).
const (
	// DefaultNegativeAuthTTL is how long a token the API server rejected is
	// remembered as rejected.
	DefaultNegativeAuthTTL = 5 * time.Second
	// DefaultUnverifiedRate and DefaultUnverifiedBurst bound, per source
	// address, the requests whose token is not cached as valid (each costs
	// a TokenReview): a steady rate per second and a burst.
	DefaultUnverifiedRate  = 5
	DefaultUnverifiedBurst = 20

	verdictCacheSize  = 4096 // (token, attributes) pairs of valid tokens
	validCacheSize    = 4096 // valid tokens
	negativeCacheSize = 1024 // rejected tokens
	sourceCacheSize   = 4096 // source addresses with a limiter
)

// authCache keeps verdicts for a short time, keyed by the token's SHA-256
// (raw tokens are never kept): a valid token's verdict per attributes, the
// valid tokens themselves (the rate limit's exemption), and, apart, the
// tokens the API server rejected. Each is a bounded LRU whose entries also
// expire: a full cache evicts its least recently used entry, never the
// others, so a flood of made-up tokens can neither grow the memory nor push
// the busy gateways' verdicts out (it lands in the negative cache only).
type authCache struct {
	ttl, negativeTTL time.Duration
	now              func() time.Time

	verdicts *lru.Cache[authKey, authEntry]
	valid    *lru.Cache[[32]byte, time.Time] // token → expiry
	rejected *lru.Cache[[32]byte, authEntry]
}

type authKey struct {
	token [32]byte
	attrs Attributes
}

type authEntry struct {
	v       Verdict
	expires time.Time
}

// newAuthCache returns the caches; a ttl ≤ 0 disables them all.
func newAuthCache(ttl, negativeTTL time.Duration, now func() time.Time) *authCache {
	verdicts, _ := lru.New[authKey, authEntry](verdictCacheSize) // sizes are positive: no error
	valid, _ := lru.New[[32]byte, time.Time](validCacheSize)
	rejected, _ := lru.New[[32]byte, authEntry](negativeCacheSize)
	return &authCache{ttl: ttl, negativeTTL: min(negativeTTL, ttl), now: now, verdicts: verdicts, valid: valid, rejected: rejected}
}

// verdict is the cached verdict of token for attrs: a valid token's for
// these attributes, or the rejection of a token the API server refused.
func (c *authCache) verdict(token string, attrs Attributes) (Verdict, bool) {
	if c.ttl <= 0 {
		return Verdict{}, false
	}
	h := sha256.Sum256([]byte(token))
	now := c.now()
	if e, ok := c.verdicts.Get(authKey{h, attrs}); ok && now.Before(e.expires) {
		authCacheLookups.WithLabelValues("hit").Inc()
		return e.v, true
	}
	if e, ok := c.rejected.Get(h); ok && now.Before(e.expires) {
		authCacheLookups.WithLabelValues("rejected").Inc()
		return e.v, true
	}
	authCacheLookups.WithLabelValues("miss").Inc()
	return Verdict{}, false
}

// knownValid says whether token authenticated within the TTL (for any
// attributes): a new session of a known gateway is not rate limited.
func (c *authCache) knownValid(token string) bool {
	if c.ttl <= 0 {
		return false
	}
	exp, ok := c.valid.Get(sha256.Sum256([]byte(token)))
	return ok && c.now().Before(exp)
}

func (c *authCache) put(token string, attrs Attributes, v Verdict) {
	if c.ttl <= 0 {
		return
	}
	h := sha256.Sum256([]byte(token))
	now := c.now()
	if !v.Authenticated {
		if c.negativeTTL > 0 {
			c.rejected.Add(h, authEntry{v: v, expires: now.Add(c.negativeTTL)})
		}
		return
	}
	c.valid.Add(h, now.Add(c.ttl))
	c.verdicts.Add(authKey{h, attrs}, authEntry{v: v, expires: now.Add(c.ttl)})
}

// sourceLimiter is a token bucket per source address, for the requests
// whose token is not cached as valid. The addresses are a bounded LRU: an
// address evicted by a flood of others starts with a full bucket again,
// which bounds what one address gains (one burst) by that.
type sourceLimiter struct {
	rate  rate.Limit
	burst int
	mu    sync.Mutex // a limiter is created once per address
	byIP  *lru.Cache[string, *rate.Limiter]
}

// newSourceLimiter returns a limiter of perSecond requests and burst per
// address; perSecond ≤ 0 disables it.
func newSourceLimiter(perSecond float64, burst int) *sourceLimiter {
	byIP, _ := lru.New[string, *rate.Limiter](sourceCacheSize)
	return &sourceLimiter{rate: rate.Limit(perSecond), burst: max(burst, 1), byIP: byIP}
}

func (l *sourceLimiter) allow(source string) bool {
	if l.rate <= 0 {
		return true
	}
	l.mu.Lock()
	lim, ok := l.byIP.Get(source)
	if !ok {
		lim = rate.NewLimiter(l.rate, l.burst)
		l.byIP.Add(source, lim)
	}
	l.mu.Unlock()
	return lim.Allow()
}

// retryAfter is the Retry-After of a refusal: the time one request's
// allowance takes to come back.
func (l *sourceLimiter) retryAfter() time.Duration {
	if l.rate <= 0 {
		return time.Second
	}
	return time.Duration(float64(time.Second) / float64(l.rate))
}
