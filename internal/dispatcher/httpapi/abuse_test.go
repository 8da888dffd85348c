package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// tokenAuthorizer accepts exactly one token and counts its reviews.
type tokenAuthorizer struct {
	good    string
	reason  string // of a rejection
	reviews int
}

func (a *tokenAuthorizer) Authorize(_ context.Context, token string, _ Attributes) (Verdict, error) {
	a.reviews++
	if token != a.good {
		return Verdict{Reason: a.reason}, nil
	}
	return Verdict{Authenticated: true, User: "gw", Allowed: true}, nil
}

var turnAttrs = Attributes{Verb: VerbCreate, Namespace: "ns", Name: "s", Subresource: SubresourceTurns}

// call runs authorize for one request from source with token and returns
// the recorded answer (200 when authorize let the request through).
func call(h *Handler, source, token string, hdr ...string) *httptest.ResponseRecorder {
	return callFor(h, turnAttrs, source, token, hdr...)
}

func callFor(h *Handler, attrs Attributes, source, token string, hdr ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	r.RemoteAddr = source
	r.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	if _, ok := h.authorize(w, r, attrs); ok {
		w.WriteHeader(http.StatusOK)
	}
	return w
}

// TestABusyGatewayKeepsItsVerdictThroughAFloodOfBadTokens: a flood of
// made-up tokens larger than every cache never evicts a valid token's
// verdict (the old cache was wiped whole when full).
func TestABusyGatewayKeepsItsVerdictThroughAFloodOfBadTokens(t *testing.T) {
	fake := &tokenAuthorizer{good: "gateway"}
	h := &Handler{auth: wholeAuthorizer{fake}, principals: newPrincipalLimiter(-1, 0), retryAfter: time.Second, limiter: newSourceLimiter(-1, 0),
		cache: newAuthCache(time.Minute, time.Minute, time.Now)}
	if w := call(h, "10.0.0.1:1", "gateway"); w.Code != http.StatusOK {
		t.Fatalf("control: the gateway's token: %d %s", w.Code, w.Body)
	}
	for i := range identityCacheSize + negativeCacheSize + 100 {
		if w := call(h, "10.0.0.2:1", fmt.Sprintf("bad-%d", i)); w.Code != http.StatusUnauthorized {
			t.Fatalf("bad token %d: %d", i, w.Code)
		}
	}
	before := fake.reviews
	if w := call(h, "10.0.0.1:1", "gateway"); w.Code != http.StatusOK || fake.reviews != before {
		t.Fatalf("after the flood the gateway's token was reviewed again (%d reviews) or refused: %d", fake.reviews-before, w.Code)
	}
}

// TestUnverifiedTokensAreRateLimitedBySourceAddress: tokens not cached as
// valid are limited per TCP peer (X-Forwarded-For changes nothing) and
// refused with 429 RateLimited and Retry-After; a cached valid token from
// the same address, and another address, still pass.
func TestUnverifiedTokensAreRateLimitedBySourceAddress(t *testing.T) {
	fake := &tokenAuthorizer{good: "gateway"}
	h := &Handler{auth: wholeAuthorizer{fake}, principals: newPrincipalLimiter(-1, 0), retryAfter: time.Second, limiter: newSourceLimiter(0.001, 3),
		cache: newAuthCache(time.Minute, time.Minute, time.Now)}
	if w := call(h, "10.0.0.1:1", "gateway"); w.Code != http.StatusOK {
		t.Fatalf("control: %d", w.Code)
	}
	for i := range 2 { // the gateway's review took one of the burst
		if w := call(h, "10.0.0.1:2", fmt.Sprintf("bad-%d", i)); w.Code != http.StatusUnauthorized {
			t.Fatalf("within the burst: %d", w.Code)
		}
	}
	w := call(h, "10.0.0.1:3", "bad-x", "X-Forwarded-For", "192.0.2.7")
	if w.Code != http.StatusTooManyRequests || !strings.Contains(w.Body.String(), string(wire.CodeRateLimited)) ||
		w.Header().Get("Retry-After") == "" {
		t.Fatalf("over the burst: %d %v %s", w.Code, w.Header(), w.Body)
	}
	reviews := fake.reviews
	// The gateway's next session: a new verdict (one review), not limited.
	other := turnAttrs
	other.Name = "s2"
	if w := callFor(h, other, "10.0.0.1:4", "gateway"); w.Code != http.StatusOK {
		t.Fatalf("the valid token was throttled: %d %s", w.Code, w.Body)
	}
	if w := call(h, "10.0.0.9:1", "bad-y"); w.Code != http.StatusUnauthorized {
		t.Fatalf("another address: %d %s", w.Code, w.Body)
	}
	if fake.reviews != reviews+2 {
		t.Fatalf("reviews: %d, want %d", fake.reviews, reviews+2)
	}
}

// TestRejectedTokensAreRememberedBriefly: a refused token is not reviewed
// again within the negative TTL, and is after it.
func TestRejectedTokensAreRememberedBriefly(t *testing.T) {
	now := time.Unix(1000, 0)
	fake := &tokenAuthorizer{good: "gateway"}
	h := &Handler{auth: wholeAuthorizer{fake}, principals: newPrincipalLimiter(-1, 0), retryAfter: time.Second, limiter: newSourceLimiter(-1, 0),
		cache: newAuthCache(time.Minute, 5*time.Second, func() time.Time { return now })}
	call(h, "10.0.0.1:1", "bad")
	call(h, "10.0.0.1:1", "bad")
	if fake.reviews != 1 {
		t.Fatalf("reviews within the negative TTL: %d", fake.reviews)
	}
	now = now.Add(6 * time.Second)
	call(h, "10.0.0.1:1", "bad")
	if fake.reviews != 2 {
		t.Fatalf("reviews after the negative TTL: %d", fake.reviews)
	}
}

// TestUnauthorizedAnswersCarryNoAPIServerDetails: the TokenReview's error
// (audiences, issuers, API server addresses) stays in the log.
func TestUnauthorizedAnswersCarryNoAPIServerDetails(t *testing.T) {
	fake := &tokenAuthorizer{reason: `[invalid bearer token, token audiences ["https://10.96.0.1:443"] is invalid for the target audiences ["harness-dispatcher"]]`}
	h := &Handler{auth: wholeAuthorizer{fake}, principals: newPrincipalLimiter(-1, 0), retryAfter: time.Second, limiter: newSourceLimiter(-1, 0),
		cache: newAuthCache(time.Minute, time.Minute, time.Now)}
	w := call(h, "10.0.0.1:1", "bad")
	if w.Code != http.StatusUnauthorized || strings.Contains(w.Body.String(), "10.96.0.1") || strings.Contains(w.Body.String(), "audience") {
		t.Fatalf("401 body: %d %s", w.Code, w.Body)
	}
}

// gatedAuthorizer accepts one token; its first review waits for release,
// so the requests that come meanwhile find the token not yet verified.
type gatedAuthorizer struct {
	good    string
	release chan struct{}
	started chan struct{} // closed when the first review began
	once    sync.Once
	reviews atomic.Int64
}

func (a *gatedAuthorizer) Authorize(ctx context.Context, token string, _ Attributes) (Verdict, error) {
	if a.reviews.Add(1) == 1 {
		a.once.Do(func() { close(a.started) })
		select {
		case <-a.release:
		case <-ctx.Done():
			return Verdict{}, ctx.Err()
		}
	}
	if token != a.good {
		return Verdict{}, nil
	}
	return Verdict{Authenticated: true, User: "gw", Allowed: true}, nil
}

// TestAGatewaysConcurrentFirstRequestsShareOneReviewAndAreNotRateLimited: a
// gateway that sends many sessions' turns at once with a token the
// dispatcher has not verified yet (after a dispatcher restart) counts once
// against its address's limit: the requests wait for the first one's review
// instead of each taking from the burst and being refused 429.
func TestAGatewaysConcurrentFirstRequestsShareOneReviewAndAreNotRateLimited(t *testing.T) {
	fake := &gatedAuthorizer{good: "gateway", release: make(chan struct{}), started: make(chan struct{})}
	h := &Handler{auth: wholeAuthorizer{fake}, principals: newPrincipalLimiter(-1, 0), retryAfter: time.Second, limiter: newSourceLimiter(0.001, 1),
		cache: newAuthCache(time.Minute, time.Minute, time.Now)}
	const sessions = 10
	codes := make(chan int, sessions)
	attrs := func(i int) Attributes { a := turnAttrs; a.Name = fmt.Sprintf("s%d", i); return a }
	go func() { codes <- callFor(h, attrs(0), "10.0.0.1:1", "gateway").Code }()
	<-fake.started
	var wg sync.WaitGroup
	for i := 1; i < sessions; i++ {
		wg.Go(func() { codes <- callFor(h, attrs(i), "10.0.0.1:1", "gateway").Code })
	}
	// Give the others time to arrive while the first review is held; the
	// answers below do not depend on whether they did.
	time.Sleep(200 * time.Millisecond)
	close(fake.release)
	wg.Wait()
	for range sessions {
		if code := <-codes; code != http.StatusOK {
			t.Fatalf("a session's first turn was answered %d, want 200 (not 429)", code)
		}
	}
	// And a burst of made-up tokens from that address is still limited.
	limited := 0
	for i := range 3 {
		if call(h, "10.0.0.1:2", fmt.Sprintf("bad-%d", i)).Code == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited == 0 {
		t.Fatal("made-up tokens were not rate limited")
	}
}

// principals is a two-step Authorizer: each token authenticates as the
// user it maps to, and a user is allowed everything or nothing. It counts
// TokenReviews and SubjectAccessReviews apart.
type principals struct {
	mu                          sync.Mutex
	users                       map[string]string // token → user
	granted                     map[string]bool   // user → allowed
	tokenReviews, accessReviews int
}

func (p *principals) Authorize(ctx context.Context, token string, attrs Attributes) (Verdict, error) {
	id, _ := p.authenticate(ctx, token)
	return p.authorizeIdentity(ctx, token, id, attrs)
}

func (p *principals) authenticate(_ context.Context, token string) (Identity, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tokenReviews++
	user, ok := p.users[token]
	return Identity{Authenticated: ok, User: user}, nil
}

func (p *principals) authorizeIdentity(_ context.Context, _ string, id Identity, _ Attributes) (Verdict, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.accessReviews++
	return Verdict{Authenticated: true, User: id.User, Allowed: p.granted[id.User]}, nil
}

func (p *principals) counts() (int, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tokenReviews, p.accessReviews
}

func session(name string) Attributes { a := turnAttrs; a.Name = name; return a }

// A principal without grants asking for 300 made-up session names costs
// one TokenReview (its token is authenticated once per TTL) and at most
// its refusal burst of SubjectAccessReviews; the rest is 429 RateLimited
// with Retry-After. Meanwhile a gateway with grants opens 300 sessions
// without one 429, and its cached verdict is still cached after the
// attack (no review for it).
func TestAPrincipalWithoutGrantsCannotAmplifyReviews(t *testing.T) {
	const burst, names = 10, 300
	fake := &principals{users: map[string]string{"gw": "gateway", "nobody": "nobody"}, granted: map[string]bool{"gateway": true}}
	h := &Handler{auth: fake, retryAfter: time.Second, limiter: newSourceLimiter(-1, 0),
		principals: newPrincipalLimiter(0.001, burst),
		cache:      newAuthCache(time.Minute, time.Minute, time.Now)}
	if w := callFor(h, session("busy"), "10.0.0.1:1", "gw"); w.Code != http.StatusOK {
		t.Fatalf("control: the gateway's session: %d %s", w.Code, w.Body)
	}
	_, accessBefore := fake.counts()
	codes := map[int]int{}
	for i := range names {
		w := callFor(h, session(fmt.Sprintf("random-%d", i)), "10.0.0.2:1", "nobody")
		codes[w.Code]++
		if w.Code == http.StatusTooManyRequests && (w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), string(wire.CodeRateLimited))) {
			t.Fatalf("a 429 without Retry-After or code: %v %s", w.Header(), w.Body)
		}
		if w := callFor(h, session(fmt.Sprintf("gateway-%d", i)), "10.0.0.1:1", "gw"); w.Code != http.StatusOK {
			t.Fatalf("control: the gateway's session %d during the attack: %d %s", i, w.Code, w.Body)
		}
	}
	tokenReviews, access := fake.counts()
	attackReviews := access - accessBefore - names // the gateway's own sessions cost one each
	if tokenReviews != 2 || attackReviews > burst || codes[http.StatusForbidden] != burst || codes[http.StatusTooManyRequests] != names-burst {
		t.Fatalf("attack: answers %v, %d TokenReviews (want 2: one per token), %d SubjectAccessReviews for the attacker (want at most %d)",
			codes, tokenReviews, attackReviews, burst)
	}
	if w := callFor(h, session("busy"), "10.0.0.1:1", "gw"); w.Code != http.StatusOK {
		t.Fatalf("control after the attack: %d", w.Code)
	}
	if _, after := fake.counts(); after != access {
		t.Fatalf("the gateway's cached verdict was reviewed again after the attack (%d reviews)", after-access)
	}
}

// One principal's verdicts live in a partition of their own: a principal
// with grants that names more sessions than a partition holds evicts only
// its own verdicts, never a gateway's.
func TestAnotherPrincipalsMissesNeverEvictAGatewaysVerdicts(t *testing.T) {
	fake := &principals{users: map[string]string{"gw": "gateway", "other": "other"}, granted: map[string]bool{"gateway": true, "other": true}}
	h := &Handler{auth: fake, retryAfter: time.Second, limiter: newSourceLimiter(-1, 0),
		principals: newPrincipalLimiter(-1, 0),
		cache:      newAuthCache(time.Minute, time.Minute, time.Now)}
	if w := callFor(h, session("busy"), "10.0.0.1:1", "gw"); w.Code != http.StatusOK {
		t.Fatalf("control: %d", w.Code)
	}
	for i := range verdictsPerPrincipal + 100 {
		if w := callFor(h, session(fmt.Sprintf("s-%d", i)), "10.0.0.2:1", "other"); w.Code != http.StatusOK {
			t.Fatalf("other principal, session %d: %d", i, w.Code)
		}
	}
	_, before := fake.counts()
	if w := callFor(h, session("busy"), "10.0.0.1:1", "gw"); w.Code != http.StatusOK {
		t.Fatalf("the gateway after the other's sessions: %d", w.Code)
	}
	if _, after := fake.counts(); after != before {
		t.Fatal("the gateway's verdict was evicted by another principal's sessions and reviewed again")
	}
	// The control: the other principal's first sessions were evicted from
	// its own partition, and are reviewed again.
	if w := callFor(h, session("s-0"), "10.0.0.2:1", "other"); w.Code != http.StatusOK {
		t.Fatalf("other principal again: %d", w.Code)
	}
	if _, again := fake.counts(); again != before+1 {
		t.Fatalf("the other principal's oldest verdict: %d reviews, want 1 (evicted from its own partition)", again-before)
	}
}

// slowRefusals refuses every review after a moment, so that concurrent
// requests overlap in their lanes.
type slowRefusals struct{ reviews atomic.Int64 }

func (s *slowRefusals) Authorize(context.Context, string, Attributes) (Verdict, error) {
	return Verdict{}, nil
}

func (s *slowRefusals) authenticate(context.Context, string) (Identity, error) {
	return Identity{Authenticated: true, User: "nobody"}, nil
}

func (s *slowRefusals) authorizeIdentity(_ context.Context, _ string, id Identity, _ Attributes) (Verdict, error) {
	s.reviews.Add(1)
	time.Sleep(2 * time.Millisecond) // lets the concurrent requests overlap; the count does not depend on it
	return Verdict{Authenticated: true, User: id.User}, nil
}

// Ten concurrent workers naming 300 sessions as a principal without grants
// get exactly its burst of reviews: a review holds its refusal from before
// it is sent, so concurrent reviews cannot overdraw the budget.
func TestConcurrentRefusalsNeverOverdrawTheBudget(t *testing.T) {
	const burst = 10
	fake := &slowRefusals{}
	h := &Handler{auth: fake, retryAfter: time.Second, limiter: newSourceLimiter(-1, 0),
		principals: newPrincipalLimiter(0.001, burst), cache: newAuthCache(time.Minute, time.Minute, time.Now)}
	var wg sync.WaitGroup
	next := make(chan int)
	var limited atomic.Int64
	for range 10 {
		wg.Go(func() {
			for i := range next {
				if callFor(h, session(fmt.Sprintf("made-up-%d", i)), "10.0.0.2:1", "x").Code == http.StatusTooManyRequests {
					limited.Add(1)
				}
			}
		})
	}
	for i := range 300 {
		next <- i
	}
	close(next)
	wg.Wait()
	if got := fake.reviews.Load(); got != burst || limited.Load() != 300-burst {
		t.Fatalf("%d reviews and %d answers 429 for 300 concurrent made-up names, want %d and %d", got, limited.Load(), burst, 300-burst)
	}
}
