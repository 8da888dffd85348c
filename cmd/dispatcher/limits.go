package main

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/openclaw/harness-operator/internal/dispatcher/httpapi"
)

// Defaults of the API server's limits (--help shows them).
const (
	defaultIdleTimeout    = 120 * time.Second
	defaultReadTimeout    = 30 * time.Second
	defaultMaxConnections = 1024
	// maxHeaderBytes bounds a request's headers: a bearer token is a few
	// KiB at most.
	maxHeaderBytes = 64 << 10
)

// limitOptions bound what a client, authenticated or not, can hold of the
// API server: connections, time, and the TokenReviews its tokens cost.
type limitOptions struct {
	idleTimeout     time.Duration
	readTimeout     time.Duration
	maxConnections  int
	requireAudience bool
	authCacheTTL    time.Duration
	authNegativeTTL time.Duration
	unverifiedRate  float64
	unverifiedBurst int
	refusedRate     float64
	refusedBurst    int
	maxTokenLife    time.Duration
}

func bindLimitFlags(fs *flag.FlagSet, o *limitOptions) {
	fs.DurationVar(&o.idleTimeout, "idle-timeout", defaultIdleTimeout, "Close a keep-alive connection of the API that waits this long for its next request.")
	fs.DurationVar(&o.readTimeout, "read-timeout", defaultReadTimeout, "Time a client has to send a whole request, headers (at most 10s of it) and body; the answer, a turn stream included, is not limited by it.")
	fs.IntVar(&o.maxConnections, "max-connections", defaultMaxConnections, "Most connections the API holds open at once; a connection over it is closed as soon as it is accepted.")
	fs.BoolVar(&o.requireAudience, "require-token-audience", false, "Accept only bearer tokens issued for --token-audience, not tokens for the API server's own audiences (needs --token-audience).")
	fs.DurationVar(&o.maxTokenLife, "max-token-lifetime", httpapi.DefaultMaxTokenLifetime, "Refuse (401) a token for --token-audience issued for longer than this (exp − iat of its claims), or whose lifetime cannot be read. A projected token volume lives 1h unless its expirationSeconds says more; kubectl harness requests 10m. 0: no bound.")
	fs.DurationVar(&o.authCacheTTL, "auth-cache-ttl", httpapi.DefaultAuthTTL, "How long a token's authentication (one TokenReview) and each of its verdicts (per route and session: one SubjectAccessReview) are cached.")
	fs.DurationVar(&o.authNegativeTTL, "auth-negative-cache-ttl", httpapi.DefaultNegativeAuthTTL, "How long a token the API server rejected is remembered as rejected (at most --auth-cache-ttl).")
	fs.Float64Var(&o.unverifiedRate, "auth-unverified-rate", httpapi.DefaultUnverifiedRate, "Requests per second and source address whose token is not cached as valid (each costs a TokenReview); over it: 429 RateLimited. Requests with a cached valid token are never limited. Negative: no limit.")
	fs.IntVar(&o.unverifiedBurst, "auth-unverified-burst", httpapi.DefaultUnverifiedBurst, "Burst of --auth-unverified-rate.")
	fs.Float64Var(&o.refusedRate, "auth-refused-rate", httpapi.DefaultRefusedRate, "Refused SubjectAccessReviews per second and user: a user whose requests the API server refused more often gets 429 RateLimited for requests whose verdict is not cached, instead of another review. Granted reviews take nothing from it. Negative: no limit.")
	fs.IntVar(&o.refusedBurst, "auth-refused-burst", httpapi.DefaultRefusedBurst, "Burst of --auth-refused-rate.")
}

// withDefaults fills what options built in code (tests) left zero.
func (o limitOptions) withDefaults() limitOptions {
	if o.idleTimeout == 0 {
		o.idleTimeout = defaultIdleTimeout
	}
	if o.readTimeout == 0 {
		o.readTimeout = defaultReadTimeout
	}
	if o.maxConnections == 0 {
		o.maxConnections = defaultMaxConnections
	}
	return o
}

func (o limitOptions) validate(tokenAudience string) error {
	switch {
	case o.idleTimeout < 0, o.readTimeout < 0:
		return fmt.Errorf("--idle-timeout and --read-timeout must not be negative, got %s and %s", o.idleTimeout, o.readTimeout)
	case o.maxConnections < 0:
		return fmt.Errorf("--max-connections must be at least 1, got %d", o.maxConnections)
	case o.maxTokenLife < 0:
		return fmt.Errorf("--max-token-lifetime must not be negative (0 sets no bound), got %s", o.maxTokenLife)
	case o.unverifiedBurst < 0, o.refusedBurst < 0:
		return fmt.Errorf("--auth-unverified-burst and --auth-refused-burst must not be negative, got %d and %d", o.unverifiedBurst, o.refusedBurst)
	case o.requireAudience && tokenAudience == "":
		return errors.New("--require-token-audience needs --token-audience")
	}
	return nil
}

var connectionsRefused = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "harness_dispatcher_api_connections_refused_total",
	Help: "Connections to the API closed at once because --max-connections were open.",
})

func init() { metrics.Registry.MustRegister(connectionsRefused) }
