package modelgateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
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
