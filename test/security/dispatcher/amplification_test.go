package dispatcher_test

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/httpapi"
)

// The dispatcher's defaults the amplification bound is made of (the suite
// does not set these flags).
const (
	authCacheTTL = httpapi.DefaultAuthTTL
	refusedRate  = httpapi.DefaultRefusedRate
	refusedBurst = httpapi.DefaultRefusedBurst
)

// A ServiceAccount without any grant, with a token for the dispatcher's
// audience, asks for 300 made-up session names: what it costs the API
// server, counted by the API server itself (apiserver_request_total of
// tokenreviews and subjectaccessreviews), stays within a small bound — its
// token is authenticated once per --auth-cache-ttl, and it gets
// --auth-refused-burst refusals and then --auth-refused-rate a second
// (however many of its requests run at once), the rest answered 429
// RateLimited. Meanwhile the gateway runs real turns on the real Codex, and
// every one of them succeeds. Before the principal budget, the same attack
// cost 600 reviews.
func (s *suite) testReviewAmplification(t *testing.T) {
	const (
		names   = 300
		workers = 4 // well under the suite's --max-connections beside the gateway's
	)
	attacker := s.token(t, s.ns, "amplifier", audience)
	wantError(t, "control: the account without grants on a real session", s.decide(t, attacker, nil),
		http.StatusForbidden, wire.CodeForbidden, "amplifier")
	wantOK(t, "control: the gateway before the attack", s.decide(t, s.gateway, nil))

	tokenReviews, accessReviews := s.apiRequests(t, "tokenreviews"), s.apiRequests(t, "subjectaccessreviews")
	start := time.Now()
	var (
		mu      sync.Mutex
		answers = map[int]int{}
		failed  []string
		turns   int
		closed  int
		wg      sync.WaitGroup
	)
	done := make(chan struct{})
	wg.Go(func() { // the gateway's turns, throughout the attack
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			r := s.call(t, http.MethodPost, s.url(s.ns, "demo", "/turns"), s.gateway, fmt.Sprintf(`{"runId":"amplification-%d","prompt":"hello"}`, i), nil)
			mu.Lock()
			turns++
			if r.Status != http.StatusOK || !containsEvent(r.Body, wire.EventResult) {
				failed = append(failed, fmt.Sprintf("the gateway's turn %d: %d %.300s", i, r.Status, r.Body))
			}
			mu.Unlock()
		}
	})
	next := make(chan int)
	var attack sync.WaitGroup
	for range workers {
		attack.Go(func() {
			for i := range next {
				r, err := s.op.Call(http.MethodPost, s.url(s.ns, fmt.Sprintf("made-up-%d-%s", i, randomToken()[6:14]), "/decide"), attacker, decideBody, nil)
				mu.Lock()
				if err != nil {
					// The connection cap (--max-connections) may close an
					// attacker's connection: that costs no review.
					closed++
				} else {
					answers[r.Status]++
					if r.Status == http.StatusTooManyRequests && r.Header.Get("Retry-After") == "" {
						failed = append(failed, "a 429 without Retry-After")
					}
				}
				mu.Unlock()
			}
		})
	}
	for i := range names {
		next <- i
	}
	close(next)
	attack.Wait()
	close(done)
	wg.Wait()
	elapsed := time.Since(start)
	tokenReviews = s.apiRequests(t, "tokenreviews") - tokenReviews
	accessReviews = s.apiRequests(t, "subjectaccessreviews") - accessReviews

	if len(failed) > 0 {
		t.Fatalf("during the attack: %d failures, first: %s", len(failed), failed[0])
	}
	// Each of the two tokens (the attacker's, the gateway's) is
	// authenticated again, and the gateway's cached verdict on demo
	// reviewed again, once per TTL.
	windows := 1 + int(elapsed/authCacheTTL)
	tokenBound := 2 * windows
	accessBound := refusedBurst + int(math.Ceil(refusedRate*elapsed.Seconds())) + windows
	if tokenReviews > tokenBound || accessReviews > accessBound {
		t.Fatalf("%d made-up names in %v cost the API server %d TokenReviews (bound %d) and %d SubjectAccessReviews (bound %d); answers %v",
			names, elapsed, tokenReviews, tokenBound, accessReviews, accessBound, answers)
	}
	if turns == 0 || answers[http.StatusForbidden]+answers[http.StatusTooManyRequests]+closed != names || answers[http.StatusTooManyRequests] == 0 {
		t.Fatalf("answers %v to %d made-up names, %d connections closed (want only 403 and 429, some 429); %d gateway turns (want some)", answers, names, closed, turns)
	}
	t.Logf("attack review amplification: %d made-up names in %v, answers %v (%d connections closed by the cap); the API server counted %d TokenReviews (bound %d) and %d SubjectAccessReviews (bound %d); %d gateway turns all succeeded",
		names, elapsed.Round(time.Millisecond), answers, closed, tokenReviews, tokenBound, accessReviews, accessBound, turns)
}

func containsEvent(body []byte, event string) bool {
	return strings.Contains(string(body), "event: "+event)
}
