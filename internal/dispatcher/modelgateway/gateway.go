package modelgateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/openclaw/harness-operator/internal/dispatcher/modelcred"
	"github.com/openclaw/harness-operator/internal/platform/netguard"
	"github.com/openclaw/harness-operator/internal/platform/proxyenv"
)

// Config is what a Gateway needs.
type Config struct {
	// Key opens the credentials (modelcred.DeriveKey of the turn-token
	// key). Required.
	Key *modelcred.Key
	// Liveness says whether a credential's grant is current. Required.
	Liveness Liveness
	// Upstreams resolves a harness to its upstream. Required.
	Upstreams Upstreams
	// Limits; zero fields take their defaults (DefaultLimits).
	Limits Limits
	// Dial is the rule for the upstreams' resolved addresses. nil means
	// DefaultDialPolicy: metadata, link-local, loopback and the private
	// and shared ranges refused. Private ranges or loopback (tests) are
	// reached only through a Policy that allows them.
	Dial *netguard.Policy
	// Now is the clock credentials are checked against (time.Now when nil).
	Now func() time.Time
	// Log receives one line per refused request and per cut stream
	// (forwarded requests at V(1)). Never a credential or a key.
	Log logr.Logger
	// Registerer takes the gateway's metrics (none registered when nil).
	Registerer prometheus.Registerer
}

// DefaultDialPolicy refuses the upstream addresses a tenant must not reach
// through the gateway: metadata and link-local (always), loopback, and the
// private and shared ranges a cluster's services and pods live in
// (netguard.DefaultRefusedCIDRs).
func DefaultDialPolicy() netguard.Policy {
	refused, err := netguard.ParseCIDRs("DefaultRefusedCIDRs", netguard.DefaultRefusedCIDRs)
	if err != nil {
		panic(err) // a constant
	}
	return netguard.Policy{ClusterCIDRs: refused}
}

// Gateway is the model gateway's http.Handler. It is safe for concurrent
// use. Close releases its idle upstream connections.
type Gateway struct {
	key       *modelcred.Key
	liveness  Liveness
	upstreams Upstreams
	limits    Limits
	now       func() time.Time
	log       logr.Logger
	metrics   *metrics
	inFlight  *inFlight
	transport *http.Transport
}

// dialTimeout bounds one connection attempt to an upstream (inside the
// upstream response header limit).
const dialTimeout = 30 * time.Second

// New returns a Gateway, or an error naming the configuration at fault.
func New(cfg Config) (*Gateway, error) {
	switch {
	case cfg.Key == nil:
		return nil, errors.New("modelgateway: Config.Key is required")
	case cfg.Liveness == nil:
		return nil, errors.New("modelgateway: Config.Liveness is required")
	case cfg.Upstreams == nil:
		return nil, errors.New("modelgateway: Config.Upstreams is required")
	}
	if err := cfg.Limits.validate(); err != nil {
		return nil, err
	}
	limits := cfg.Limits.withDefaults()
	policy := DefaultDialPolicy()
	if cfg.Dial != nil {
		policy = *cfg.Dial
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Gateway{
		key: cfg.Key, liveness: cfg.Liveness, upstreams: cfg.Upstreams, limits: limits, now: now,
		log: cfg.Log, metrics: m, inFlight: newInFlight(limits.MaxInFlightPerLease),
		transport: &http.Transport{
			// Never a proxy: it would see the provider credential.
			Proxy:             proxyenv.Never,
			DialContext:       policy.Dialer(&net.Dialer{Timeout: dialTimeout}).DialContext,
			ForceAttemptHTTP2: true,
			// The answer passes as the upstream sent it, and the client's
			// Accept-Encoding is not forwarded: event limits read plain
			// bytes.
			DisableCompression:  true,
			TLSHandshakeTimeout: 10 * time.Second,
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     90 * time.Second,
		},
	}, nil
}

// Close closes the idle upstream connections; answers being streamed go
// on until they end.
func (g *Gateway) Close() { g.transport.CloseIdleConnections() }

// The causes a forwarded request's context is cancelled with.
var (
	errHeaderTimeout = errors.New("upstream response header limit")
	errIdle          = errors.New("upstream idle limit")
)

// exchange is one request's record, for its log lines and metrics.
type exchange struct {
	start   time.Time
	code    string // the requests_total label
	lease   string
	run     string
	model   string
	harness string
}

func (x *exchange) keyvals(kv ...any) []any {
	if x.lease != "" {
		kv = append(kv, "lease", x.lease, "run", x.run, "harness", x.harness)
	}
	if x.model != "" {
		kv = append(kv, "model", x.model)
	}
	return kv
}

// ServeHTTP admits the request (Admit), then forwards it and streams the
// answer back.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	x := &exchange{start: time.Now()}
	g.metrics.inFlight.Inc()
	defer func() {
		g.metrics.inFlight.Dec()
		g.metrics.duration.Observe(time.Since(x.start).Seconds())
		if x.code != "" {
			g.metrics.requests.WithLabelValues(x.code).Inc()
		}
	}()
	// Written is set once the answer's headers are out: a panic after it
	// can only cut the answer.
	written := false
	defer g.recoverPanic(w, x, &written)

	in := Input{Method: r.Method, Path: r.URL.Path, Credential: g.credential(r)}
	if in.Credential.Err == nil && !in.Credential.Missing {
		c := in.Credential.Claims
		x.lease, x.run, x.harness = c.Lease, c.Run, c.Harness.Namespace+"/"+c.Harness.Name
	}
	var body []byte
	for {
		v := Admit(in)
		switch v.Need {
		case NeedPlace:
			release, ok := g.inFlight.take(x.lease)
			if ok {
				defer release()
			}
			in.Place = &ok
		case NeedBody:
			var b Body
			body, b = g.readBody(r)
			x.model = clip(b.Model) // the client's: logged, but never at length
			in.Body = &b
		case NeedLiveness:
			holds, err := g.liveness.Holds(r.Context(), in.Credential.Claims.Lease, in.Credential.Claims.Token)
			if err != nil {
				g.log.Info("liveness could not be checked", x.keyvals("error", err.Error())...)
			}
			in.Liveness = &Answer{Holds: holds, Err: err}
		default:
			if v.Refusal != nil {
				g.refuse(w, x, v.Refusal)
				return
			}
			g.forward(w, r, x, in.Credential.Claims, body, &written)
			return
		}
	}
}

// credential opens the request's bearer credential.
func (g *Gateway) credential(r *http.Request) Credential {
	values := r.Header.Values("Authorization")
	if len(values) != 1 {
		return Credential{Missing: true}
	}
	scheme, token, ok := strings.Cut(values[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return Credential{Missing: true}
	}
	claims, err := modelcred.Open(g.key, strings.TrimSpace(token), g.now(), modelcred.Audience)
	return Credential{Claims: claims, Err: err}
}

// readBody reads the body up to its limit and finds its model.
func (g *Gateway) readBody(r *http.Request) ([]byte, Body) {
	limit := g.limits.MaxBodyBytes
	if r.ContentLength > limit {
		return nil, Body{TooLarge: true, Limit: limit}
	}
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength))
	}
	n, err := buf.ReadFrom(io.LimitReader(r.Body, limit+1))
	switch {
	case n > limit:
		return nil, Body{TooLarge: true, Limit: limit}
	case err != nil:
		return nil, Body{Limit: limit, Invalid: "it could not be read to its end"}
	}
	model, invalid := bodyModel(buf.Bytes())
	return buf.Bytes(), Body{Limit: limit, Model: model, Invalid: invalid}
}

// bodyModelStrict returns the body's "model", or why it cannot be told: the body
// must be one JSON object with exactly one member named "model" in any
// letter case (an upstream that matches names without case, or takes the
// first of two, must see the model the gateway checked), and it must be a
// string. Other members are skipped, not interpreted. bodyModel takes a
// faster way for a valid body (bodymodel.go).
func bodyModelStrict(body []byte) (model, invalid string) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", "it is not a JSON object"
	}
	seen := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", "it is not valid JSON"
		}
		name, _ := tok.(string)
		if !strings.EqualFold(name, "model") {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return "", "it is not valid JSON"
			}
			continue
		}
		if seen {
			return "", `it names "model" more than once`
		}
		seen = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return "", "it is not valid JSON"
		}
		if name != "model" || json.Unmarshal(raw, &model) != nil || model == "" {
			return "", `its "model" must be a non-empty string, named in lower case`
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return "", "it is not valid JSON"
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return "", "it holds more than one JSON value"
	}
	if !seen {
		return "", `it has no "model"`
	}
	return model, ""
}

// refuse writes the refusal and logs it.
func (g *Gateway) refuse(w http.ResponseWriter, x *exchange, rf *Refusal) {
	x.code = string(rf.Code)
	g.log.Info("model request refused", x.keyvals("code", rf.Code, "status", rf.Status, "reason", rf.Message)...)
	writeRefusal(w, rf)
}

func writeRefusal(w http.ResponseWriter, rf *Refusal) {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"type": ErrorType, "code": rf.Code, "message": rf.Message,
	}})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(rf.Status)
	_, _ = w.Write(append(b, '\n'))
}

// recoverPanic turns a panic of one request into its 500, or cuts its
// answer when the headers are already out; the gateway serves on.
func (g *Gateway) recoverPanic(w http.ResponseWriter, x *exchange, written *bool) {
	p := recover()
	if p == nil {
		return
	}
	if err, ok := p.(error); ok && errors.Is(err, http.ErrAbortHandler) {
		panic(p) // a cut answer: net/http ends the connection quietly
	}
	g.log.Error(fmt.Errorf("panic: %v", p), "model request failed: a panic was recovered", x.keyvals("stack", string(debug.Stack()))...)
	if *written {
		x.code = codeForwarded
		panic(http.ErrAbortHandler)
	}
	g.refuse(w, x, &Refusal{Status: http.StatusInternalServerError, Code: CodeInternal,
		Message: "the model gateway failed on this request; it was not forwarded"})
}

// forward sends the admitted request to the harness's upstream and streams
// the answer back.
func (g *Gateway) forward(w http.ResponseWriter, r *http.Request, x *exchange, c modelcred.Claims, body []byte, written *bool) {
	up, err := g.upstreams.Upstream(r.Context(), c.Harness)
	if err != nil {
		g.log.Info("the harness's upstream could not be resolved", x.keyvals("error", err.Error())...)
		g.refuse(w, x, &Refusal{Status: http.StatusBadGateway, Code: CodeUpstreamUnavailable,
			Message: fmt.Sprintf("the model gateway has no upstream for harness %s/%s; its log says why", c.Harness.Namespace, c.Harness.Name)})
		return
	}
	target, problem := upstreamURL(up, r.URL.RawQuery)
	bearer := up.Credential
	if c.Profile != nil {
		bearer = string(c.Profile.Key)
	}
	if problem == "" && bearer == "" {
		problem = "it has no credential"
	}
	if problem != "" {
		g.log.Info("the harness's upstream is misconfigured", x.keyvals("problem", problem)...)
		g.refuse(w, x, &Refusal{Status: http.StatusBadGateway, Code: CodeUpstreamUnavailable,
			Message: fmt.Sprintf("the upstream of harness %s/%s is misconfigured: %s", c.Harness.Namespace, c.Harness.Name, problem)})
		return
	}

	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	// When the request was written upstream: the transport's goroutine
	// reads the body's last byte just before it writes it. (A
	// WroteRequest trace hook runs after the write and may run after
	// RoundTrip has returned: it missed up to a fifth of the requests.)
	sent := &sentBody{r: bytes.NewReader(body), start: x.start}
	out, err := http.NewRequestWithContext(ctx, http.MethodPost, target, sent)
	if err != nil {
		g.refuse(w, x, &Refusal{Status: http.StatusBadGateway, Code: CodeUpstreamUnavailable,
			Message: fmt.Sprintf("the upstream of harness %s/%s is misconfigured: its URL is not valid", c.Harness.Namespace, c.Harness.Name)})
		return
	}
	out.ContentLength = int64(len(body))
	// No GetBody: the transport cannot rewind the body, so it never
	// re-sends a POST the upstream may have acted on.
	out.GetBody = nil
	out.Header = upstreamHeader(r.Header, up, bearer)

	// The header limit: RoundTrip returns with the headers or an error.
	// Whichever comes first, the timer or RoundTrip, decides.
	var race sync.Mutex
	headersIn, timedOut := false, false
	timer := time.AfterFunc(g.limits.UpstreamHeaderTimeout, func() {
		race.Lock()
		defer race.Unlock()
		if !headersIn {
			timedOut = true
			cancel(errHeaderTimeout)
		}
	})
	resp, err := g.transport.RoundTrip(out)
	race.Lock()
	headersIn = true
	late := timedOut
	race.Unlock()
	timer.Stop()
	if err == nil && late {
		_ = resp.Body.Close()
		err = context.Cause(ctx)
	}
	if err != nil {
		g.upstreamFailed(w, r, x, c, err, late)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	x.code = codeForwarded
	g.metrics.upstreamResponses.WithLabelValues(statusClass(resp.StatusCode)).Inc()
	roundTripped := time.Now()

	copyHeader(w.Header(), resp.Header)
	out2 := &deadlineWriter{w: w, rc: http.NewResponseController(w), wait: g.limits.WriteTimeout}
	w.WriteHeader(resp.StatusCode)
	*written = true
	if err := out2.flush(); err != nil {
		g.cut(x, cutClientWrite, "the client did not take the answer's headers within the write limit", err)
	}
	if admitted := time.Duration(sent.read.Load()); admitted > 0 {
		g.metrics.added.Observe((admitted + time.Since(roundTripped)).Seconds())
	}
	g.log.V(1).Info("model request forwarded", x.keyvals("status", resp.StatusCode)...)
	g.stream(ctx, x, resp.Body, out2, cancel)
}

// sentBody is a request body that records when its last byte was read,
// after start: before that byte is written, so before any answer to it.
type sentBody struct {
	r     *bytes.Reader
	start time.Time
	read  atomic.Int64
}

func (b *sentBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if b.r.Len() == 0 && b.read.Load() == 0 {
		b.read.Store(int64(max(time.Since(b.start), 1)))
	}
	return n, err
}

// upstreamFailed answers a request whose upstream sent no headers.
func (g *Gateway) upstreamFailed(w http.ResponseWriter, r *http.Request, x *exchange, c modelcred.Claims, err error, timedOut bool) {
	harness := c.Harness.Namespace + "/" + c.Harness.Name
	var refused *netguard.RefusedError
	switch {
	case timedOut:
		g.refuse(w, x, &Refusal{Status: http.StatusGatewayTimeout, Code: CodeUpstreamTimeout,
			Message: fmt.Sprintf("the upstream of harness %s sent no response headers within the upstream response header limit of %s", harness, g.limits.UpstreamHeaderTimeout)})
	case r.Context().Err() != nil:
		x.code = codeForwarded
		g.log.Info("model request ended: the client went away before the upstream answered", x.keyvals()...)
	case errors.As(err, &refused):
		g.log.Info("the upstream's address is refused by the dial rules", x.keyvals("error", unwrapURL(err))...)
		g.refuse(w, x, &Refusal{Status: http.StatusBadGateway, Code: CodeUpstreamUnavailable,
			Message: fmt.Sprintf("the upstream of harness %s resolves to an address the gateway's dial rules refuse (rule %s)", harness, refused.Rule)})
	default:
		g.log.Info("the upstream could not be reached", x.keyvals("error", unwrapURL(err))...)
		g.refuse(w, x, &Refusal{Status: http.StatusBadGateway, Code: CodeUpstreamUnavailable,
			Message: fmt.Sprintf("the upstream of harness %s could not be reached; the gateway's log says why", harness)})
	}
}

// unwrapURL is err without the request's URL, whose query may hold a
// provider's key.
func unwrapURL(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// stream copies the answer's body to the client through one buffer,
// flushing after every read, within the idle, event and write limits. A
// limit that is hit cuts the answer: the connection ends without the
// body's proper end, so the client sees a broken stream, not a short one.
func (g *Gateway) stream(ctx context.Context, x *exchange, body io.Reader, out *deadlineWriter, cancel context.CancelCauseFunc) {
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	idle := time.AfterFunc(g.limits.UpstreamIdleTimeout, func() { cancel(errIdle) })
	defer idle.Stop()
	events := eventScanner{max: g.limits.MaxEventBytes}
	for {
		n, err := body.Read(*buf)
		// The idle limit is the upstream's: it does not run while the
		// client takes its time (the write limit's).
		idle.Stop()
		if n > 0 {
			if events.feed((*buf)[:n]) {
				g.cut(x, cutEventTooLarge, fmt.Sprintf("an event of the answer is larger than the event limit of %d bytes", g.limits.MaxEventBytes), nil)
			}
			if err := out.writeFlush((*buf)[:n]); err != nil {
				g.cut(x, cutClientWrite, fmt.Sprintf("a write to the client failed or took longer than the write limit of %s", g.limits.WriteTimeout), err)
			}
		}
		switch {
		case errors.Is(err, io.EOF):
			return
		case err != nil && errors.Is(context.Cause(ctx), errIdle):
			g.cut(x, cutUpstreamIdle, fmt.Sprintf("the upstream sent nothing for the upstream idle limit of %s", g.limits.UpstreamIdleTimeout), nil)
		case err != nil && ctx.Err() != nil:
			g.log.V(1).Info("model request ended: the client went away", x.keyvals()...)
			panic(http.ErrAbortHandler)
		case err != nil:
			g.cut(x, cutUpstreamRead, "the upstream's answer broke off", err)
		}
		idle.Reset(g.limits.UpstreamIdleTimeout)
	}
}

var copyBuffers = sync.Pool{New: func() any { b := make([]byte, copyBufferBytes); return &b }}

// cut logs and counts a cut answer, then cuts it.
func (g *Gateway) cut(x *exchange, limit, why string, err error) {
	g.metrics.streamsCut.WithLabelValues(limit).Inc()
	kv := x.keyvals("limit", limit, "reason", why)
	if err != nil {
		kv = append(kv, "error", err.Error())
	}
	g.log.Info("model answer cut", kv...)
	panic(http.ErrAbortHandler)
}

// upstreamURL is the upstream's base URL joined with the request's path
// after /v1, with the client's query and then the upstream's parameters
// (which win); or why it cannot be used.
func upstreamURL(up Upstream, clientQuery string) (string, string) {
	base := up.BaseURL
	switch {
	case base == nil:
		return "", "it has no base URL"
	case base.Scheme != "https" && base.Scheme != "http":
		return "", "its base URL is not http or https"
	case base.Host == "":
		return "", "its base URL has no host"
	case base.User != nil:
		return "", "its base URL holds user information"
	}
	u := *base
	u.Path = strings.TrimSuffix(base.Path, "/") + upstreamSuffix
	u.RawPath = ""
	u.Fragment, u.RawFragment = "", ""
	q, _ := url.ParseQuery(clientQuery)
	for k, v := range base.Query() {
		q[k] = v
	}
	for k, v := range up.QueryParams {
		q[k] = v
	}
	u.RawQuery = q.Encode()
	return u.String(), ""
}

// hopByHop are the headers of one connection, never forwarded (RFC 9110,
// section 7.6.1), with those a Connection header names.
var hopByHop = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// dropHopByHop removes the hop-by-hop headers from h.
func dropHopByHop(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopByHop {
		h.Del(name)
	}
}

// upstreamHeader is Codex's headers minus Authorization, Host, the
// hop-by-hop ones, Accept-Encoding (the answer must come as plain bytes
// for the event limit) and Expect (the gateway holds the whole body); plus
// the upstream's headers, and its bearer credential.
func upstreamHeader(in http.Header, up Upstream, bearer string) http.Header {
	h := in.Clone()
	dropHopByHop(h)
	for _, name := range []string{"Authorization", "Host", "Accept-Encoding", "Expect", "Content-Length"} {
		h.Del(name)
	}
	for k, v := range up.Headers {
		h.Set(k, v)
	}
	h.Set("Authorization", "Bearer "+bearer)
	return h
}

// copyHeader copies the upstream's answer headers minus the hop-by-hop
// ones.
func copyHeader(dst, src http.Header) {
	h := src.Clone()
	dropHopByHop(h)
	for k, v := range h {
		dst[k] = v
	}
}

// deadlineWriter writes the answer with a deadline on every write: a
// client that stops reading fills the connection's buffers, and the next
// write fails once the deadline passes.
type deadlineWriter struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	wait time.Duration
}

func (d *deadlineWriter) arm() error {
	if err := d.rc.SetWriteDeadline(time.Now().Add(d.wait)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

func (d *deadlineWriter) flush() error {
	if err := d.arm(); err != nil {
		return err
	}
	if err := d.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

// writeFlush writes p and sends it, both within one deadline.
func (d *deadlineWriter) writeFlush(p []byte) error {
	if err := d.arm(); err != nil {
		return err
	}
	if _, err := d.w.Write(p); err != nil {
		return err
	}
	if err := d.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}
