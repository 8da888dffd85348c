package modelgateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openclaw/harness-operator/internal/dispatcher/modelcred"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
	"github.com/openclaw/harness-operator/internal/platform/netguard"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// The secrets of the fixture: none may appear in a log line or an answer
// the gateway wrote.
const (
	harnessKey = "sk-harness-7f3a9c1e5b"
	profileKey = "sk-profile-2d8e4b6a0c"
	model      = "gpt-5"
)

var testHarness = modelcred.Harness{Namespace: "team-a", Name: "codex", UID: "harness-uid-1"}

// A realistic body, written as Codex would not (spacing, escapes, key
// order), so that a byte comparison tells a re-encoded body apart.
const testBody = `{"model":"gpt-5",  "input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi \u00e9 <&>"}]}],` +
	`"tools":[],"tool_choice":"auto","parallel_tool_calls":false,"store":false,"stream":true,"include":[],"prompt_cache_key":"t-1"}`

// fixture is a gateway in front of the stub model, with a real Holds over
// a journal, served on loopback through its own Server and Listener.
type fixture struct {
	t        *testing.T
	key      *modelcred.Key
	now      time.Time
	journal  *journal.Journal
	stub     *stubmodel.Server
	upstream Upstream
	// others are the upstreams of other harnesses.
	others map[modelcred.Harness]Upstream
	gw     *Gateway
	addr   string
	client *http.Client
	logs   *logLines

	mu      sync.Mutex
	secrets []string // credentials minted, and the keys
	answers []string // bodies the gateway wrote
}

type option func(*Config)

func withLimits(l Limits) option { return func(c *Config) { c.Limits = l } }

func withLiveness(l Liveness) option { return func(c *Config) { c.Liveness = l } }

func withUpstreams(u Upstreams) option { return func(c *Config) { c.Upstreams = u } }

func withDial(p *netguard.Policy) option { return func(c *Config) { c.Dial = p } }

// loopbackAllowed is the default dial policy plus loopback, where the tests'
// upstreams listen.
func loopbackAllowed() *netguard.Policy {
	p := DefaultDialPolicy()
	p.AllowLoopback = true
	return &p
}

func newFixture(t *testing.T, opts ...option) *fixture {
	t.Helper()
	key, err := modelcred.DeriveKey(bytes.Repeat([]byte{7}, modelcred.TurnTokenKeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(t.TempDir(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = j.Close() })
	stub := stubmodel.Start(t)
	base, err := url.Parse(stub.BaseURL())
	if err != nil {
		t.Fatal(err)
	}
	logs, log := newLogLines()
	f := &fixture{t: t, key: key, now: time.Now().UTC().Truncate(time.Second), journal: j, stub: stub, logs: logs,
		upstream: Upstream{BaseURL: base, Credential: harnessKey},
		secrets:  []string{harnessKey, profileKey}}
	cfg := Config{
		Key: key, Liveness: j, Upstreams: upstreamsFunc(f.resolve), Dial: loopbackAllowed(),
		Now: func() time.Time { return f.now }, Log: log, Registerer: prometheus.NewRegistry(),
	}
	for _, o := range opts {
		o(&cfg)
	}
	gw, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.gw = gw
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.addr = ln.Addr().String()
	srv := gw.Server()
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(gw.Listener(ln)) }()
	transport := &http.Transport{Proxy: nil, DisableCompression: true}
	f.client = &http.Client{Transport: transport, Timeout: 60 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	t.Cleanup(func() {
		transport.CloseIdleConnections()
		_ = srv.Close()
		<-served
		gw.Close()
	})
	return f
}

type upstreamsFunc func(context.Context, modelcred.Harness) (Upstream, error)

func (u upstreamsFunc) Upstream(ctx context.Context, h modelcred.Harness) (Upstream, error) {
	return u(ctx, h)
}

type livenessFunc func(context.Context, string, int64) (bool, error)

func (l livenessFunc) Holds(ctx context.Context, lease string, token int64) (bool, error) {
	return l(ctx, lease, token)
}

func (f *fixture) resolve(_ context.Context, h modelcred.Harness) (Upstream, error) {
	if up, ok := f.others[h]; ok {
		return up, nil
	}
	if h != testHarness {
		return Upstream{}, &url.Error{Op: "resolve", URL: "harness " + h.Name, Err: io.EOF}
	}
	return f.upstream, nil
}

// acquire takes a session's lease, as the engine does for a turn.
func (f *fixture) acquire(session string) store.Lease {
	f.t.Helper()
	l, err := f.journal.Acquire(context.Background(), session, "dispatcher-a", time.Minute)
	if err != nil {
		f.t.Fatal(err)
	}
	return l
}

// claims are a turn's claims for lease, valid for an hour from f.now.
func (f *fixture) claims(l store.Lease) modelcred.Claims {
	return modelcred.Claims{Audience: modelcred.Audience, Lease: l.Session, Token: l.Token, Run: "run-1",
		Harness: testHarness, Models: []string{model, "openai/" + model}, ExpiresAt: f.now.Add(time.Hour)}
}

// seal mints a credential of c at f.now with the fixture's key.
func (f *fixture) seal(c modelcred.Claims) string { return f.sealWith(f.key, c, f.now) }

func (f *fixture) sealWith(k *modelcred.Key, c modelcred.Claims, at time.Time) string {
	f.t.Helper()
	cred, err := modelcred.Seal(k, c, at)
	if err != nil {
		f.t.Fatal(err)
	}
	f.mu.Lock()
	f.secrets = append(f.secrets, cred)
	f.mu.Unlock()
	return cred
}

// credential is a credential of a turn running under a new lease of session.
func (f *fixture) credential(session string) string { return f.seal(f.claims(f.acquire(session))) }

// request builds a request to the gateway.
func (f *fixture) request(method, path, cred, body string) *http.Request {
	f.t.Helper()
	r, err := http.NewRequest(method, "http://"+f.addr+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	if cred != "" {
		r.Header.Set("Authorization", "Bearer "+cred)
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "text/event-stream")
	return r
}

// answer is what a client got: the status and headers (the body is read
// and closed).
type answer struct {
	StatusCode int
	Header     http.Header
}

// do sends r and reads the whole answer.
func (f *fixture) do(r *http.Request) (answer, string) {
	f.t.Helper()
	resp, err := f.client.Do(r)
	if err != nil {
		f.t.Fatalf("%s %s: %v", r.Method, r.URL.Path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatalf("%s %s: read the answer: %v", r.Method, r.URL.Path, err)
	}
	f.mu.Lock()
	f.answers = append(f.answers, string(b))
	f.mu.Unlock()
	return answer{StatusCode: resp.StatusCode, Header: resp.Header}, string(b)
}

// post sends a model request with cred and body.
func (f *fixture) post(cred, body string) (answer, string) {
	f.t.Helper()
	return f.do(f.request(http.MethodPost, ResponsesPath, cred, body))
}

// wantRefusal fails unless the answer is the gateway's refusal with status
// and code, its message containing msg.
func wantRefusal(t *testing.T, resp answer, body string, status int, code Code, msg string) {
	t.Helper()
	var got struct {
		Error struct {
			Type, Code, Message string
		}
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil || resp.StatusCode != status {
		t.Fatalf("answer %d %q, want a %d refusal", resp.StatusCode, body, status)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("refusal Content-Type %q, want application/json", ct)
	}
	if got.Error.Type != ErrorType || got.Error.Code != string(code) || !strings.Contains(got.Error.Message, msg) {
		t.Fatalf("refusal %+v, want type %s, code %s, a message with %q", got.Error, ErrorType, code, msg)
	}
}

// nothingUpstream fails if any request reached the stub.
func (f *fixture) nothingUpstream(what string) {
	f.t.Helper()
	if reqs, unserved := f.stub.Requests(), f.stub.Unserved(); len(reqs) != 0 || len(unserved) != 0 {
		f.t.Fatalf("%s: the stub got %d requests and %v unserved ones, want none", what, len(reqs), unserved)
	}
}

// noSecrets fails if a credential, the harness's key or the profile key is
// in a log line or an answer of the gateway.
func (f *fixture) noSecrets() {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	lines := f.logs.all()
	if len(lines) == 0 {
		f.t.Fatal("no log lines: the check would prove nothing")
	}
	for _, s := range f.secrets {
		for _, l := range lines {
			if strings.Contains(l, s) {
				f.t.Errorf("a log line holds a secret (%.12s…): %s", s, strings.ReplaceAll(l, s, "<the secret>"))
			}
		}
		for _, a := range f.answers {
			if strings.Contains(a, s) {
				f.t.Errorf("an answer holds a secret (%.12s…): %s", s, strings.ReplaceAll(a, s, "<the secret>"))
			}
		}
	}
}

// logLines is a logger that keeps its records for the test to read.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func newLogLines() (*logLines, logr.Logger) {
	l := &logLines{}
	return l, funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 9})
}

func (l *logLines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// with returns the records that contain every one of substrs.
func (l *logLines) with(substrs ...string) []string {
	var out []string
next:
	for _, line := range l.all() {
		for _, s := range substrs {
			if !strings.Contains(line, s) {
				continue next
			}
		}
		out = append(out, line)
	}
	return out
}

// eventually polls cond (a fact the gateway publishes: a log line, a
// metric) until it holds, and fails after a deadline sized for a loaded
// machine.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
