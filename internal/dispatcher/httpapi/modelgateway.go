package httpapi

import (
	"errors"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/modelcred"
)

// The model gateway's holds endpoint (wire.ModelGatewayHoldsPath): the
// gateway asks, on every model request, whether the grant a credential was
// sealed under is still the current grant of its lease key
// (docs/design/model-gateway.md, 5.2). The answer comes from the store as
// it is now: nothing is cached, so a credential replayed right after its
// turn ended is refused.
//
// Only one identity may ask: Config.ModelGatewayUser, authenticated like
// every caller (a TokenReview, cached by token). No SubjectAccessReview is
// asked: the identity is the authorization, and the answer says only
// whether a lease key the caller already knows is held. A one-step
// Authorizer (one without a TokenReview of its own) authenticates no user,
// so with it every caller is refused.

// holdsMaxBody bounds a holds request: a lease key is at most about 200
// bytes.
const holdsMaxBody = 4 << 10

// modelGatewayUserFlag is the dispatcher's flag that sets
// Config.ModelGatewayUser; refusals name it.
const modelGatewayUserFlag = "--model-gateway-user"

var holdsAnswers = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "harness_dispatcher_model_gateway_holds_total",
	Help: "The model gateway's holds questions the dispatcher answered, by answer: true (the grant is current), false, or error (the store could not answer; the gateway refuses the model request).",
}, []string{"answer"})

func init() { metrics.Registry.MustRegister(holdsAnswers) }

// holds answers POST wire.ModelGatewayHoldsPath.
func (h *Handler) holds(w http.ResponseWriter, r *http.Request) {
	if !h.modelGatewayCaller(w, r) {
		return
	}
	var req wire.HoldsRequest
	if err := wire.DecodeStrict(http.MaxBytesReader(w, r.Body, holdsMaxBody), &req); err != nil {
		h.writeError(w, err, h.retryAfter)
		return
	}
	if err := modelcred.CheckLease(req.Lease); err != nil {
		h.writeError(w, wire.Errorf(wire.CodeBadRequest, "", "invalid request body: %v", err), h.retryAfter)
		return
	}
	if req.Token <= 0 {
		h.writeError(w, wire.Errorf(wire.CodeBadRequest, "",
			"invalid request body: token: must be the grant's fencing token, a positive number, not %d", req.Token), h.retryAfter)
		return
	}
	held, err := h.store.Holds(r.Context(), req.Lease, req.Token)
	if err != nil {
		holdsAnswers.WithLabelValues("error").Inc()
		h.log.Error(err, "holds: the store could not answer", "lease", req.Lease)
		h.writeError(w, wire.Errorf(wire.CodeStoreUnavailable, "",
			"the dispatcher's store could not say whether the grant holds; the model gateway refuses the request (retry)"), h.retryAfter)
		return
	}
	if held {
		holdsAnswers.WithLabelValues("true").Inc()
	} else {
		holdsAnswers.WithLabelValues("false").Inc()
	}
	writeJSON(w, http.StatusOK, wire.HoldsAnswer{Holds: held})
}

// modelGatewayCaller answers 401/403/429/503 itself and returns false,
// unless the request's bearer token authenticates as the model gateway's
// user.
func (h *Handler) modelGatewayCaller(w http.ResponseWriter, r *http.Request) bool {
	token := bearerToken(r)
	if token == "" {
		h.writeError(w, wire.Errorf(wire.CodeUnauthorized, "",
			"a bearer token is required (Authorization: Bearer <the model gateway's ServiceAccount token>)"), h.retryAfter)
		return false
	}
	if h.gatewayUser == "" {
		// No identity may ask: not worth a TokenReview.
		h.writeError(w, wire.Errorf(wire.CodeForbidden, "",
			"the model gateway's holds endpoint is off: the dispatcher's %s is not set, so no caller may ask it", modelGatewayUserFlag), h.retryAfter)
		return false
	}
	if _, oneStep := h.auth.(wholeAuthorizer); oneStep {
		h.writeError(w, wire.Errorf(wire.CodeForbidden, "",
			"the model gateway's holds endpoint needs an Authorizer that authenticates users (TokenReview); this one does not, so no caller may ask it"), h.retryAfter)
		return false
	}
	id, err := h.identity(r, token)
	switch {
	case errors.Is(err, errRateLimited):
		authRateLimited.Inc()
		h.writeError(w, wire.Errorf(wire.CodeRateLimited, "",
			"too many requests with tokens the dispatcher has not verified yet from this address; retry later"), h.limiter.retryAfter())
		return false
	case err != nil:
		h.log.Error(err, "holds: authentication failed")
		h.writeError(w, wire.Errorf(wire.CodeAuthUnavailable, "",
			"the dispatcher could not check the token with the Kubernetes API server; retry"), h.retryAfter)
		return false
	case !id.Authenticated:
		h.log.V(1).Info("holds: bearer token not accepted", "source", sourceHost(r), "reason", id.Reason)
		msg := "the bearer token was not accepted by the Kubernetes API server (TokenReview)"
		if id.Refusal != "" {
			msg = id.Refusal
		}
		h.writeError(w, wire.Errorf(wire.CodeUnauthorized, "", "%s", msg), h.retryAfter)
		return false
	case id.User != h.gatewayUser:
		h.writeError(w, wire.Errorf(wire.CodeForbidden, "",
			"user %q may not ask the model gateway's holds endpoint: only the model gateway's ServiceAccount (the dispatcher's %s) may", id.User, modelGatewayUserFlag), h.retryAfter)
		return false
	}
	return true
}
