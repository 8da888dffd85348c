package httpapi

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics of the API's authentication, on controller-runtime's registry
// (the dispatcher's /metrics). No label carries a token, a user or an
// address.
var (
	tokenReviewsSent = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "harness_dispatcher_tokenreviews_total",
		Help: "TokenReviews the dispatcher sent to the Kubernetes API server.",
	})
	authCacheLookups = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "harness_dispatcher_auth_cache_lookups_total",
		Help: "Verdict cache lookups of bearer tokens, by result: hit (a valid token's verdict), rejected (a token the API server refused, remembered briefly) or miss.",
	}, []string{"result"})
	authRateLimited = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "harness_dispatcher_auth_rate_limited_total",
		Help: "Requests refused with 429 RateLimited: their token was not cached as valid and their source address exceeded its rate.",
	})
	subjectAccessReviewsSent = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "harness_dispatcher_subjectaccessreviews_total",
		Help: "SubjectAccessReviews the dispatcher sent to the Kubernetes API server for callers.",
	})
	readyzSent = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "harness_dispatcher_apiserver_readyz_checks_total",
		Help: "Requests to the API server's /readyz after a refusal that granted nothing (at most one per second).",
	})
	authPrincipalLimited = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "harness_dispatcher_auth_principal_limited_total",
		Help: "Requests refused with 429 RateLimited because their user had spent its budget of refused reviews.",
	})
)

func init() {
	metrics.Registry.MustRegister(tokenReviewsSent, authCacheLookups, authRateLimited,
		subjectAccessReviewsSent, readyzSent, authPrincipalLimited)
}
