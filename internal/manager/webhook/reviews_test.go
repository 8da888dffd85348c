package webhook

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/openclaw/harness-operator/internal/platform/access"
	"github.com/openclaw/harness-operator/internal/testutil/goroutines"
)

// countingReviewer is the API server's side of the reviews: it counts them,
// answers with verdict, and when hold is set waits for it to close first.
type countingReviewer struct {
	calls   atomic.Int32
	entered chan struct{} // one value per review that reached it, when not nil
	hold    chan struct{}
	verdict func(authenticationv1.UserInfo, authorizationv1.ResourceAttributes) error
}

func (r *countingReviewer) Check(_ context.Context, user authenticationv1.UserInfo, attrs authorizationv1.ResourceAttributes) error {
	r.calls.Add(1)
	if r.entered != nil {
		r.entered <- struct{}{}
	}
	if r.hold != nil {
		<-r.hold
	}
	if r.verdict != nil {
		return r.verdict(user, attrs)
	}
	return nil
}

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newTestReviews(r reviewer, ttl time.Duration) (*sharedReviews, *fakeClock) {
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := newSharedReviews(r, ttl)
	s.now = clock.now
	return s, clock
}

var (
	alice = authenticationv1.UserInfo{Username: "alice", UID: "u-1", Groups: []string{"team-a", "system:authenticated"},
		Extra: map[string]authenticationv1.ExtraValue{"scopes": {"read"}}}
	getToken = authorizationv1.ResourceAttributes{Namespace: "team-a", Verb: "get", Resource: "secrets", Name: "token"}
)

// TestSharedReviewsAskOnceForConcurrentIdenticalReviews: two identical
// reviews in flight at once reach the API server once, and both get its
// verdict.
func TestSharedReviewsAskOnceForConcurrentIdenticalReviews(t *testing.T) {
	for _, tc := range []struct {
		name    string
		verdict error
	}{
		{"allowed", nil},
		{"denied", &access.DeniedError{User: "alice", Attributes: getToken}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &countingReviewer{entered: make(chan struct{}, 2), hold: make(chan struct{}),
				verdict: func(authenticationv1.UserInfo, authorizationv1.ResourceAttributes) error { return tc.verdict }}
			s, _ := newTestReviews(r, 0) // no cache: only the sharing in flight
			results := make(chan error, 2)
			go func() { results <- s.Check(context.Background(), alice, getToken) }()
			<-r.entered // the first review is at the API server
			go func() { results <- s.Check(context.Background(), alice, getToken) }()
			// Both callers wait for the one review: the first for its own,
			// the second for the first's.
			goroutines.WaitBlocked(t, "(*sharedReviews).Check", 2)
			close(r.hold)
			for range 2 {
				if err := <-results; !errors.Is(err, tc.verdict) {
					t.Errorf("verdict %v, want %v", err, tc.verdict)
				}
			}
			if got := r.calls.Load(); got != 1 {
				t.Errorf("%d reviews reached the API server, want 1", got)
			}
		})
	}
}

// TestSharedReviewsKeepOnlyWholeIdenticalAllowedReviews: an allowed verdict
// is reused only for the same whole user and the same whole attributes, and
// only until its TTL (counted from when its review began) ends; a denial
// and a failed review are asked again.
func TestSharedReviewsKeepOnlyWholeIdenticalAllowedReviews(t *testing.T) {
	const ttl = 3 * time.Second
	ctx := context.Background()
	r := &countingReviewer{}
	s, clock := newTestReviews(r, ttl)
	ask := func(user authenticationv1.UserInfo, attrs authorizationv1.ResourceAttributes, wantCalls int32, why string) {
		t.Helper()
		if err := s.Check(ctx, user, attrs); err != nil {
			t.Fatalf("%s: %v", why, err)
		}
		if got := r.calls.Load(); got != wantCalls {
			t.Fatalf("%s: %d reviews reached the API server, want %d", why, got, wantCalls)
		}
	}
	ask(alice, getToken, 1, "first review")
	ask(alice, getToken, 1, "the same review within the TTL is the kept verdict")

	otherUsers := map[string]func(u *authenticationv1.UserInfo){
		"another name":    func(u *authenticationv1.UserInfo) { u.Username = "mallory" },
		"another UID":     func(u *authenticationv1.UserInfo) { u.UID = "u-2" },
		"another group":   func(u *authenticationv1.UserInfo) { u.Groups = []string{"team-b", "system:authenticated"} },
		"one group fewer": func(u *authenticationv1.UserInfo) { u.Groups = u.Groups[:1] },
		"another extra value": func(u *authenticationv1.UserInfo) {
			u.Extra = map[string]authenticationv1.ExtraValue{"scopes": {"write"}}
		},
		"another extra key": func(u *authenticationv1.UserInfo) {
			u.Extra = map[string]authenticationv1.ExtraValue{"tenant": {"read"}}
		},
		"no extra": func(u *authenticationv1.UserInfo) { u.Extra = nil },
	}
	calls := r.calls.Load()
	for name, change := range otherUsers {
		u := alice
		u.Groups = append([]string(nil), alice.Groups...)
		change(&u)
		calls++
		ask(u, getToken, calls, "user with "+name)
	}
	otherAttrs := map[string]func(a *authorizationv1.ResourceAttributes){
		"another verb":        func(a *authorizationv1.ResourceAttributes) { a.Verb = "list" },
		"another name":        func(a *authorizationv1.ResourceAttributes) { a.Name = "other" },
		"another namespace":   func(a *authorizationv1.ResourceAttributes) { a.Namespace = "team-b" },
		"another resource":    func(a *authorizationv1.ResourceAttributes) { a.Resource = "configmaps" },
		"another group":       func(a *authorizationv1.ResourceAttributes) { a.Group = "apps" },
		"another subresource": func(a *authorizationv1.ResourceAttributes) { a.Subresource = "status" },
	}
	for name, change := range otherAttrs {
		a := getToken
		change(&a)
		calls++
		ask(alice, a, calls, "attributes with "+name)
	}

	clock.advance(ttl - time.Nanosecond)
	ask(alice, getToken, calls, "just before the TTL ends, the kept verdict")
	clock.advance(time.Nanosecond)
	calls++
	ask(alice, getToken, calls, "once the TTL has ended, asked again")

	t.Run("a denial is asked again", func(t *testing.T) {
		denied := &countingReviewer{verdict: func(u authenticationv1.UserInfo, a authorizationv1.ResourceAttributes) error {
			return &access.DeniedError{User: u.Username, Attributes: a}
		}}
		s, _ := newTestReviews(denied, ttl)
		for i := range 2 {
			var d *access.DeniedError
			if err := s.Check(ctx, alice, getToken); !errors.As(err, &d) {
				t.Fatalf("review %d: %v, want a denial", i, err)
			}
		}
		if got := denied.calls.Load(); got != 2 {
			t.Errorf("%d reviews reached the API server, want 2", got)
		}
	})
	t.Run("a review that failed is asked again", func(t *testing.T) {
		failing := &countingReviewer{verdict: func(authenticationv1.UserInfo, authorizationv1.ResourceAttributes) error {
			return errors.New("the API server is unavailable")
		}}
		s, _ := newTestReviews(failing, ttl)
		for range 2 {
			if err := s.Check(ctx, alice, getToken); err == nil {
				t.Fatal("a failed review admitted")
			}
		}
		if got := failing.calls.Load(); got != 2 {
			t.Errorf("%d reviews reached the API server, want 2", got)
		}
	})
	t.Run("a TTL of 0 keeps nothing", func(t *testing.T) {
		r := &countingReviewer{}
		s, _ := newTestReviews(r, 0)
		for range 2 {
			if err := s.Check(ctx, alice, getToken); err != nil {
				t.Fatal(err)
			}
		}
		if got := r.calls.Load(); got != 2 {
			t.Errorf("%d reviews reached the API server, want 2", got)
		}
	})
}

// TestSharedReviewsOneCallerGivingUpLeavesTheOthersTheirVerdict: the review
// is shared, so the first caller's cancellation must not fail the second.
func TestSharedReviewsOneCallerGivingUpLeavesTheOthersTheirVerdict(t *testing.T) {
	r := &countingReviewer{entered: make(chan struct{}, 1), hold: make(chan struct{})}
	s, _ := newTestReviews(r, 0)
	first, cancelFirst := context.WithCancel(context.Background())
	firstDone, secondDone := make(chan error, 1), make(chan error, 1)
	go func() { firstDone <- s.Check(first, alice, getToken) }()
	<-r.entered
	go func() { secondDone <- s.Check(context.Background(), alice, getToken) }()
	goroutines.WaitBlocked(t, "(*sharedReviews).Check", 2)
	cancelFirst()
	if err := <-firstDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled caller got %v, want context.Canceled", err)
	}
	close(r.hold)
	if err := <-secondDone; err != nil {
		t.Fatalf("the other caller got %v, want the review's verdict (allowed)", err)
	}
	if got := r.calls.Load(); got != 1 {
		t.Errorf("%d reviews reached the API server, want 1", got)
	}
}

// TestInstallRefusesAnAccessReviewCacheTTLOutOfRange: the flag's bounds,
// named in the refusal.
func TestInstallRefusesAnAccessReviewCacheTTLOutOfRange(t *testing.T) {
	for _, ttl := range []time.Duration{-time.Second, MaxAccessReviewCacheTTL + time.Second} {
		_, err := Install(nil, InstallOptions{Mode: ModeDisabled, AccessReviewCacheTTL: ttl})
		if err == nil || !strings.Contains(err.Error(), AccessReviewCacheTTLFlag+" must be between 0 and 30s") {
			t.Errorf("TTL %s: err = %v, want a refusal naming %s and its bounds", ttl, err, AccessReviewCacheTTLFlag)
		}
	}
}
