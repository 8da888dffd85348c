package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// The resource a caller needs permission on (docs/dispatcher-api.md,
// "Authorization").
const (
	APIGroup         = "harness.openclaw.dev"
	Resource         = "agentsessions"
	SubresourceTurns = "turns"
	VerbCreate       = "create"
	VerbGet          = "get"
	DefaultAuthTTL   = 10 * time.Second
)

// Attributes is what a request asks to do: verb on
// agentsessions/<Subresource> named Name in Namespace.
type Attributes struct {
	Verb        string
	Namespace   string
	Name        string
	Subresource string
}

// Verdict is an Authorizer's answer for a token and attributes.
type Verdict struct {
	// Authenticated is false for a token the API server does not accept.
	Authenticated bool
	// User is the authenticated user name (for logs and messages).
	User string
	// UID and Groups complete the identity: a run records who asked for it.
	UID    string
	Groups []string
	// Allowed says whether User may do what the attributes ask.
	Allowed bool
	// Reason explains a denial (or a failed authentication). The reason of
	// a failed authentication is the API server's and is only logged: a
	// caller without a valid token learns nothing about the API server.
	Reason string
	// Refusal is the dispatcher's own reason to refuse a token the API
	// server accepted (Identity.Refusal), which the 401 says.
	Refusal string
}

// Identity is whom a token authenticates as: a TokenReview's answer.
type Identity struct {
	// Authenticated is false for a token the API server does not accept.
	Authenticated bool
	User, UID     string
	Groups        []string
	Extra         map[string][]string
	// Reason explains a failed authentication; it is only logged.
	Reason string
	// Refusal is the dispatcher's own reason to refuse a token the API
	// server accepted (its lifetime): safe to tell the caller, it never
	// quotes the token.
	Refusal string
	// Expires is the token's expiry (its exp claim); zero when it has none.
	Expires time.Time
}

// digest keys an identity's verdicts: every field a SubjectAccessReview
// is asked with, so two tokens of one principal with different extra
// fields never share a verdict.
func (id Identity) digest() [32]byte {
	h := sha256.New()
	field := func(s string) { _, _ = h.Write([]byte(s)); _, _ = h.Write([]byte{0}) }
	field(id.User)
	field(id.UID)
	for _, g := range id.Groups {
		field("g:" + g)
	}
	for _, k := range slices.Sorted(maps.Keys(id.Extra)) {
		field("x:" + k)
		for _, v := range id.Extra[k] {
			field(v)
		}
	}
	var d [32]byte
	h.Sum(d[:0])
	return d
}

// requester is the verdict's identity as a run records it.
func (v Verdict) requester() store.Requester {
	return store.Requester{User: v.User, UID: v.UID, Groups: v.Groups}
}

// Authorizer authenticates a bearer token and checks its permission. An
// error means no verdict could be had (the API server unreachable): the
// request is answered 503 AuthUnavailable and nothing is cached; so is a
// review the API server could not evaluate (a SubjectAccessReview with an
// evaluation error and no verdict, or a refusal by an API server that is
// not ready yet).
type Authorizer interface {
	Authorize(ctx context.Context, token string, attrs Attributes) (Verdict, error)
}

// identityAuthorizer is an Authorizer in two steps, which the Handler
// caches apart: a token's authentication (one TokenReview per token and
// TTL) and its identity's rights (one SubjectAccessReview per identity,
// attributes and TTL). token is the request's, passed along for
// Authorizers that need it again; KubeAuthorizer does not.
type identityAuthorizer interface {
	authenticate(ctx context.Context, token string) (Identity, error)
	authorizeIdentity(ctx context.Context, token string, id Identity, attrs Attributes) (Verdict, error)
}

// wholeAuthorizer is a one-step Authorizer in two steps: it authenticates
// nothing by itself (the identity is the token's hash) and answers
// everything at the second step.
type wholeAuthorizer struct{ Authorizer }

func (w wholeAuthorizer) authenticate(_ context.Context, token string) (Identity, error) {
	sum := sha256.Sum256([]byte(token))
	return Identity{Authenticated: true, User: "token " + hex.EncodeToString(sum[:])}, nil
}

func (w wholeAuthorizer) authorizeIdentity(ctx context.Context, token string, _ Identity, attrs Attributes) (Verdict, error) {
	return w.Authorize(ctx, token, attrs)
}

// DefaultReadyCheckInterval is how often, at most, KubeAuthorizer asks the
// API server's /readyz (notReady).
const DefaultReadyCheckInterval = time.Second

// KubeAuthorizer authenticates with TokenReview and authorizes with
// SubjectAccessReview.
type KubeAuthorizer struct {
	client kubernetes.Interface
	// audience is accepted besides the API server's own audiences.
	audience string
	// onlyAudience: audience alone is accepted (RequireAudience).
	onlyAudience bool
	// maxLifetime bounds exp − iat of tokens for audience (0: no bound).
	maxLifetime time.Duration
	// readiness is the last answer of /readyz, reused for readyEvery.
	readiness  sync.Mutex
	readyAt    time.Time
	notReadyIs string
	readyEvery time.Duration
	now        func() time.Time
}

// NewKubeAuthorizer returns an Authorizer backed by the API server of c. A
// token is accepted when it is valid for the API server's default audiences
// or, when audience is not empty, for audience (a token requested for the
// dispatcher).
func NewKubeAuthorizer(c kubernetes.Interface, audience string) *KubeAuthorizer {
	return &KubeAuthorizer{client: c, audience: audience, readyEvery: DefaultReadyCheckInterval, now: time.Now}
}

// RequireAudience makes a accept only tokens issued for its audience, not
// the API server's default audiences: a token a user holds for the API
// server (a kubeconfig's, a pod's default service account token) is then
// worth nothing at the dispatcher. It needs a non-empty audience.
func (a *KubeAuthorizer) RequireAudience() error {
	if a.audience == "" {
		return errors.New("httpapi: requiring the token audience needs an audience")
	}
	a.onlyAudience = true
	return nil
}

// SetMaxTokenLifetime makes a refuse the tokens for its audience that were
// issued for longer than d (exp − iat, read from the token's claims once
// the TokenReview accepted it), and those whose lifetime cannot be read (no
// JWT, no exp or iat). 0 sets no bound. Tokens accepted for the API
// server's own audiences are not bound by it.
func (a *KubeAuthorizer) SetMaxTokenLifetime(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("httpapi: the maximum token lifetime must not be negative, got %s", d)
	}
	a.maxLifetime = d
	return nil
}

// Authorize implements Authorizer: a TokenReview, then a
// SubjectAccessReview for the identity it returned.
func (a *KubeAuthorizer) Authorize(ctx context.Context, token string, attrs Attributes) (Verdict, error) {
	id, err := a.authenticate(ctx, token)
	if err != nil || !id.Authenticated {
		return Verdict{Reason: id.Reason}, err
	}
	return a.authorizeIdentity(ctx, token, id, attrs)
}

// authenticate asks the API server whom token authenticates as.
func (a *KubeAuthorizer) authenticate(ctx context.Context, token string) (Identity, error) {
	audiences := [][]string{nil}
	switch {
	case a.onlyAudience:
		audiences = [][]string{{a.audience}}
	case a.audience != "":
		audiences = append(audiences, []string{a.audience})
	}
	var (
		user     authnv1.UserInfo
		ok       bool
		reason   string
		accepted []string // the audiences the accepting review asked for and got
	)
	for _, aud := range audiences {
		tokenReviewsSent.Inc()
		tr, err := a.client.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{
			Spec: authnv1.TokenReviewSpec{Token: token, Audiences: aud},
		}, metav1.CreateOptions{})
		if err != nil {
			return Identity{}, fmt.Errorf("TokenReview: %w", err)
		}
		if tr.Status.Authenticated {
			user, ok, accepted = tr.Status.User, true, append(aud, tr.Status.Audiences...)
			break
		}
		if tr.Status.Error != "" {
			reason = tr.Status.Error
		}
	}
	if !ok {
		return Identity{Reason: reason}, nil
	}
	claims, claimsErr := tokenClaims(token)
	if a.maxLifetime > 0 && a.audience != "" &&
		(slices.Contains(accepted, a.audience) || (claimsErr == nil && slices.Contains(claims.Audience, a.audience))) {
		if why := lifetimeRefusal(claims, claimsErr, a.maxLifetime); why != "" {
			return Identity{Reason: why, Refusal: why}, nil
		}
	}
	id := Identity{Authenticated: true, User: user.Username, UID: user.UID, Groups: user.Groups}
	if claimsErr == nil && claims.ExpiresAt != nil {
		id.Expires = claims.ExpiresAt.Time
	}
	if len(user.Extra) > 0 {
		id.Extra = map[string][]string{}
		for k, v := range user.Extra {
			id.Extra[k] = v
		}
	}
	return id, nil
}

// authorizeIdentity asks the API server whether id may do attrs.
func (a *KubeAuthorizer) authorizeIdentity(ctx context.Context, _ string, id Identity, attrs Attributes) (Verdict, error) {
	extra := map[string]authzv1.ExtraValue{}
	for k, v := range id.Extra {
		extra[k] = authzv1.ExtraValue(v)
	}
	subjectAccessReviewsSent.Inc()
	sar, err := a.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{
		Spec: authzv1.SubjectAccessReviewSpec{
			User: id.User, UID: id.UID, Groups: id.Groups, Extra: extra,
			ResourceAttributes: &authzv1.ResourceAttributes{
				Namespace: attrs.Namespace, Verb: attrs.Verb, Group: APIGroup, Resource: Resource,
				Subresource: attrs.Subresource, Name: attrs.Name,
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return Verdict{}, fmt.Errorf("SubjectAccessReview: %w", err)
	}
	if detail := unevaluated(sar.Status); detail != "" {
		return Verdict{}, &UnevaluatedError{User: id.User, Detail: detail}
	}
	v := Verdict{Authenticated: true, User: id.User, UID: id.UID, Groups: id.Groups, Allowed: sar.Status.Allowed && !sar.Status.Denied}
	if !v.Allowed && !sar.Status.Denied {
		if why := a.notReady(ctx); why != "" {
			return Verdict{}, &UnevaluatedError{User: id.User, Detail: why}
		}
	}
	if !v.Allowed {
		v.Reason = strings.TrimSpace(sar.Status.Reason + " " + sar.Status.EvaluationError)
	}
	return v, nil
}

// notReady says why the API server is not ready, or "" when it is. A
// kube-apiserver that has just started answers before its informers have
// synced; until then RBAC knows no binding, so it grants nothing and, unlike
// a binding to a missing role, says nothing about it (no "RBAC: " reason).
// Such a refusal is no verdict: the fault campaign saw every gateway's turn
// refused 403 for seconds after a restart. /readyz fails until the
// informers have synced and the bootstrap roles exist, and everyone may
// read it (the system:public-info-viewer role), so a refusal that grants
// nothing is checked against it; an explicit deny needs no check. It costs
// at most one request per readyEvery, whatever the number of refusals (its
// answer is reused meanwhile), and none per granted one.
func (a *KubeAuthorizer) notReady(ctx context.Context) string {
	a.readiness.Lock()
	defer a.readiness.Unlock()
	now := a.now()
	if !a.readyAt.IsZero() && now.Sub(a.readyAt) < a.readyEvery {
		return a.notReadyIs
	}
	a.notReadyIs = ""
	readyzSent.Inc()
	if _, err := a.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
		a.notReadyIs = "the API server is not ready (/readyz: " + firstLine(err.Error()) + ")"
	}
	a.readyAt = now
	return a.notReadyIs
}

// firstLine is s up to its first line break, at most 200 bytes.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// unevaluated says why a review that granted nothing is no verdict, or "":
// the authorizers could not evaluate every rule that might grant the right
// — e.g. a kube-apiserver that just restarted, its RBAC roles not loaded
// yet. An evaluation error says so; RBAC says it in the reason instead
// ("RBAC: clusterrole … not found", which the API server prefixes with the
// authorizer's name, "rbac: "), a reason it gives only when rules failed to
// evaluate. Such a refusal is for now (503, retryable) and not cached,
// where a 403 would tell the gateway to give the turn up. An explicit deny
// is a verdict.
func unevaluated(st authzv1.SubjectAccessReviewStatus) string {
	switch {
	case st.Allowed || st.Denied:
		return ""
	case st.EvaluationError != "":
		return st.EvaluationError
	case strings.Contains(st.Reason, rbacErrors):
		return st.Reason
	}
	return ""
}

// rbacErrors begins the reason of the RBAC authorizer's "no opinion" when
// some of the subject's bindings failed to evaluate.
const rbacErrors = "RBAC: "

// UnevaluatedError is a SubjectAccessReview that came back with no
// verdict (see unevaluated): the request is refused for now.
type UnevaluatedError struct {
	User   string
	Detail string // the review's evaluationError, or RBAC's reason
}

func (e *UnevaluatedError) Error() string {
	return fmt.Sprintf("SubjectAccessReview: the API server could not evaluate the rights of %s: %s", e.User, e.Detail)
}

// The proxy header, wire.ProxyAuthorizationHeader, is a second place for the
// same bearer token (see its comment).

// bearerToken returns the request's bearer token, or "": the one in
// Authorization when that header carries one, else the one in
// wire.ProxyAuthorizationHeader. Authorization wins so that a direct caller's
// token is never replaced by a header a proxy in between could have added.
func bearerToken(r *http.Request) string {
	if t := bearerIn(r.Header.Get("Authorization")); t != "" {
		return t
	}
	return bearerIn(r.Header.Get(wire.ProxyAuthorizationHeader))
}

// bearerIn returns the token of a "Bearer <token>" header value, or "".
func bearerIn(h string) string {
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// errRateLimited: the request's source is over its limit of unverified
// tokens.
var errRateLimited = errors.New("rate limited")

// errPrincipalLimited: the request's principal has spent its refusals.
var errPrincipalLimited = errors.New("principal rate limited")

// reviewTimeout bounds a review that requests share (it outlives the
// request that started it).
const reviewTimeout = 30 * time.Second

// check is token's verdict on attrs: from the caches when they hold it,
// else from the API server, in two steps (identity, then rights).
func (h *Handler) check(r *http.Request, token string, attrs Attributes) (Verdict, error) {
	id, err := h.identity(r, token)
	if err != nil {
		return Verdict{}, err
	}
	if !id.Authenticated {
		authCacheLookups.WithLabelValues("rejected").Inc()
		return Verdict{Reason: id.Reason, Refusal: id.Refusal}, nil
	}
	return h.rights(r.Context(), token, id, attrs)
}

// identity is whom token authenticates as. A token not cached costs a
// TokenReview, so it is rate limited per source address first, and
// concurrent requests with the same such token share one limiter check and
// one review (the first request's). So a gateway sending many sessions'
// turns at once with a token the dispatcher has not seen — after a
// dispatcher restart, after the gateway's token rotated — counts once
// against its address's limit, and a token costs one TokenReview per TTL
// whatever sessions it names.
func (h *Handler) identity(r *http.Request, token string) (Identity, error) {
	if id, ok := h.cache.identity(token); ok {
		return id, nil
	}
	sum := sha256.Sum256([]byte(token))
	res, err, _ := h.reviews.Do(hex.EncodeToString(sum[:]), func() (any, error) {
		if id, ok := h.cache.identity(token); ok { // settled by a review that just ended
			return id, nil
		}
		if !h.limiter.allow(sourceHost(r)) {
			return Identity{}, errRateLimited
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), reviewTimeout)
		defer cancel()
		id, err := h.auth.authenticate(ctx, token)
		if err != nil {
			return Identity{}, err
		}
		h.cache.putIdentity(token, id, id.Expires)
		return id, nil
	})
	id, _ := res.(Identity)
	return id, err
}

// rights is id's verdict on attrs. One not cached costs a
// SubjectAccessReview (and, for a refusal, maybe a /readyz): it waits for
// one of the principal's lanes and needs a refusal left in its budget
// (principalLimiter), so a principal without grants cannot make the API
// server review every session name it makes up.
func (h *Handler) rights(ctx context.Context, token string, id Identity, attrs Attributes) (Verdict, error) {
	if v, ok := h.cache.verdict(id, attrs); ok {
		authCacheLookups.WithLabelValues("hit").Inc()
		return v, nil
	}
	authCacheLookups.WithLabelValues("miss").Inc()
	p := h.principals.state(id.User)
	release, err := p.enter(ctx)
	if err != nil {
		return Verdict{}, err
	}
	defer release()
	if v, ok := h.cache.verdict(id, attrs); ok { // answered while this request waited
		return v, nil
	}
	if !h.principals.take(p) {
		return Verdict{}, errPrincipalLimited
	}
	v, err := h.auth.authorizeIdentity(ctx, token, id, attrs)
	var noVerdict *UnevaluatedError
	switch {
	case errors.As(err, &noVerdict): // reviewed all the same: spent
		return Verdict{}, err
	case err != nil: // the API server was not reached
		h.principals.granted(p)
		return Verdict{}, err
	case !v.Authenticated: // a one-step Authorizer's rejection
		h.principals.granted(p)
		h.cache.putIdentity(token, Identity{Reason: v.Reason}, time.Time{})
		return v, nil
	case v.Allowed:
		h.principals.granted(p)
	}
	h.cache.putVerdict(id, attrs, v)
	return v, nil
}

// authorize answers 401/403/429/503 itself and returns false, or returns
// the caller's verdict and true.
//
// A token that is not cached as authenticated costs a TokenReview, so
// those requests (only those) are rate limited per source address first: a
// flood of made-up tokens is refused with 429 RateLimited before it reaches
// the API server, while a gateway whose token is cached is never throttled
// by it. A principal's refusals are limited apart (rights).
func (h *Handler) authorize(w http.ResponseWriter, r *http.Request, attrs Attributes) (Verdict, bool) {
	token := bearerToken(r)
	if token == "" {
		h.writeError(w, wire.Errorf(wire.CodeUnauthorized, "",
			"a bearer token is required (Authorization: Bearer <Kubernetes token>, or %s: Bearer <Kubernetes token> through the API server's service proxy)", wire.ProxyAuthorizationHeader), h.retryAfter)
		return Verdict{}, false
	}
	v, err := h.check(r, token, attrs)
	var noVerdict *UnevaluatedError
	switch {
	case errors.Is(err, errRateLimited):
		authRateLimited.Inc()
		h.writeError(w, wire.Errorf(wire.CodeRateLimited, "",
			"too many requests with tokens the dispatcher has not verified yet from this address; retry later"), h.limiter.retryAfter())
		return Verdict{}, false
	case errors.Is(err, errPrincipalLimited):
		authPrincipalLimited.Inc()
		h.writeError(w, wire.Errorf(wire.CodeRateLimited, "",
			"too many requests refused for this user recently; retry later"), h.principals.retryAfter())
		return Verdict{}, false
	case errors.As(err, &noVerdict):
		h.log.Info("rights not evaluated", "namespace", attrs.Namespace, "session", attrs.Name, "error", err.Error())
		h.writeError(w, wire.Errorf(wire.CodeAuthUnavailable, "",
			"the Kubernetes API server could not evaluate the caller's rights now (%s); retry", noVerdict.Detail), h.retryAfter)
		return Verdict{}, false
	case err != nil:
		h.log.Error(err, "authorization failed", "namespace", attrs.Namespace, "session", attrs.Name)
		h.writeError(w, wire.Errorf(wire.CodeAuthUnavailable, "",
			"the dispatcher could not check the token with the Kubernetes API server; retry"), h.retryAfter)
		return Verdict{}, false
	}
	what := fmt.Sprintf("%s %s/%s %q in namespace %q (group %s)", attrs.Verb, Resource, attrs.Subresource, attrs.Name, attrs.Namespace, APIGroup)
	switch {
	case !v.Authenticated:
		// The API server's reason (which audiences, which issuer, …) is
		// for the operator's log only.
		h.log.V(1).Info("bearer token not accepted", "source", sourceHost(r), "reason", v.Reason)
		if v.Refusal != "" {
			h.writeError(w, wire.Errorf(wire.CodeUnauthorized, "", "%s", v.Refusal), h.retryAfter)
			return Verdict{}, false
		}
		h.writeError(w, wire.Errorf(wire.CodeUnauthorized, "",
			"the bearer token was not accepted by the Kubernetes API server (TokenReview)"), h.retryAfter)
		return Verdict{}, false
	case !v.Allowed:
		msg := fmt.Sprintf("user %q may not %s", v.User, what)
		if v.Reason != "" {
			msg += ": " + v.Reason
		}
		h.writeError(w, wire.Errorf(wire.CodeForbidden, "", "%s", msg), h.retryAfter)
		return Verdict{}, false
	}
	return v, true
}

// sourceHost is the host of the request's peer address: the TCP peer, never
// a header a client could set (X-Forwarded-For).
func sourceHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
