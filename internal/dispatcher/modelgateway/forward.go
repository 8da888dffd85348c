package modelgateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openclaw/harness-operator/internal/dispatcher/modelcred"
	"github.com/openclaw/harness-operator/internal/platform/netguard"
)

// Forwarding an admitted request to its upstream: the request Codex sent,
// with the upstream's credential, and what goes wrong on the way.

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
