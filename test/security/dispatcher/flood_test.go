package dispatcher_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// An idle connection flood over --max-connections: the server holds at
// most the cap, closes the extra connections at once, and a legitimate
// request succeeds again once the flood is gone.
//
// "At once" is what tells the cap apart: net/http closes a connection that
// sends nothing when its TLS handshake times out (the least of
// --read-timeout and the 10 s header timeout: readTimeout here), cap or no
// cap. So an over-the-cap connection must be closed within half that time
// of its dial, while the capped ones are still held; a dispatcher without
// the cap holds them all until then.
func (s *suite) testConnectionFlood(t *testing.T) {
	const (
		flood  = maxConnections + 8
		atOnce = readTimeout / 2
	)
	refusedBefore := s.metric(t, "harness_dispatcher_api_connections_refused_total")
	addr := strings.TrimPrefix(s.op.APIBase, "https://")
	s.op.HTTP.CloseIdleConnections()
	conns := make([]net.Conn, 0, flood)
	dialed := make([]time.Time, 0, flood)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for range flood {
		c, err := net.Dial("tcp", addr)
		must(t, err)
		conns = append(conns, c)
		dialed = append(dialed, time.Now())
	}
	// Each connection sends nothing: the server either closes it at once
	// (over the cap) or holds it, waiting for its TLS handshake. Each is
	// watched until atOnce after its own dial.
	var wg sync.WaitGroup
	closed := make([]bool, flood)
	took := make([]time.Duration, flood)
	for i, c := range conns {
		wg.Go(func() {
			closed[i], _, _ = closedWithin(c, time.Until(dialed[i].Add(atOnce)))
			took[i] = time.Since(dialed[i])
		})
	}
	wg.Wait()
	n := 0
	var slowest time.Duration
	for i, c := range closed {
		if c {
			n++
			slowest = max(slowest, took[i])
		}
	}
	held := flood - n
	// Connections an earlier spec left open may still hold places, so more
	// than flood-maxConnections may be closed; fewer means the cap did not
	// close them, and none held means the server refuses everyone.
	if n < flood-maxConnections || held == 0 {
		t.Fatalf("%d idle connections: %d closed within %v of their dial (%v before the handshake timeout), %d held; want at least %d closed at once and at most %d (>0) held",
			flood, n, atOnce, readTimeout-atOnce, held, flood-maxConnections, maxConnections)
	}
	t.Logf("attack idle connection flood: %d connections, %d closed at once (the last %v after its dial; handshake timeout %v), %d held (cap %d)",
		flood, n, slowest.Round(time.Millisecond), readTimeout, held, maxConnections)

	for _, c := range conns {
		_ = c.Close()
	}
	conns = nil
	// Control: once the flood's connections are closed, the server gives
	// their places back and a legitimate request is served.
	eventually(t, 20*time.Second, "control: a legitimate request after the flood", func() (bool, string) {
		s.op.HTTP.CloseIdleConnections()
		r, err := s.tryDecide()
		return err == nil && r == http.StatusOK, fmt.Sprintf("%d %v", r, err)
	})
	// The cap counts what it closed: this flood's extra connections at least.
	if refused := s.metric(t, "harness_dispatcher_api_connections_refused_total") - refusedBefore; refused < flood-maxConnections {
		t.Fatalf("harness_dispatcher_api_connections_refused_total rose by %v during the flood, want at least %d", refused, flood-maxConnections)
	}
}

// tryDecide is one legitimate request whose transport error is returned,
// not fatal (the connection cap may close it).
func (s *suite) tryDecide() (int, error) {
	req, err := http.NewRequest(http.MethodPost, s.url(s.ns, "demo", "/decide"), strings.NewReader(decideBody))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+s.gateway)
	resp, err := s.op.HTTP.Do(req)
	if err != nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// A flood of made-up tokens from one address: every legitimate request
// (its token cached as valid) succeeds meanwhile, and the TokenReviews that
// reach the API server stay within the rate limit's burst and rate (from
// the API server's apiserver_request_total).
func (s *suite) testTokenFlood(t *testing.T) {
	const (
		flood   = 300
		workers = 10
	)
	wantOK(t, "the gateway's token before the flood", s.decide(t, s.gateway, nil)) // cached valid from here
	before := s.tokenReviews(t)
	start := time.Now()
	var (
		mu      sync.Mutex
		answers = map[int]int{}
		legit   []time.Duration
		failed  []string
		wg      sync.WaitGroup
	)
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			for range next {
				st, err := s.tryWith(randomToken())
				mu.Lock()
				if err != nil {
					failed = append(failed, err.Error())
				}
				answers[st]++
				mu.Unlock()
			}
		})
	}
	done := make(chan struct{})
	wg.Go(func() { // the busy gateway, throughout the flood
		for {
			select {
			case <-done:
				return
			default:
			}
			t0 := time.Now()
			st, err := s.tryWith(s.gateway)
			mu.Lock()
			legit = append(legit, time.Since(t0))
			if err != nil || st != http.StatusOK {
				failed = append(failed, "legitimate request: "+strconv.Itoa(st)+" "+errString(err))
			}
			mu.Unlock()
		}
	})
	for i := range flood {
		next <- i
	}
	close(next)
	close(done)
	wg.Wait()
	elapsed := time.Since(start)
	reviews := s.tokenReviews(t) - before

	if len(failed) > 0 {
		t.Fatalf("during the flood: %d failures, first: %s", len(failed), failed[0])
	}
	if answers[http.StatusUnauthorized]+answers[http.StatusTooManyRequests] != flood || answers[http.StatusTooManyRequests] == 0 {
		t.Fatalf("the flood's answers: %v, want only 401 and 429, some 429", answers)
	}
	bound := float64(unverifiedBurst) + unverifiedRate*elapsed.Seconds() + 2
	if float64(reviews) > bound {
		t.Fatalf("%d TokenReviews reached the API server during a %d-token flood of %v, want at most %.0f", reviews, flood, elapsed, bound)
	}
	slices.Sort(legit)
	t.Logf("attack random-token flood: %d requests in %v, answers %v, %d TokenReviews (bound %.0f); %d legitimate requests all 200, latency p50 %v p99 %v max %v",
		flood, elapsed.Round(time.Millisecond), answers, reviews, bound, len(legit),
		legit[len(legit)/2].Round(time.Microsecond), legit[len(legit)*99/100].Round(time.Microsecond), legit[len(legit)-1].Round(time.Microsecond))
}

func (s *suite) tryWith(token string) (int, error) {
	req, err := http.NewRequest(http.MethodPost, s.url(s.ns, "demo", "/decide"), strings.NewReader(decideBody))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.op.HTTP.Do(req)
	if err != nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return "flood-" + hex.EncodeToString(b)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// tokenReviews is the API server's count of TokenReview requests.
func (s *suite) tokenReviews(t *testing.T) int {
	t.Helper()
	return s.apiRequests(t, "tokenreviews")
}

// apiRequests is the API server's count of requests for resource
// (apiserver_request_total{resource=…}, all verbs and codes).
func (s *suite) apiRequests(t *testing.T, resource string) int {
	t.Helper()
	raw, err := s.cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	must(t, err)
	total := 0.0
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `resource="`+resource+`"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		must(t, err)
		total += v
	}
	return int(total)
}

// metric is the value of an unlabelled counter of the dispatcher's /metrics.
func (s *suite) metric(t *testing.T, name string) float64 {
	t.Helper()
	r := s.scrape(t, s.scraper(t))
	for line := range strings.SplitSeq(string(r.Body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			must(t, err)
			return f
		}
	}
	t.Fatalf("%s not in /metrics (%d)", name, r.Status)
	return 0
}
