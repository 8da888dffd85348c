package httpapi

import (
	"context"
	"crypto/sha256"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"
)

// Bounds of the caches and of the rate limits (Config's defaults).
const (
	// DefaultNegativeAuthTTL is how long a token the API server rejected is
	// remembered as rejected.
	DefaultNegativeAuthTTL = 5 * time.Second
	// DefaultUnverifiedRate and DefaultUnverifiedBurst bound, per source
	// address, the requests whose token is not cached as authenticated
	// (each costs a TokenReview): a steady rate per second and a burst.
	DefaultUnverifiedRate  = 5
	DefaultUnverifiedBurst = 20
	// DefaultRefusedRate and DefaultRefusedBurst bound, per principal (the
	// authenticated user), the SubjectAccessReviews that refuse it: a
	// principal without grants costs the API server at most the burst and
	// then this rate, whatever it asks for.
	DefaultRefusedRate  = 1
	DefaultRefusedBurst = 10
	// reviewLanes is how many uncached SubjectAccessReviews one principal
	// has in flight at once (each holds one of its refusals until it
	// grants); its other requests wait for a lane, so a gateway's first
	// turns of many sessions at once only queue.
	reviewLanes = 4

	identityCacheSize    = 4096 // tokens the API server accepted
	negativeCacheSize    = 1024 // tokens the API server rejected
	principalCacheSize   = 1024 // principals with cached verdicts
	verdictsPerPrincipal = 1024 // one principal's (identity, attributes) verdicts
	sourceCacheSize      = 4096 // source addresses with a limiter
	limitedPrincipals    = 4096 // principals with a refusal budget
)

// authCache keeps what the API server said for a short time, keyed by the
// token's SHA-256 (raw tokens are never kept), in three parts:
//
//   - identities: whom a token authenticates as (a TokenReview's answer),
//     so a token costs one TokenReview per TTL whatever it asks for;
//   - rejected: the tokens the API server refused, apart, so a flood of
//     made-up tokens lands there only;
//   - verdicts: each principal's SubjectAccessReview answers per identity
//     and attributes, in a partition of its own: one principal's misses
//     (random session names) evict only its own verdicts, never a
//     gateway's.
//
// Each is a bounded LRU whose entries also expire.
type authCache struct {
	ttl, negativeTTL time.Duration
	now              func() time.Time

	identities *lru.Cache[[32]byte, identityEntry]
	rejected   *lru.Cache[[32]byte, identityEntry]
	mu         sync.Mutex // creates a principal's partition once
	verdicts   *lru.Cache[string, *lru.Cache[verdictKey, authEntry]]
}

type identityEntry struct {
	id      Identity
	expires time.Time
}

type verdictKey struct {
	identity [32]byte // Identity.digest
	attrs    Attributes
}

type authEntry struct {
	v       Verdict
	expires time.Time
}

// newAuthCache returns the caches; a ttl ≤ 0 disables them all.
func newAuthCache(ttl, negativeTTL time.Duration, now func() time.Time) *authCache {
	identities, _ := lru.New[[32]byte, identityEntry](identityCacheSize) // sizes are positive: no error
	rejected, _ := lru.New[[32]byte, identityEntry](negativeCacheSize)
	verdicts, _ := lru.New[string, *lru.Cache[verdictKey, authEntry]](principalCacheSize)
	return &authCache{ttl: ttl, negativeTTL: min(negativeTTL, ttl), now: now,
		identities: identities, rejected: rejected, verdicts: verdicts}
}

// identity is whom token authenticated as, or its rejection, while cached.
func (c *authCache) identity(token string) (Identity, bool) {
	if c.ttl <= 0 {
		return Identity{}, false
	}
	h := sha256.Sum256([]byte(token))
	now := c.now()
	if e, ok := c.identities.Get(h); ok && now.Before(e.expires) {
		return e.id, true
	}
	if e, ok := c.rejected.Get(h); ok && now.Before(e.expires) {
		return e.id, true
	}
	return Identity{}, false
}

// putIdentity remembers a TokenReview's answer: an accepted token for the
// TTL (never past notAfter, when set: the token's own expiry), a rejected
// one for the negative TTL.
func (c *authCache) putIdentity(token string, id Identity, notAfter time.Time) {
	if c.ttl <= 0 {
		return
	}
	h := sha256.Sum256([]byte(token))
	now := c.now()
	if !id.Authenticated {
		c.identities.Remove(h)
		if c.negativeTTL > 0 {
			c.rejected.Add(h, identityEntry{id: id, expires: now.Add(c.negativeTTL)})
		}
		return
	}
	expires := now.Add(c.ttl)
	if !notAfter.IsZero() && notAfter.Before(expires) {
		expires = notAfter
	}
	c.identities.Add(h, identityEntry{id: id, expires: expires})
}

// verdict is the cached verdict of id for attrs.
func (c *authCache) verdict(id Identity, attrs Attributes) (Verdict, bool) {
	if c.ttl <= 0 {
		return Verdict{}, false
	}
	p, ok := c.verdicts.Get(id.User)
	if !ok {
		return Verdict{}, false
	}
	e, ok := p.Get(verdictKey{id.digest(), attrs})
	if !ok || !c.now().Before(e.expires) {
		return Verdict{}, false
	}
	return e.v, true
}

func (c *authCache) putVerdict(id Identity, attrs Attributes, v Verdict) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	p, ok := c.verdicts.Get(id.User)
	if !ok {
		p, _ = lru.New[verdictKey, authEntry](verdictsPerPrincipal)
		c.verdicts.Add(id.User, p)
	}
	c.mu.Unlock()
	p.Add(verdictKey{id.digest(), attrs}, authEntry{v: v, expires: c.now().Add(c.ttl)})
}

// sourceLimiter is a token bucket per source address, for the requests
// whose token is not cached as authenticated. The addresses are a bounded
// LRU: an address evicted by a flood of others starts with a full bucket
// again, which bounds what one address gains (one burst) by that.
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
	return perRequest(l.rate)
}

func perRequest(r rate.Limit) time.Duration {
	if r <= 0 {
		return time.Second
	}
	return time.Duration(float64(time.Second) / float64(r))
}

// principalLimiter is each principal's budget of refusals: a review takes
// one from the principal's bucket before it is sent, and a grant gives it
// back, so a refusal (or a review that could not be evaluated) is what
// spends it. A principal whose bucket is empty gets no new review until it
// refills (429). So a principal with grants is never slowed by its own
// traffic, and one without grants costs the API server its burst and then
// its rate, exactly. Its reviews run in at most reviewLanes lanes (never
// more than its burst), so a gateway's many first turns at once queue
// instead of emptying the bucket. Principals are a bounded LRU like the
// sources.
type principalLimiter struct {
	rate   float64
	burst  int
	now    func() time.Time
	mu     sync.Mutex // a principal's state is created once
	byUser *lru.Cache[string, *principalState]
}

type principalState struct {
	budget refusalBudget
	lanes  chan struct{}
}

// refusalBudget is a token bucket that is taken from before a review and
// refunded after a grant. golang.org/x/time/rate's Reservation.Cancel
// refunds only part of a token once later reservations exist, which would
// slowly drain a busy gateway's budget by its grants; this one refunds
// exactly.
type refusalBudget struct {
	mu     sync.Mutex
	tokens float64
	last   time.Time
}

// newPrincipalLimiter returns a budget of perSecond refusals and burst per
// principal; perSecond ≤ 0 disables the budget (the lanes stay).
func newPrincipalLimiter(perSecond float64, burst int) *principalLimiter {
	byUser, _ := lru.New[string, *principalState](limitedPrincipals)
	return &principalLimiter{rate: perSecond, burst: max(burst, 1), now: time.Now, byUser: byUser}
}

func (l *principalLimiter) state(user string) *principalState {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.byUser.Get(user)
	if !ok {
		p = &principalState{budget: refusalBudget{tokens: float64(l.burst), last: l.now()},
			lanes: make(chan struct{}, min(reviewLanes, l.burst))}
		l.byUser.Add(user, p)
	}
	return p
}

// enter waits for one of the principal's review lanes.
func (p *principalState) enter(ctx context.Context) (release func(), err error) {
	select {
	case p.lanes <- struct{}{}:
		return func() { <-p.lanes }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// take spends one of the principal's refusals ahead of a review, or says
// there is none left.
func (l *principalLimiter) take(p *principalState) bool {
	if l.rate <= 0 {
		return true
	}
	b := &p.budget
	b.mu.Lock()
	defer b.mu.Unlock()
	now := l.now()
	b.tokens = min(float64(l.burst), b.tokens+now.Sub(b.last).Seconds()*l.rate)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// granted gives back what take spent for a review that granted.
func (l *principalLimiter) granted(p *principalState) {
	if l.rate <= 0 {
		return
	}
	b := &p.budget
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tokens = min(float64(l.burst), b.tokens+1)
}

// retryAfter is the Retry-After of a principal over its budget.
func (l *principalLimiter) retryAfter() time.Duration {
	return perRequest(rate.Limit(l.rate))
}
