package dispatcher_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

var addressOrPath = regexp.MustCompile(`\d+\.\d+\.\d+\.\d+:\d+|://|(^|\s)/[a-z]`)

// A harness whose server cannot be reached answers 503 HarnessUnavailable
// without the server's address (the manager's and the dispatcher's dial
// errors name it); the control, the live harness's session, runs its turn.
func (s *suite) testRedactedServerErrors(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t, "deadserver")
	port, err := testutil.FreePort()
	must(t, err)
	h, err := testutil.ExternalCodex(ctx, s.k8s, ns, fmt.Sprintf("ws://127.0.0.1:%d", port), serverToken)
	must(t, err)
	_, err = testutil.WaitHarnessCondition(ctx, s.k8s, h, v1alpha1.HarnessConditionWorkloadReady, metav1.ConditionFalse, 60*time.Second)
	must(t, err)
	s.session(t, ns, "dead")
	r := s.call(t, http.MethodPost, s.url(ns, "dead", "/turns"), s.gateway, `{"prompt":"hello"}`, nil)
	e := wantError(t, "a turn on an unreachable server", r, http.StatusServiceUnavailable, wire.CodeHarnessUnavailable)
	if m := addressOrPath.FindString(e.Message); m != "" {
		t.Fatalf("the 503 names %q: %s", m, e.Message)
	}
	// The decision names the same unavailability, as redacted.
	d := s.call(t, http.MethodPost, s.url(ns, "dead", "/decide"), s.gateway, decideBody, nil)
	var dec wire.Decision
	must(t, json.Unmarshal(d.Body, &dec))
	if d.Status != http.StatusOK || dec.Error == nil || dec.Error.Code != wire.CodeHarnessUnavailable || addressOrPath.MatchString(dec.Error.Message) {
		t.Fatalf("the decision on an unreachable server: %d %s", d.Status, d.Body)
	}
	evs := s.turn(t, s.ns, "demo", "run-redaction-control")
	if last := evs[len(evs)-1]; last.Type != wire.EventResult {
		t.Fatalf("control: the live harness's turn ended with %s: %s", last.Type, last.Data)
	}
}

// /metrics answers only a caller the API server authorizes (get on the
// non-resource URL /metrics); the probes answer anyone and name no tenant.
func (s *suite) testMetricsAndProbes(t *testing.T) {
	r := s.scrape(t, "")
	if r.Status != http.StatusUnauthorized && r.Status != http.StatusForbidden {
		t.Fatalf("an anonymous scrape: %d %.200s, want 401 or 403", r.Status, r.Body)
	}
	t.Logf("attack anonymous /metrics: refused %d", r.Status)
	if r := s.scrape(t, s.apiToken); r.Status != http.StatusForbidden {
		t.Fatalf("a gateway's scrape (a valid token without the grant): %d %.200s, want 403", r.Status, r.Body)
	}
	t.Logf("attack a gateway's token on /metrics: refused 403")
	if r := s.scrape(t, s.scraper(t)); r.Status != http.StatusOK || !strings.Contains(string(r.Body), "harness_dispatcher_tokenreviews_total") {
		t.Fatalf("control: an authorized scrape: %d %.300s", r.Status, r.Body)
	}
	resp, err := http.Get("http://" + s.op.ProbeAddr + "/readyz?verbose")
	must(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.Contains(string(body), s.ns) {
		t.Fatalf("/readyz: %d %s", resp.StatusCode, body)
	}
}

// scraper is a token of an account allowed GET /metrics (as the chart's
// metrics-reader role grants). It returns once the API server's RBAC grants
// it: the metrics filter caches a denial for 30 s, so a scrape before the
// new binding is seen would be refused for that long.
func (s *suite) scraper(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	name := "harness-metrics-reader-security"
	err := s.k8s.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}})
	if err == nil {
		must(t, s.k8s.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: s.ns, Name: "scraper"}}}))
	}
	eventually(t, 30*time.Second, "the API server grants the scraper GET /metrics", func() (bool, string) {
		st := s.rights(t, s.ns, "scraper", nil, &authzv1.NonResourceAttributes{Path: "/metrics", Verb: "get"})
		return st.Allowed, fmt.Sprintf("%+v", st)
	})
	return s.token(t, s.ns, "scraper")
}

// scrape GETs /metrics over TLS; the metrics certificate is self-signed,
// and what is tested is the answer, not the certificate.
func (s *suite) scrape(t *testing.T, token string) reply {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback, self-signed
	defer c.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodGet, "https://"+s.metricsAddr+"/metrics", nil)
	must(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	must(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return reply{Status: resp.StatusCode, Body: b}
}

// dialAPI opens a TLS connection to the API as the suite's client would.
func (s *suite) dialAPI(t *testing.T) *tls.Conn {
	t.Helper()
	cfg := s.op.HTTP.Transport.(*http.Transport).TLSClientConfig.Clone()
	cfg.ServerName = "127.0.0.1"
	c, err := tls.Dial("tcp", strings.TrimPrefix(s.op.APIBase, "https://"), cfg)
	must(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// closedWithin reads c until the server closes it (true) or limit passes
// (false); bytes the server sends first (an error answer) are returned.
func closedWithin(c net.Conn, limit time.Duration) (bool, string, time.Duration) {
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(limit))
	b, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false, string(b), time.Since(start)
	}
	return true, string(b), time.Since(start) // EOF or reset: closed
}

// Slow headers and slow bodies are cut by the server; a keep-alive
// connection is closed once idle. The controls send the same requests whole.
func (s *suite) testSlowClients(t *testing.T) {
	path := "/v1/namespaces/" + s.ns + "/agentsessions/demo/decide"
	c := s.dialAPI(t)
	_, err := io.WriteString(c, "POST "+path+" HTTP/1.1\r\nHost: 127.0.0.1\r\n")
	must(t, err)
	closed, _, took := closedWithin(c, 30*time.Second)
	if !closed {
		t.Fatalf("slow headers: the connection was still open after %v", took)
	}
	t.Logf("attack slow headers: connection closed by the server after %v", took.Round(time.Millisecond))

	body := `{"prompt":"hi"}` + strings.Repeat(" ", 100)
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, s.gateway, len(body))
	c = s.dialAPI(t)
	_, err = io.WriteString(c, head+body[:10])
	must(t, err)
	closed, answer, took := closedWithin(c, readTimeout+20*time.Second)
	if !closed || !strings.HasPrefix(answer, "HTTP/1.1 400") {
		t.Fatalf("slow body: closed %v after %v, answer %q; want a 400 and the connection closed", closed, took, firstLine(answer))
	}
	t.Logf("attack slow body: connection closed by the server after %v (answer %q)", took.Round(time.Millisecond), firstLine(answer))

	c = s.dialAPI(t)
	_, err = io.WriteString(c, head+body)
	must(t, err)
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	buf := make([]byte, 64)
	n, err := io.ReadAtLeast(c, buf, 12)
	if err != nil || !strings.HasPrefix(string(buf[:n]), "HTTP/1.1 200") {
		t.Fatalf("control: the whole body at once: %q %v", buf[:n], err)
	}
	// The same connection, once the answer is read, is idle: it is closed
	// after --idle-timeout.
	if closed, _, took := closedWithin(c, idleTimeout+20*time.Second); !closed {
		t.Fatalf("an idle keep-alive connection was still open after %v", took)
	} else {
		t.Logf("idle keep-alive connection closed after %v (--idle-timeout %v)", took.Round(time.Millisecond), idleTimeout)
	}
}

// --read-timeout bounds the request, not the answer: a turn stream longer
// than it runs to its end.
func (s *suite) testLongStream(t *testing.T) {
	s.stub.When("slow-stream", stubmodel.SlowText("one two three four", time.Second))
	evs := s.turnWith(t, s.ns, "demo", "run-slow-stream", "slow-stream please")
	if last := evs[len(evs)-1]; last.Type != wire.EventResult {
		t.Fatalf("a turn stream longer than --read-timeout ended with %s: %s", last.Type, last.Data)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\r\n")
	return line
}
