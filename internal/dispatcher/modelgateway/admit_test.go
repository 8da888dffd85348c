package modelgateway

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/openclaw/harness-operator/internal/dispatcher/modelcred"
)

func ptr[T any](v T) *T { return &v }

// admitted is an Input every check passes.
func admitted() Input {
	return Input{
		Method: http.MethodPost, Path: ResponsesPath,
		Credential: Credential{Claims: modelcred.Claims{Lease: "team-a/uid-1", Token: 3, Models: []string{"gpt-5", "openai/gpt-5"}}},
		Place:      ptr(true),
		Body:       &Body{Limit: 1 << 20, Model: "gpt-5"},
		Liveness:   &Answer{Holds: true},
	}
}

// TestAdmit: each check, its status and code, in the order the design
// sets; a fact is asked for only once every check before it passed.
func TestAdmit(t *testing.T) {
	with := func(f func(*Input)) Input { in := admitted(); f(&in); return in }
	credErr := func(r modelcred.Reason) error { return &modelcred.Error{Reason: r} }
	cases := []struct {
		name    string
		in      Input
		need    Need
		status  int
		code    Code
		message string // a part of the refusal's message
	}{
		{name: "allowed", in: admitted()},
		{name: "the second model allowed", in: with(func(in *Input) { in.Body.Model = "openai/gpt-5" })},

		{name: "GET", in: with(func(in *Input) { in.Method = http.MethodGet }), status: 404, code: CodeNotFound, message: `not "GET" "/v1/responses"`},
		{name: "another path", in: with(func(in *Input) { in.Path = "/v1/models" }), status: 404, code: CodeNotFound, message: `"/v1/models"`},
		{name: "a path under the route", in: with(func(in *Input) { in.Path = "/v1/responses/compact" }), status: 404, code: CodeNotFound},
		{name: "a long path is echoed in part", in: with(func(in *Input) { in.Path = "/" + strings.Repeat("x", 5000) }), status: 404, code: CodeNotFound, message: "…"},
		{name: "the route before the credential", in: with(func(in *Input) { in.Path = "/"; in.Credential = Credential{Missing: true} }), status: 404, code: CodeNotFound},

		{name: "no credential", in: with(func(in *Input) { in.Credential = Credential{Missing: true} }), status: 401, code: CodeCredentialMissing, message: "Authorization: Bearer"},
		{name: "damaged", in: with(func(in *Input) { in.Credential = Credential{Err: credErr(modelcred.Forged)} }), status: 401, code: "credential_forged", message: "(forged)"},
		{name: "expired", in: with(func(in *Input) { in.Credential = Credential{Err: credErr(modelcred.Expired)} }), status: 401, code: "credential_expired"},
		{name: "another audience", in: with(func(in *Input) { in.Credential = Credential{Err: credErr(modelcred.WrongAudience)} }), status: 401, code: "credential_wrong_audience"},
		{name: "an error modelcred does not name", in: with(func(in *Input) { in.Credential = Credential{Err: errors.New("no key")} }), status: 401, code: CodeCredentialRefused},
		{name: "the credential before the place", in: with(func(in *Input) { in.Credential = Credential{Missing: true}; in.Place = nil }), status: 401, code: CodeCredentialMissing},

		{name: "the place is asked for", in: with(func(in *Input) { in.Place, in.Body, in.Liveness = nil, nil, nil }), need: NeedPlace},
		{name: "no place", in: with(func(in *Input) { in.Place = ptr(false) }), status: 429, code: CodeTooManyRequests, message: "requests in flight per session limit"},
		{name: "the place before the body", in: with(func(in *Input) { in.Place = ptr(false); in.Body = nil }), status: 429, code: CodeTooManyRequests},

		{name: "the body is asked for", in: with(func(in *Input) { in.Body, in.Liveness = nil, nil }), need: NeedBody},
		{name: "too large", in: with(func(in *Input) { in.Body = &Body{TooLarge: true, Limit: 10} }), status: 413, code: CodeBodyTooLarge, message: "request body limit of 10 bytes"},
		{name: "not a Responses request", in: with(func(in *Input) { in.Body = &Body{Invalid: "it is not a JSON object"} }), status: 400, code: CodeInvalidBody, message: "it is not a JSON object"},
		{name: "a model outside the credential's", in: with(func(in *Input) { in.Body.Model = "gpt-5-pro" }), status: 403, code: CodeModelNotAllowed, message: `model "gpt-5-pro" is not allowed: this credential allows only ["gpt-5" "openai/gpt-5"]`},
		{name: "the model before liveness", in: with(func(in *Input) { in.Body.Model = "other"; in.Liveness = nil }), status: 403, code: CodeModelNotAllowed},

		{name: "liveness is asked for", in: with(func(in *Input) { in.Liveness = nil }), need: NeedLiveness},
		{name: "the turn ended", in: with(func(in *Input) { in.Liveness = &Answer{} }), status: 401, code: CodeTurnNotRunning, message: "the turn this credential was issued for is no longer running"},
		{name: "liveness unknown", in: with(func(in *Input) {
			in.Liveness = &Answer{Holds: true, Err: errors.New("dial tcp 10.0.0.9:8443: refused")}
		}), status: 401, code: CodeLivenessUnavailable, message: "could not be checked"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := Admit(tc.in)
			if v.Need != tc.need {
				t.Fatalf("Admit needs %q, want %q (refusal %+v)", v.Need, tc.need, v.Refusal)
			}
			if tc.status == 0 {
				if v.Refusal != nil {
					t.Fatalf("Admit refused: %d %s %q", v.Refusal.Status, v.Refusal.Code, v.Refusal.Message)
				}
				if tc.need == "" && !v.Allowed() {
					t.Fatal("Admit did not allow")
				}
				return
			}
			if v.Refusal == nil {
				t.Fatalf("Admit allowed, want %d %s", tc.status, tc.code)
			}
			if v.Allowed() || v.Refusal.Status != tc.status || v.Refusal.Code != tc.code || !strings.Contains(v.Refusal.Message, tc.message) {
				t.Fatalf("Admit = %d %s %q, want %d %s with %q", v.Refusal.Status, v.Refusal.Code, v.Refusal.Message, tc.status, tc.code, tc.message)
			}
			if strings.Contains(v.Refusal.Message, "10.0.0.9") || len(v.Refusal.Message) > 600 {
				t.Fatalf("the refusal quotes an address or too much: %q", v.Refusal.Message)
			}
		})
	}
}

// TestBodyModel: the model is told only from one JSON object with one
// member "model" (in any letter case) that is a non-empty string.
func TestBodyModel(t *testing.T) {
	cases := []struct {
		body, model, invalid string
	}{
		{body: `{"model":"gpt-5","input":[{"type":"message"}],"stream":true}`, model: "gpt-5"},
		{body: ` {"input":{"model":"other"},"model":"gpt-5"} `, model: "gpt-5"},
		{body: `{"mod\u0065l":"gpt-5"}`, model: "gpt-5"},
		{body: `{"input":[]}`, invalid: `no "model"`},
		{body: `{"model":"gpt-5","model":"gpt-5-pro"}`, invalid: "more than once"},
		{body: `{"model":"gpt-5","Model":"gpt-5-pro"}`, invalid: "more than once"},
		{body: `{"MODEL":"gpt-5"}`, invalid: "lower case"},
		{body: `{"model":5}`, invalid: "non-empty string"},
		{body: `{"model":""}`, invalid: "non-empty string"},
		{body: `{"model":null}`, invalid: "non-empty string"},
		{body: `["model"]`, invalid: "not a JSON object"},
		{body: ``, invalid: "not a JSON object"},
		{body: `{"model":"gpt-5"`, invalid: "not valid JSON"},
		{body: `{"model":"gpt-5",}`, invalid: "not valid JSON"},
		{body: `{"model":"gpt-5"}{}`, invalid: "more than one JSON value"},
		{body: `{"model":"gpt-5"} x`, invalid: "more than one JSON value"},
	}
	for _, tc := range cases {
		model, invalid := bodyModel([]byte(tc.body))
		if model != tc.model || (tc.invalid == "") != (invalid == "") || !strings.Contains(invalid, tc.invalid) {
			t.Errorf("bodyModel(%s) = %q, %q; want %q, %q", tc.body, model, invalid, tc.model, tc.invalid)
		}
	}
}
