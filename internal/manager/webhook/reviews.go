package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
)

// AccessReviewCacheTTLFlag is the manager flag that sets
// InstallOptions.AccessReviewCacheTTL.
const AccessReviewCacheTTLFlag = "--webhook-access-review-cache-ttl"

// DefaultAccessReviewCacheTTL is how long an allowed SubjectAccessReview
// verdict is reused by default: a right revoked now still admits for at most
// this long (docs/webhooks.md).
const DefaultAccessReviewCacheTTL = 3 * time.Second

// MaxAccessReviewCacheTTL bounds the flag: a longer cache would let a revoked
// right admit for longer than anyone expects of an admission check.
const MaxAccessReviewCacheTTL = 30 * time.Second

// reviewTimeout bounds one shared review. It runs without the first caller's
// cancellation (the others still wait for it), so it needs its own end: the
// API server gives a webhook no more than this.
const reviewTimeout = 5 * time.Second

// maxCachedReviews bounds the allowed verdicts kept. Past it, expired ones are
// dropped, and a new verdict is not kept while none has expired.
const maxCachedReviews = 4096

// reviewer asks the API server whether user may do what attrs describe:
// nil when allowed, a *access.DeniedError when not, another error when the
// review could not be made (access.Checker).
type reviewer interface {
	Check(ctx context.Context, user authenticationv1.UserInfo, attrs authorizationv1.ResourceAttributes) error
}

// sharedReviews makes identical SubjectAccessReviews in flight one request,
// and reuses an allowed verdict for ttl. Fifty concurrent AgentHarness
// creates by one user asked the same question fifty times of an API server
// already saturated by the creates (docs/benchmarks/admission.md).
//
// Identical means the whole user (name, UID, groups in order, extra) and the
// whole attributes: a review for another group or extra value is its own.
// Only "allowed" is kept: a denial or an error is asked again by the next
// request, so granting a right takes effect at once, and a revoked right
// admits for at most ttl after the review that allowed it began.
type sharedReviews struct {
	next reviewer
	// ttl: how long an allowed verdict is reused; 0 reuses none (requests
	// in flight are still shared).
	ttl time.Duration
	now func() time.Time

	inFlight singleflight.Group
	mu       sync.Mutex
	// allowed maps a review's key to when its verdict expires.
	allowed map[string]time.Time
}

func newSharedReviews(next reviewer, ttl time.Duration) *sharedReviews {
	return &sharedReviews{next: next, ttl: ttl, now: time.Now, allowed: map[string]time.Time{}}
}

// reviewKey is the whole question: JSON of the user and the attributes
// (encoding/json writes map keys sorted, so equal questions encode equally).
type reviewKey struct {
	User  authenticationv1.UserInfo          `json:"user"`
	Attrs authorizationv1.ResourceAttributes `json:"attrs"`
}

// Check answers as next would: nil, a *access.DeniedError or another error.
func (s *sharedReviews) Check(ctx context.Context, user authenticationv1.UserInfo, attrs authorizationv1.ResourceAttributes) error {
	raw, err := json.Marshal(reviewKey{User: user, Attrs: attrs})
	if err != nil {
		return fmt.Errorf("review whether user %q may %s %s: %w", user.Username, attrs.Verb, attrs.Resource, err)
	}
	key := string(raw)
	if s.cachedAllowed(key) {
		return nil
	}
	result := s.inFlight.DoChan(key, func() (any, error) {
		asked := s.now()
		// The review is shared: one caller giving up must not fail the others.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reviewTimeout)
		defer cancel()
		verdict := s.next.Check(rctx, user, attrs)
		if verdict == nil {
			s.keepAllowed(key, asked)
		}
		return nil, verdict
	})
	select {
	case r := <-result:
		return r.Err
	case <-ctx.Done():
		return fmt.Errorf("review whether user %q may %s %s: %w", user.Username, attrs.Verb, attrs.Resource, ctx.Err())
	}
}

// cachedAllowed reports whether key was allowed by a review that began less
// than ttl ago.
func (s *sharedReviews) cachedAllowed(key string) bool {
	if s.ttl <= 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	expires, ok := s.allowed[key]
	if !ok {
		return false
	}
	if !s.now().Before(expires) {
		delete(s.allowed, key)
		return false
	}
	return true
}

// keepAllowed remembers key as allowed until ttl after asked, the moment its
// review began (the verdict may already be older than its answer).
func (s *sharedReviews) keepAllowed(key string, asked time.Time) {
	if s.ttl <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if len(s.allowed) >= maxCachedReviews {
		for k, expires := range s.allowed {
			if !now.Before(expires) {
				delete(s.allowed, k)
			}
		}
		if len(s.allowed) >= maxCachedReviews {
			return
		}
	}
	s.allowed[key] = asked.Add(s.ttl)
}
