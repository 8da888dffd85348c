package httpapi

import (
	"cmp"
	"errors"
	"net/http"
	"strings"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/engine"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/dispatcher/turntoken"
)

// Defaults of Config.
const (
	// DefaultMaxBodyBytes bounds request bodies.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultRetryAfter is the Retry-After of 503 answers.
	DefaultRetryAfter = 1 * time.Second
)

// Config configures a Handler.
type Config struct {
	// Engine runs the turns (required).
	Engine *engine.Engine
	// Store is the engine's store (required): streams, reconnects and
	// reads come from it.
	Store store.Store
	// Sessions reads AgentSessions (required; in the dispatcher the informer
	// cache), for the 404 of the reads.
	Sessions client.Reader
	// Authorizer checks each request's bearer token (required).
	Authorizer Authorizer
	// MaxBodyBytes bounds request bodies (DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// AuthCacheTTL is how long a verdict is cached (DefaultAuthTTL); negative
	// disables the cache.
	AuthCacheTTL time.Duration
	// NegativeAuthCacheTTL is how long a token the API server rejected is
	// remembered as rejected (DefaultNegativeAuthTTL; at most AuthCacheTTL).
	NegativeAuthCacheTTL time.Duration
	// UnverifiedRate and UnverifiedBurst limit, per source address, the
	// requests whose token is not cached as valid (DefaultUnverifiedRate
	// per second, DefaultUnverifiedBurst); a negative rate disables the
	// limit.
	UnverifiedRate  float64
	UnverifiedBurst int
	// RefusedRate and RefusedBurst limit, per principal, the
	// SubjectAccessReviews that refuse it (DefaultRefusedRate per second,
	// DefaultRefusedBurst); over them its requests that need a review are
	// answered 429. A negative rate disables the limit.
	RefusedRate  float64
	RefusedBurst int
	// RetryAfter is the Retry-After of 503 answers (DefaultRetryAfter).
	RetryAfter time.Duration
	// TurnTokens signs and checks turn tokens: in the dispatcher the key
	// every replica loads from one Secret (turntoken.Load), so any replica
	// accepts any replica's tokens and a restart keeps them. Nil: a random
	// key of this Handler alone (tests and local runs; its tokens die with
	// the process).
	TurnTokens *turntoken.Key
	// Logger receives the handler's records; never a token.
	Logger logr.Logger
	// StreamWriteTimeout bounds each write of a turn stream or a transcript
	// to the client (DefaultStreamWriteTimeout): a client that stops reading
	// is cut off then, and the request's resources are freed.
	StreamWriteTimeout time.Duration
	// ModelGatewayUser is the one user that may ask the model gateway's
	// holds endpoint (modelgateway.go): the gateway's ServiceAccount,
	// "system:serviceaccount:<namespace>:<name>". Empty: nobody may.
	ModelGatewayUser string
}

// Handler is the dispatcher's HTTP API (see the package documentation).
type Handler struct {
	eng        *engine.Engine
	store      store.Store
	sessions   client.Reader
	auth       identityAuthorizer
	maxBody    int64
	retryAfter time.Duration
	tokens     *turntoken.Key
	cache      *authCache
	limiter    *sourceLimiter
	principals *principalLimiter
	// reviews joins concurrent first TokenReviews of one token (identity).
	reviews   singleflight.Group
	log       logr.Logger
	mux       *http.ServeMux
	writeWait time.Duration // Config.StreamWriteTimeout
	// gatewayUser is Config.ModelGatewayUser.
	gatewayUser string
}

// NewHandler returns the API handler.
func NewHandler(cfg Config) (*Handler, error) {
	if cfg.Engine == nil || cfg.Store == nil || cfg.Sessions == nil || cfg.Authorizer == nil {
		return nil, errors.New("httpapi: Engine, Store, Sessions and Authorizer are required")
	}
	h := &Handler{
		eng: cfg.Engine, store: cfg.Store, sessions: cfg.Sessions,
		maxBody: cfg.MaxBodyBytes, retryAfter: cfg.RetryAfter, tokens: cfg.TurnTokens, log: cfg.Logger,
		gatewayUser: cfg.ModelGatewayUser,
	}
	if h.maxBody <= 0 {
		h.maxBody = DefaultMaxBodyBytes
	}
	if h.retryAfter <= 0 {
		h.retryAfter = DefaultRetryAfter
	}
	h.writeWait = cfg.StreamWriteTimeout
	if h.writeWait <= 0 {
		h.writeWait = DefaultStreamWriteTimeout
	}
	ttl := cfg.AuthCacheTTL
	if ttl == 0 {
		ttl = DefaultAuthTTL
	}
	negTTL := cfg.NegativeAuthCacheTTL
	if negTTL == 0 {
		negTTL = DefaultNegativeAuthTTL
	}
	h.cache = newAuthCache(ttl, negTTL, time.Now)
	perSecond, burst := cfg.UnverifiedRate, cfg.UnverifiedBurst
	if perSecond == 0 {
		perSecond = DefaultUnverifiedRate
	}
	if burst <= 0 {
		burst = DefaultUnverifiedBurst
	}
	h.limiter = newSourceLimiter(perSecond, burst)
	h.principals = newPrincipalLimiter(cmp.Or(cfg.RefusedRate, DefaultRefusedRate), cmp.Or(max(cfg.RefusedBurst, 0), DefaultRefusedBurst))
	if two, ok := cfg.Authorizer.(identityAuthorizer); ok {
		h.auth = two
	} else {
		h.auth = wholeAuthorizer{cfg.Authorizer}
	}
	if h.tokens == nil {
		var err error
		if h.tokens, err = processTurnTokens(); err != nil {
			return nil, err
		}
	}
	// The routes are the wire contract's (the plugin's types are generated from it).
	base := wire.SessionPath
	m := http.NewServeMux()
	m.HandleFunc("POST "+base+wire.RouteDecide, h.decide)
	m.HandleFunc("POST "+base+wire.RouteTurns, h.turn)
	m.HandleFunc("GET "+base+wire.RouteTurn, h.getTurn)
	m.HandleFunc("POST "+base+wire.RouteToolResults, h.toolResult)
	m.HandleFunc("POST "+base+wire.RouteInterrupt, h.interrupt)
	m.HandleFunc("POST "+base+wire.RouteApprovals, h.approval)
	m.HandleFunc("POST "+base+wire.RouteUserInput, h.userInput)
	m.HandleFunc("POST "+base+wire.RouteFinalize, h.finalize)
	m.HandleFunc("POST "+base+wire.RouteCompletions, h.completion)
	m.HandleFunc("GET "+base+wire.RouteTranscript, h.transcript)
	m.HandleFunc("GET "+base+wire.RouteMCPInventory, h.mcpInventory)
	// The model gateway's question, outside every session's path.
	m.HandleFunc("POST "+wire.ModelGatewayHoldsPath, h.holds)
	m.HandleFunc("/", h.notFound)
	h.mux = m
	return h, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// notFound answers what no route took: 405 when another method has a route
// there, else 404.
func (h *Handler) notFound(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		if m == r.Method {
			continue
		}
		r2 := r.Clone(r.Context())
		r2.Method = m
		if _, p := h.mux.Handler(r2); p != "" && p != "/" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		h.writeError(w, wire.Errorf(wire.CodeMethodNotAllowed, "",
			"method %s is not allowed on %s; use %s", r.Method, r.URL.Path, strings.Join(allow, " or ")), h.retryAfter)
		return
	}
	h.writeError(w, wire.Errorf(wire.CodeNotFound, "", "no such endpoint: %s %s", r.Method, r.URL.Path), h.retryAfter)
}

// session reads the request's AgentSession; a missing one is answered 404
// SessionNotFound.
func (h *Handler) session(w http.ResponseWriter, r *http.Request) (*v1alpha1.AgentSession, bool) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	s := &v1alpha1.AgentSession{}
	if err := h.sessions.Get(r.Context(), client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		if client.IgnoreNotFound(err) == nil {
			err = wire.Errorf(wire.CodeSessionNotFound, "", "AgentSession %s/%s not found", ns, name)
		}
		h.writeError(w, err, h.retryAfter)
		return nil, false
	}
	return s, true
}

// sessionKey is the journal key (engine.SessionKey) of the request's
// AgentSession: runs, tool calls and turn tokens belong to the object that
// exists now, never to a deleted one of the same name.
func (h *Handler) sessionKey(w http.ResponseWriter, r *http.Request) (string, bool) {
	s, ok := h.session(w, r)
	if !ok {
		return "", false
	}
	return engine.SessionKey(s), true
}

func attrs(r *http.Request, verb string) Attributes {
	return Attributes{Verb: verb, Namespace: r.PathValue("namespace"), Name: r.PathValue("name"), Subresource: SubresourceTurns}
}
