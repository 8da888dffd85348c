package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/openclaw/harness-operator/internal/dispatchapi"
)

// Defaults of the API server's limits (--help shows them).
const (
	defaultIdleTimeout     = 120 * time.Second
	defaultBodyReadTimeout = 30 * time.Second
	defaultMaxConnections  = 1024
	// maxHeaderBytes bounds a request's headers: a bearer token is a few
	// KiB at most.
	maxHeaderBytes = 64 << 10
)

// limitOptions bound what a client, authenticated or not, can hold of the
// API server: connections, time, and the TokenReviews its tokens cost.
type limitOptions struct {
	idleTimeout     time.Duration
	bodyReadTimeout time.Duration
	maxConnections  int
	requireAudience bool
	authCacheTTL    time.Duration
	authNegativeTTL time.Duration
	unverifiedRate  float64
	unverifiedBurst int
}

func bindLimitFlags(fs *flag.FlagSet, o *limitOptions) {
	fs.DurationVar(&o.idleTimeout, "idle-timeout", defaultIdleTimeout, "Close a keep-alive connection of the API that waits this long for its next request.")
	fs.DurationVar(&o.bodyReadTimeout, "body-read-timeout", defaultBodyReadTimeout, "Time a client has to send a request's body (the headers have 10s); the answer, a turn stream included, is not limited by it.")
	fs.IntVar(&o.maxConnections, "max-connections", defaultMaxConnections, "Most connections the API holds open at once; a connection over it is closed as soon as it is accepted.")
	fs.BoolVar(&o.requireAudience, "require-token-audience", false, "Accept only bearer tokens issued for --token-audience, not tokens for the API server's own audiences (needs --token-audience).")
	fs.DurationVar(&o.authCacheTTL, "auth-cache-ttl", dispatchapi.DefaultAuthTTL, "How long the verdict of a valid token is cached (per route and session).")
	fs.DurationVar(&o.authNegativeTTL, "auth-negative-cache-ttl", dispatchapi.DefaultNegativeAuthTTL, "How long a token the API server rejected is remembered as rejected (at most --auth-cache-ttl).")
	fs.Float64Var(&o.unverifiedRate, "auth-unverified-rate", dispatchapi.DefaultUnverifiedRate, "Requests per second and source address whose token is not cached as valid (each costs a TokenReview); over it: 429 RateLimited. Requests with a cached valid token are never limited. Negative: no limit.")
	fs.IntVar(&o.unverifiedBurst, "auth-unverified-burst", dispatchapi.DefaultUnverifiedBurst, "Burst of --auth-unverified-rate.")
}

// withDefaults fills what options built in code (tests) left zero.
func (o limitOptions) withDefaults() limitOptions {
	if o.idleTimeout == 0 {
		o.idleTimeout = defaultIdleTimeout
	}
	if o.bodyReadTimeout == 0 {
		o.bodyReadTimeout = defaultBodyReadTimeout
	}
	if o.maxConnections == 0 {
		o.maxConnections = defaultMaxConnections
	}
	return o
}

func (o limitOptions) validate(tokenAudience string) error {
	switch {
	case o.idleTimeout < 0, o.bodyReadTimeout < 0:
		return fmt.Errorf("--idle-timeout and --body-read-timeout must not be negative, got %s and %s", o.idleTimeout, o.bodyReadTimeout)
	case o.maxConnections < 0:
		return fmt.Errorf("--max-connections must be at least 1, got %d", o.maxConnections)
	case o.requireAudience && tokenAudience == "":
		return errors.New("--require-token-audience needs --token-audience")
	}
	return nil
}

// bodyDeadline gives a client bodyTimeout to send a request's body. The
// deadline is the connection's read deadline, so it is lifted as soon as
// the body is read (or closed): the same deadline would otherwise end
// net/http's background read that watches the connection while the
// response streams, and with it the request's context and the turn stream.
// http.Server.ReadTimeout cannot do this: it covers the whole request.
// A request without a body is left alone (its background read starts
// before the handler runs).
func bodyDeadline(next http.Handler, bodyTimeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		if rc.SetReadDeadline(time.Now().Add(bodyTimeout)) == nil {
			r.Body = &deadlineBody{body: r.Body, lift: func() { _ = rc.SetReadDeadline(time.Time{}) }}
		}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody lifts the read deadline once its body is read to the end,
// or once it is closed (net/http then has read or discarded the rest under
// the deadline). A read that fails (the deadline passed) lifts nothing: the
// server's discard of the rest must fail too, and the connection close.
type deadlineBody struct {
	body interface {
		Read([]byte) (int, error)
		Close() error
	}
	lift func()
	once sync.Once
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if errors.Is(err, io.EOF) {
		b.once.Do(b.lift)
	}
	return n, err
}

func (b *deadlineBody) Close() error {
	err := b.body.Close()
	b.once.Do(b.lift)
	return err
}

var connectionsRefused = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "harness_dispatcher_api_connections_refused_total",
	Help: "Connections to the API closed at once because --max-connections were open.",
})

func init() { metrics.Registry.MustRegister(connectionsRefused) }

// capListener closes a connection accepted while max are open, at once:
// a flood of idle connections cannot hold the API's file descriptors and
// memory, and its extra connections see their end rather than wait unseen
// in the kernel's backlog (as with netutil.LimitListener).
type capListener struct {
	net.Listener
	max  int64
	open atomic.Int64
}

func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) > l.max {
			l.open.Add(-1)
			connectionsRefused.Inc()
			_ = c.Close()
			continue
		}
		return &cappedConn{Conn: c, release: func() { l.open.Add(-1) }}, nil
	}
}

// cappedConn gives its place back once, at its first Close.
type cappedConn struct {
	net.Conn
	release func()
	once    sync.Once
}

func (c *cappedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}
