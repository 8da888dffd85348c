package modelgateway

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/openclaw/harness-operator/internal/dispatcher/modelcred"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// TestRefusedBeforeTheUpstream: every refusal of the design's order is
// answered by the gateway, with its status and code, and nothing reaches
// the upstream; the control passes. No answer or log line holds a
// credential or a key.
func TestRefusedBeforeTheUpstream(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	live := f.credential("team-a/uid-1")

	otherKey, err := modelcred.DeriveKey(bytes.Repeat([]byte{9}, modelcred.TurnTokenKeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	lease := f.acquire("team-a/uid-2")
	ended := f.seal(f.claims(lease))
	if err := f.journal.Release(ctx, lease); err != nil {
		t.Fatal(err)
	}
	// A credential naming session 3's lease with the token of another
	// session's grant: no grant of session 3 is current.
	foreign := f.claims(f.acquire("team-a/uid-1x"))
	foreign.Lease = "team-a/uid-3"
	expired := f.claims(f.acquire("team-a/uid-4"))
	expired.ExpiresAt = f.now.Add(-2 * time.Hour)
	otherAudience := f.claims(f.acquire("team-a/uid-5"))
	otherAudience.Audience = "another-gateway"
	// One character changed in the middle of the sealed bytes.
	damaged := []byte(live)
	if damaged[40] == 'A' {
		damaged[40] = 'B'
	} else {
		damaged[40] = 'A'
	}

	cases := []struct {
		name         string
		method, path string
		cred, body   string
		status       int
		code         Code
		msg          string
	}{
		{name: "no credential", status: 401, code: CodeCredentialMissing, msg: "Authorization: Bearer"},
		{name: "not a credential", cred: "sk-not-ours", status: 401, code: "credential_malformed"},
		{name: "damaged", cred: string(damaged), status: 401, code: "credential_forged"},
		{name: "another key's", cred: f.sealWith(otherKey, f.claims(f.acquire("team-a/uid-6")), f.now), status: 401, code: "credential_forged"},
		{name: "expired", cred: f.sealWith(f.key, expired, f.now.Add(-3*time.Hour)), status: 401, code: "credential_expired"},
		{name: "another audience", cred: f.seal(otherAudience), status: 401, code: "credential_wrong_audience"},
		{name: "replayed after its turn's Release", cred: ended, status: 401, code: CodeTurnNotRunning, msg: "no longer running"},
		{name: "another session's grant", cred: f.seal(foreign), status: 401, code: CodeTurnNotRunning},
		{name: "a model outside the credential's", cred: live, body: strings.Replace(testBody, `"gpt-5"`, `"gpt-5-pro"`, 1), status: 403, code: CodeModelNotAllowed, msg: `"gpt-5-pro"`},
		{name: "a second model smuggled in", cred: live, body: `{"model":"gpt-5","Model":"gpt-5-pro"}`, status: 400, code: CodeInvalidBody, msg: "more than once"},
		{name: "no model", cred: live, body: `{"input":[]}`, status: 400, code: CodeInvalidBody, msg: `no "model"`},
		{name: "models", method: http.MethodGet, path: "/v1/models", cred: live, status: 404, code: CodeNotFound, msg: `"/v1/models"`},
		{name: "compaction", path: "/v1/responses/compact", cred: live, status: 404, code: CodeNotFound},
		{name: "chat completions", path: "/v1/chat/completions", cred: live, status: 404, code: CodeNotFound},
		{name: "images", path: "/v1/images/generations", cred: live, status: 404, code: CodeNotFound},
		{name: "GET responses", method: http.MethodGet, cred: live, status: 404, code: CodeNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			method, path, body := tc.method, tc.path, tc.body
			if method == "" {
				method = http.MethodPost
			}
			if path == "" {
				path = ResponsesPath
			}
			if body == "" {
				body = testBody
			}
			resp, got := f.do(f.request(method, path, tc.cred, body))
			wantRefusal(t, resp, got, tc.status, tc.code, tc.msg)
			f.nothingUpstream(tc.name)
			if len(f.logs.with("model request refused", `"code"="`+string(tc.code)+`"`)) == 0 {
				t.Errorf("no log line for the refusal %s", tc.code)
			}
		})
	}
	if n := promtest.ToFloat64(f.gw.metrics.requests.WithLabelValues(string(CodeTurnNotRunning))); n != 2 {
		t.Errorf("requests_total{code=turn_not_running} = %v, want 2", n)
	}
	if lines := f.logs.with("model request refused", `"lease"="team-a/uid-2"`, `"run"="run-1"`); len(lines) != 1 {
		t.Errorf("the replay's refusal is logged %d times with its lease and run, want once", len(lines))
	}

	// The control: a credential of a running turn, for its model.
	resp, got := f.post(live, testBody)
	if resp.StatusCode != http.StatusOK || !strings.Contains(got, "response.completed") {
		t.Fatalf("the control: %d %q, want 200 and a completed stream", resp.StatusCode, got)
	}
	if n := len(f.stub.Requests()); n != 1 {
		t.Fatalf("the control: the stub got %d requests, want 1", n)
	}
	f.noSecrets()
}

// TestRefusedWhenLivenessFails: a liveness check that fails refuses the
// request (fail closed), without the failure's details (an address) in the
// answer.
func TestRefusedWhenLivenessFails(t *testing.T) {
	var asked atomic.Int32
	f := newFixture(t, withLiveness(livenessFunc(func(context.Context, string, int64) (bool, error) {
		asked.Add(1)
		return true, errors.New("holds: Post https://10.96.0.12:8443/internal/model-gateway/v1/holds: connection refused")
	})))
	resp, got := f.post(f.credential("team-a/uid-1"), testBody)
	wantRefusal(t, resp, got, 401, CodeLivenessUnavailable, "could not be checked")
	f.nothingUpstream("liveness failed")
	if asked.Load() != 1 || strings.Contains(got, "10.96.0.12") {
		t.Fatalf("liveness asked %d times, answer %q: want once, and no address", asked.Load(), got)
	}
	if len(f.logs.with("liveness could not be checked", "connection refused")) != 1 {
		t.Fatalf("the failure is not logged: %q", f.logs.all())
	}
	f.noSecrets()
}

// codexHeaders are the headers Codex 0.169.0 sends (the design's section
// 1), with their values.
var codexHeaders = [][2]string{
	{"Accept", "text/event-stream"},
	{"Content-Type", "application/json"},
	{"User-Agent", "codex_cli_rs/0.169.0 (Linux; x86_64)"},
	{"Originator", "codex_cli_rs"},
	{"Session-Id", "0199a1b2-session"},
	{"Thread-Id", "0199a1b2-thread"},
	{"X-Client-Request-Id", "0199a1b2-thread"},
	{"X-Codex-Window-Id", "window-1"},
	{"X-Codex-Beta-Features", "remote_compaction_v2"},
	{"X-Codex-Turn-Metadata", `{"installation_id":"i","turn_id":"t","model":"gpt-5","history_initialization":"new"}`},
}

// rawPost sends a request written byte for byte, so that hop-by-hop
// headers reach the gateway as a client wrote them, and reads the answer.
func (f *fixture) rawPost(path, cred, body string, extra ...string) (answer, string) {
	f.t.Helper()
	conn, err := net.Dial("tcp", f.addr)
	if err != nil {
		f.t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	var req strings.Builder
	fmt.Fprintf(&req, "POST %s HTTP/1.1\r\nHost: gateway.test\r\nAuthorization: Bearer %s\r\n", path, cred)
	for _, h := range codexHeaders {
		fmt.Fprintf(&req, "%s: %s\r\n", h[0], h[1])
	}
	for _, h := range extra {
		fmt.Fprintf(&req, "%s\r\n", h)
	}
	fmt.Fprintf(&req, "Content-Length: %d\r\n\r\n%s", len(body), body)
	if _, err := io.WriteString(conn, req.String()); err != nil {
		f.t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		f.t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	f.mu.Lock()
	f.answers = append(f.answers, string(b))
	f.mu.Unlock()
	return answer{StatusCode: resp.StatusCode, Header: resp.Header}, string(b)
}

// TestForwardsFaithfully: the upstream gets the same body bytes, Codex's
// headers, the harness's credential as its Authorization (the profile's
// key when the credential carries one), and the upstream's own headers;
// never the gateway credential, the hop-by-hop headers or the client's
// Accept-Encoding.
func TestForwardsFaithfully(t *testing.T) {
	f := newFixture(t)
	f.upstream.Headers = map[string]string{"OpenAI-Organization": "org-1", "Originator": "gateway-set"}
	hop := []string{"Connection: keep-alive, X-Hop", "X-Hop: drop me", "Keep-Alive: timeout=5", "Te: trailers",
		"Proxy-Authorization: Basic Zm9vOmJhcg==", "Accept-Encoding: gzip, br", "X-Other: kept"}

	profile := f.claims(f.acquire("team-a/uid-2"))
	profile.Profile = &modelcred.Profile{ID: "team-key", Key: profileKey}
	for i, tc := range []struct {
		name, cred, bearer string
	}{
		{name: "the harness's credential", cred: f.credential("team-a/uid-1"), bearer: harnessKey},
		{name: "an auth profile's key", cred: f.seal(profile), bearer: profileKey},
	} {
		resp, got := f.rawPost(ResponsesPath, tc.cred, testBody, hop...)
		if resp.StatusCode != http.StatusOK || !strings.Contains(got, "response.completed") {
			t.Fatalf("%s: %d %q, want a completed stream", tc.name, resp.StatusCode, got)
		}
		reqs := f.stub.Requests()
		if len(reqs) != i+1 {
			t.Fatalf("%s: the stub got %d requests, want %d", tc.name, len(reqs), i+1)
		}
		up := reqs[i]
		if !bytes.Equal(up.Body, []byte(testBody)) {
			t.Errorf("%s: the upstream got the body\n%s\nwant the same bytes\n%s", tc.name, up.Body, testBody)
		}
		if got := up.Header.Values("Authorization"); len(got) != 1 || got[0] != "Bearer "+tc.bearer {
			t.Errorf("%s: the upstream's Authorization is not %s's", tc.name, tc.name)
		}
		for _, h := range codexHeaders {
			want := h[1]
			if h[0] == "Originator" {
				want = "gateway-set" // the upstream's headers win
			}
			if got := up.Header.Values(h[0]); len(got) != 1 || got[0] != want {
				t.Errorf("%s: the upstream got %s %q, want %q", tc.name, h[0], got, want)
			}
		}
		if up.Header.Get("OpenAI-Organization") != "org-1" || up.Header.Get("X-Other") != "kept" {
			t.Errorf("%s: the upstream's header or the client's X-Other is missing: %v", tc.name, up.Header)
		}
		for _, name := range []string{"X-Hop", "Keep-Alive", "Te", "Proxy-Authorization", "Accept-Encoding"} {
			if v, ok := up.Header[http.CanonicalHeaderKey(name)]; ok {
				t.Errorf("%s: the upstream got %s %q, want it dropped", tc.name, name, v)
			}
		}
		if strings.Contains(fmt.Sprint(up.Header), modelcred.Prefix) {
			t.Errorf("%s: the gateway credential reached the upstream", tc.name)
		}
	}
	f.noSecrets()
}

// recorder is an upstream of the test's own: it records each request's URL
// and answers with answer.
type recorder struct {
	srv    *http.Server
	url    *url.URL
	mu     sync.Mutex
	paths  []string
	answer http.HandlerFunc
}

func newRecorder(t *testing.T, answer http.HandlerFunc) *recorder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{answer: answer}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = r.srv.Serve(ln) }()
	t.Cleanup(func() { _ = r.srv.Close(); <-done })
	r.url = &url.URL{Scheme: "http", Host: ln.Addr().String()}
	return r
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	_, _ = io.Copy(io.Discard, req.Body)
	r.mu.Lock()
	r.paths = append(r.paths, req.Method+" "+req.URL.RequestURI())
	r.mu.Unlock()
	r.answer(w, req)
}

func (r *recorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.paths...)
}

// base is the recorder's URL with path and query.
func (r *recorder) base(pathQuery string) *url.URL {
	u, _ := url.Parse(r.url.String() + pathQuery)
	return u
}

// TestQueryAndAnswerHeaders: the upstream's path is its base URL's plus
// /responses, its query parameters win over the base URL's and the
// client's; the answer's headers pass without the hop-by-hop ones, and its
// status and body unchanged, an error's included.
func TestQueryAndAnswerHeaders(t *testing.T) {
	rec := newRecorder(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Connection", "X-Answer-Hop")
		w.Header().Set("X-Answer-Hop", "1")
		w.Header().Set("X-Request-Id", "req-7")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"error":{"type":"rate_limit","message":"slow down"}}`)
	})
	f := newFixture(t)
	f.upstream.BaseURL = rec.base("/openai/v1/?api-version=2024&deployment=base")
	f.upstream.QueryParams = url.Values{"api-version": {"2026"}}
	r := f.request(http.MethodPost, ResponsesPath+"?client=1&api-version=client", f.credential("team-a/uid-1"), testBody)
	resp, got := f.do(r)
	if resp.StatusCode != http.StatusTooManyRequests || got != `{"error":{"type":"rate_limit","message":"slow down"}}` {
		t.Fatalf("answer %d %q, want the upstream's 429 unchanged", resp.StatusCode, got)
	}
	if resp.Header.Get("X-Request-Id") != "req-7" || resp.Header.Get("X-Answer-Hop") != "" {
		t.Fatalf("answer headers %v, want X-Request-Id and not X-Answer-Hop", resp.Header)
	}
	want := []string{"POST /openai/v1/responses?api-version=2026&client=1&deployment=base"}
	if got := rec.requests(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the upstream got %q, want %q", got, want)
	}
}

// sseReader reads an answer's server-sent events one by one.
type sseReader struct{ r *bufio.Reader }

// next returns the next event's text (its lines up to the blank line).
func (s sseReader) next() (string, error) {
	var ev strings.Builder
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			return ev.String(), err
		}
		if line == "\n" || line == "\r\n" {
			if ev.Len() > 0 {
				return ev.String(), nil
			}
			continue
		}
		ev.WriteString(line)
	}
}

// TestStreamsEventByEvent: the client reads an event while the upstream
// holds the rest of its answer: the gateway flushes what it read, it does
// not wait for more.
func TestStreamsEventByEvent(t *testing.T) {
	f := newFixture(t)
	gate := stubmodel.NewGate()
	t.Cleanup(gate.Release)
	f.stub.Enqueue(stubmodel.Text("one two three", "one ", "two ", "three").HoldBefore(1, gate))

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := f.request(http.MethodPost, ResponsesPath, f.credential("team-a/uid-1"), testBody).WithContext(ctx)
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	events := sseReader{bufio.NewReader(resp.Body)}
	for {
		ev, err := events.next()
		if err != nil {
			t.Fatalf("the stream ended before the first delta (%v): the gateway holds what the upstream sent", err)
		}
		if strings.Contains(ev, `"delta":"two "`) {
			t.Fatal("the second delta arrived while the stub held it")
		}
		if strings.Contains(ev, `"delta":"one "`) {
			break
		}
	}
	// The stub sends nothing past its hold until the release: what the
	// client read, the gateway passed on without waiting for more.
	select {
	case <-gate.Reached():
	case <-ctx.Done():
		t.Fatal("the stub never reached its hold")
	}
	if out, _ := f.stub.Requests()[0].Wait(canceled()); out != stubmodel.OutcomePending {
		t.Fatalf("the stub's answer is %s, want pending at its hold", out)
	}
	gate.Release()
	var rest strings.Builder
	for {
		ev, err := events.next()
		rest.WriteString(ev)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(rest.String(), `"delta":"two "`) || !strings.Contains(rest.String(), "response.completed") {
		t.Fatalf("after the release the stream is %q, want the rest and response.completed", rest.String())
	}
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// TestDialRules: an upstream whose address the dial rules refuse is never
// dialled; the answer names the rule, not the address.
func TestDialRules(t *testing.T) {
	f := newFixture(t, withDial(nil)) // the default: loopback refused
	resp, got := f.post(f.credential("team-a/uid-1"), testBody)
	wantRefusal(t, resp, got, http.StatusBadGateway, CodeUpstreamUnavailable, "dial rules refuse (rule loopback)")
	f.nothingUpstream("a refused address")
	if strings.Contains(got, "127.0.0.1") || strings.Contains(got, f.stub.Addr()) {
		t.Fatalf("the answer names the upstream's address: %q", got)
	}
	f.noSecrets()
}

// TestUpstreamResolution: a harness without an upstream, or with one the
// gateway cannot use, is a 502 that names the harness and nothing of the
// upstream; nothing is sent.
func TestUpstreamResolution(t *testing.T) {
	for _, tc := range []struct {
		name     string
		upstream func(*Upstream)
		msg      string
	}{
		{name: "no credential", upstream: func(u *Upstream) { u.Credential = "" }, msg: "misconfigured: it has no credential"},
		{name: "another scheme", upstream: func(u *Upstream) { u.BaseURL = &url.URL{Scheme: "ftp", Host: "x"} }, msg: "not http or https"},
		{name: "no base URL", upstream: func(u *Upstream) { u.BaseURL = nil }, msg: "no base URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			tc.upstream(&f.upstream)
			resp, got := f.post(f.credential("team-a/uid-1"), testBody)
			wantRefusal(t, resp, got, http.StatusBadGateway, CodeUpstreamUnavailable, tc.msg)
			f.nothingUpstream(tc.name)
		})
	}
	t.Run("unknown harness", func(t *testing.T) {
		f := newFixture(t, withUpstreams(upstreamsFunc(func(context.Context, modelcred.Harness) (Upstream, error) {
			return Upstream{}, errors.New(`harness team-a/codex: spec.modelGateway.credentialSecretRef: secret "keys" not found`)
		})))
		resp, got := f.post(f.credential("team-a/uid-1"), testBody)
		wantRefusal(t, resp, got, http.StatusBadGateway, CodeUpstreamUnavailable, "no upstream for harness team-a/codex")
		if len(f.logs.with("could not be resolved", "credentialSecretRef")) != 1 {
			t.Fatalf("the resolution's error is not logged: %q", f.logs.all())
		}
	})
}

// TestPanicFailsOnlyItsRequest: a panic while handling a request answers
// it with a 500 and the gateway serves the next one.
func TestPanicFailsOnlyItsRequest(t *testing.T) {
	var f *fixture
	var panicking atomic.Bool
	panicking.Store(true)
	f = newFixture(t, withUpstreams(upstreamsFunc(func(ctx context.Context, h modelcred.Harness) (Upstream, error) {
		if panicking.Load() {
			panic("a bug")
		}
		return f.resolve(ctx, h)
	})))
	cred := f.credential("team-a/uid-1")
	resp, got := f.post(cred, testBody)
	wantRefusal(t, resp, got, http.StatusInternalServerError, CodeInternal, "not forwarded")
	if len(f.logs.with("a panic was recovered", "a bug")) != 1 {
		t.Fatalf("the panic is not logged: %q", f.logs.all())
	}
	panicking.Store(false)
	if resp, got := f.post(cred, testBody); resp.StatusCode != http.StatusOK {
		t.Fatalf("after the panic: %d %q, want 200", resp.StatusCode, got)
	}
	f.noSecrets()
}

// TestNewRefusesBadConfig: a Gateway needs its key, liveness and upstreams,
// non-negative limits, and a registry of its own.
func TestNewRefusesBadConfig(t *testing.T) {
	key, err := modelcred.DeriveKey(make([]byte, modelcred.TurnTokenKeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	ok := Config{Key: key, Liveness: livenessFunc(nil), Upstreams: upstreamsFunc(nil)}
	reg := prometheus.NewRegistry()
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{name: "no key", edit: func(c *Config) { c.Key = nil }, want: "Config.Key"},
		{name: "no liveness", edit: func(c *Config) { c.Liveness = nil }, want: "Config.Liveness"},
		{name: "no upstreams", edit: func(c *Config) { c.Upstreams = nil }, want: "Config.Upstreams"},
		{name: "a negative limit", edit: func(c *Config) { c.Limits.UpstreamIdleTimeout = -1 }, want: "UpstreamIdleTimeout"},
		{name: "a registry taken", edit: func(c *Config) { c.Registerer = reg }, want: "already registered"},
	} {
		if tc.name == "a registry taken" {
			c := ok
			c.Registerer = reg
			if _, err := New(c); err != nil {
				t.Fatal(err)
			}
		}
		c := ok
		tc.edit(&c)
		if _, err := New(c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New = %v, want an error naming %s", tc.name, err, tc.want)
		}
	}
}
