package modelgateway

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"unicode/utf8"

	"github.com/openclaw/harness-operator/internal/dispatcher/modelcred"
)

// ResponsesPath is the one route the gateway serves (POST). It is Codex's
// Responses API under the gateway provider's base URL (<gateway>/v1).
const ResponsesPath = "/v1/responses"

// upstreamSuffix is what the upstream's base URL is joined with: the
// request's path after /v1.
const upstreamSuffix = "/responses"

// ErrorType is the "type" of every refusal body, so that the dispatcher can
// tell the gateway's refusals from the upstream's answers.
const ErrorType = "harness_model_gateway"

// Code is a refusal's stable code: the refusal body's error.code, and the
// code label of the requests metric. The set is closed.
type Code string

// The gateway's codes. A credential that does not open is refused with
// "credential_" + its modelcred.Reason (credential_expired, …).
const (
	// CodeNotFound (404): a method or path other than POST /v1/responses.
	CodeNotFound Code = "not_found"
	// CodeCredentialMissing (401): no "Authorization: Bearer" credential.
	CodeCredentialMissing Code = "credential_missing"
	// CodeCredentialRefused (401): the credential did not open, for a
	// reason modelcred does not name.
	CodeCredentialRefused Code = "credential_refused"
	// CodeTooManyRequests (429): the credential's lease already has
	// Limits.MaxInFlightPerLease requests in flight.
	CodeTooManyRequests Code = "too_many_requests"
	// CodeBodyTooLarge (413): the body is over Limits.MaxBodyBytes.
	CodeBodyTooLarge Code = "body_too_large"
	// CodeInvalidBody (400): the body is not a JSON object with one string
	// "model".
	CodeInvalidBody Code = "invalid_body"
	// CodeModelNotAllowed (403): the body's model is not among the
	// credential's models. The dispatcher's wire code for it is meant to
	// be ModelNotAllowed.
	CodeModelNotAllowed Code = "model_not_allowed"
	// CodeTurnNotRunning (401): the grant the credential rides is no
	// longer current: its turn (or call) ended.
	CodeTurnNotRunning Code = "turn_not_running"
	// CodeLivenessUnavailable (401): whether the grant is current could not
	// be checked. The gateway fails closed.
	CodeLivenessUnavailable Code = "liveness_unavailable"
	// CodeUpstreamUnavailable (502): the harness's upstream could not be
	// resolved, is misconfigured, is refused by the dial rules, or could
	// not be reached.
	CodeUpstreamUnavailable Code = "upstream_unavailable"
	// CodeUpstreamTimeout (504): the upstream sent no response headers
	// within Limits.UpstreamHeaderTimeout.
	CodeUpstreamTimeout Code = "upstream_timeout"
	// CodeInternal (500): the gateway failed (a recovered panic).
	CodeInternal Code = "internal_error"
)

// credentialCode is the code of a credential modelcred refused.
func credentialCode(r modelcred.Reason) Code { return Code("credential_" + string(r)) }

// Need names the fact Admit needs before it can decide.
type Need string

// The facts the gateway learns step by step, each only once the checks
// before it passed: a place among the lease's requests in flight, then the
// body, then the liveness answer.
const (
	NeedPlace    Need = "place"
	NeedBody     Need = "body"
	NeedLiveness Need = "liveness"
)

// Input is what the gateway knows of a request. Place, Body and Liveness
// are nil until learned; Admit asks for them in order (Verdict.Need).
type Input struct {
	// Method and Path are the request's (the path decoded).
	Method, Path string
	// Credential is the result of opening the request's bearer credential.
	Credential Credential
	// Place says whether the request got a place among its lease's
	// requests in flight (nil: not asked yet).
	Place *bool
	// Body is what the body held (nil: not read yet).
	Body *Body
	// Liveness is the answer of Liveness.Holds for the credential's grant
	// (nil: not asked yet).
	Liveness *Answer
}

// Credential is the result of opening a request's credential.
type Credential struct {
	// Missing: the request has no single "Authorization: Bearer" header.
	Missing bool
	// Claims are the credential's claims when it opened (Err nil).
	Claims modelcred.Claims
	// Err is modelcred.Open's refusal (a *modelcred.Error), if any.
	Err error
}

// Body is what the gateway read of a request's body.
type Body struct {
	// TooLarge: the body is longer than Limit bytes (it was not read
	// further).
	TooLarge bool
	// Limit is the body limit that applied.
	Limit int64
	// Invalid says why the body is not a Responses request the gateway can
	// check ("" when it is): not JSON, "model" missing, twice or not a
	// string. It never quotes the body.
	Invalid string
	// Model is the body's "model".
	Model string
}

// Answer is what Liveness.Holds answered.
type Answer struct {
	Holds bool
	Err   error
}

// Verdict is Admit's decision: a fact it needs first (Need), a refusal,
// or, with neither, forward the request.
type Verdict struct {
	Need    Need
	Refusal *Refusal
}

// Allowed reports whether the request may be forwarded.
func (v Verdict) Allowed() bool { return v.Need == "" && v.Refusal == nil }

// Refusal is the answer to a request the gateway does not forward. Its
// message says why and never holds the credential, a key or an address.
type Refusal struct {
	Status  int
	Code    Code
	Message string
}

// Error is the refusal as an error: its message.
func (r *Refusal) Error() string { return r.Message }

func refuse(status int, code Code, format string, args ...any) Verdict {
	return Verdict{Refusal: &Refusal{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}}
}

// maxEcho bounds what a refusal repeats of the client's own input (a path,
// a method, a model): enough to recognise it, never a flood.
const maxEcho = 200

// echo is s as a refusal quotes it: at most maxEcho bytes of valid UTF-8.
func echo(s string) string {
	if c := clip(s); c != s {
		return fmt.Sprintf("%q…", c)
	}
	return fmt.Sprintf("%q", s)
}

// clip is s cut to at most maxEcho bytes, at a rune boundary.
func clip(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	s = s[:maxEcho]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// Admit decides a model request, checking in this order, each refusal
// before anything reaches the upstream:
//
//  1. the route: only POST /v1/responses (404 naming what was asked);
//  2. the credential: present and opened (401, its modelcred reason in the
//     code);
//  3. a place among the lease's requests in flight (429);
//  4. the body: within its limit (413), JSON with one string "model"
//     (400), a model the credential allows (403);
//  5. liveness: the credential's grant is still current (401 when it is
//     not, and when that could not be checked: fail closed).
//
// It does no I/O: when it needs the next fact it returns Verdict.Need, and
// the caller asks again with it.
func Admit(in Input) Verdict {
	if in.Method != http.MethodPost || in.Path != ResponsesPath {
		return refuse(http.StatusNotFound, CodeNotFound,
			"the model gateway serves only POST %s, not %s %s", ResponsesPath, echo(in.Method), echo(in.Path))
	}
	c := in.Credential
	switch {
	case c.Missing:
		return refuse(http.StatusUnauthorized, CodeCredentialMissing,
			"the request carries no model-gateway credential: one \"Authorization: Bearer <credential>\" header is required")
	case c.Err != nil:
		var e *modelcred.Error
		if errors.As(c.Err, &e) {
			return refuse(http.StatusUnauthorized, credentialCode(e.Reason), "the credential is refused (%s): %s", e.Reason, e.Error())
		}
		return refuse(http.StatusUnauthorized, CodeCredentialRefused, "the credential could not be opened")
	}
	switch {
	case in.Place == nil:
		return Verdict{Need: NeedPlace}
	case !*in.Place:
		return refuse(http.StatusTooManyRequests, CodeTooManyRequests,
			"the session already has the most model requests in flight its credential may have (requests in flight per session limit); retry when one ends")
	}
	b := in.Body
	switch {
	case b == nil:
		return Verdict{Need: NeedBody}
	case b.TooLarge:
		return refuse(http.StatusRequestEntityTooLarge, CodeBodyTooLarge,
			"the request body is larger than the request body limit of %d bytes", b.Limit)
	case b.Invalid != "":
		return refuse(http.StatusBadRequest, CodeInvalidBody, "the request body is not a Responses request: %s", b.Invalid)
	case !slices.Contains(c.Claims.Models, b.Model):
		return refuse(http.StatusForbidden, CodeModelNotAllowed,
			"model %s is not allowed: this credential allows only %q", echo(b.Model), c.Claims.Models)
	}
	l := in.Liveness
	switch {
	case l == nil:
		return Verdict{Need: NeedLiveness}
	case l.Err != nil:
		return refuse(http.StatusUnauthorized, CodeLivenessUnavailable,
			"whether the turn this credential was issued for is still running could not be checked; the request is refused until it can be")
	case !l.Holds:
		return refuse(http.StatusUnauthorized, CodeTurnNotRunning, "the turn this credential was issued for is no longer running")
	}
	return Verdict{}
}
