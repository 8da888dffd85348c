package dispatcher_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/internal/contract/sse"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/httpapi"
)

// Missing, garbage and wrong-audience tokens are 401 without the API
// server's reasons; a token of an account without a grant is 403 naming the
// permission; the control (the gateway's dispatcher-audience token) passes.
func (s *suite) testTokens(t *testing.T) {
	wantError(t, "no token", s.decide(t, "", nil), http.StatusUnauthorized, wire.CodeUnauthorized, "bearer token is required")
	wantError(t, "garbage token", s.decide(t, "not-a-kubernetes-token", nil), http.StatusUnauthorized, wire.CodeUnauthorized, "not accepted")
	e := wantError(t, "the API server's audience with --require-token-audience", s.decide(t, s.apiToken, nil),
		http.StatusUnauthorized, wire.CodeUnauthorized, "not accepted")
	if strings.Contains(e.Message, "audience") || strings.Contains(e.Message, "127.0.0.1") {
		t.Fatalf("the 401 carries the API server's reason: %q", e.Message)
	}
	wantError(t, "an account without a grant", s.decide(t, s.nobody, nil), http.StatusForbidden, wire.CodeForbidden,
		"system:serviceaccount:"+s.ns+":nobody", "create agentsessions/turns")
	wantOK(t, "the gateway's dispatcher-audience token", s.decide(t, s.gateway, nil))
}

// Rights the API server cannot evaluate are no verdict: an account bound to
// a ClusterRole that does not exist (as every role is to a kube-apiserver
// that just restarted, before its RBAC roles are loaded) is refused for now
// — 503 AuthUnavailable naming the evaluation error, with Retry-After —
// not 403, and nothing is cached: once the role exists, the same token runs.
//
// The API server's RBAC sees each change a moment after it is written.
// Each step first waits until the API server itself gives the answer the
// step needs (rights, the dispatcher's question without its cache), then
// asks the dispatcher once: asked before the binding is seen, the
// dispatcher would get an ordinary denial and cache it as a 403; asked
// before the role is seen, a 503 would prove nothing about the cache.
func (s *suite) testUnevaluatedRights(t *testing.T) {
	ctx := context.Background()
	const role = "harness-gateway-not-yet"
	must(t, s.k8s.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "unsure"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: s.ns, Name: "unsure"}},
	}))
	eventually(t, 30*time.Second, "the API server sees the binding to the missing ClusterRole", func() (bool, string) {
		st := s.turnRights(t, s.ns, "unsure", httpapi.VerbCreate, s.ns)
		return !st.Allowed && strings.Contains(st.Reason+st.EvaluationError, role), fmt.Sprintf("%+v", st)
	})
	unsure := s.token(t, s.ns, "unsure", audience)
	r := s.decide(t, unsure, nil)
	wantError(t, "an account bound to a missing ClusterRole", r, http.StatusServiceUnavailable, wire.CodeAuthUnavailable,
		"could not evaluate", role)
	if r.Header.Get("Retry-After") == "" {
		t.Fatalf("a 503 without Retry-After: %v", r.Header)
	}
	wantOK(t, "the gateway's token beside it", s.decide(t, s.gateway, nil))
	must(t, s.k8s.Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: role},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{httpapi.APIGroup}, Resources: []string{"agentsessions/turns"}, Verbs: []string{"create"}}},
	}))
	eventually(t, 30*time.Second, "the API server grants through the new ClusterRole", func() (bool, string) {
		st := s.turnRights(t, s.ns, "unsure", httpapi.VerbCreate, s.ns)
		return st.Allowed, fmt.Sprintf("%+v", st)
	})
	// Asked once: a dispatcher that had cached the 503's refusal (for its
	// --auth-cache-ttl, 10 s) refuses again here.
	wantOK(t, "the same token once the ClusterRole exists", s.decide(t, unsure, nil))
}

// X-Harness-Authorization is a second place for the same token: reviewed
// like Authorization, never preferred to it.
func (s *suite) testProxyHeader(t *testing.T) {
	h := wire.ProxyAuthorizationHeader
	wantOK(t, h+" alone", s.decide(t, "", map[string]string{h: "Bearer " + s.gateway}))
	wantError(t, h+" with a garbage token", s.decide(t, "", map[string]string{h: "Bearer garbage"}),
		http.StatusUnauthorized, wire.CodeUnauthorized, "not accepted")
	wantError(t, "a valid "+h+" under a garbage Authorization", s.decide(t, "garbage", map[string]string{h: "Bearer " + s.gateway}),
		http.StatusUnauthorized, wire.CodeUnauthorized, "not accepted")
	wantError(t, h+" with an ungranted account's token", s.decide(t, "", map[string]string{h: "Bearer " + s.nobody}),
		http.StatusForbidden, wire.CodeForbidden, "create agentsessions/turns")
	wantOK(t, "Authorization with a garbage "+h, s.decide(t, s.gateway, map[string]string{h: "Bearer garbage"}))
}

// A turn token opens only its own run; the run records who started it.
func (s *suite) testTurnTokens(t *testing.T) {
	tokenOf := func(evs []sse.Event) string {
		for _, e := range evs {
			if e.Type == wire.EventSelected {
				var sel struct {
					TurnToken string `json:"turnToken"`
				}
				must(t, json.Unmarshal(e.Data, &sel))
				return sel.TurnToken
			}
		}
		t.Fatalf("no selected event in %d events", len(evs))
		return ""
	}
	a := tokenOf(s.turn(t, s.ns, "demo", "run-a"))
	b := tokenOf(s.turn(t, s.ns, "demo", "run-b"))
	interrupt := func(token string) reply {
		return s.call(t, http.MethodPost, s.url(s.ns, "demo", "/turns/run-b/interrupt"), s.gateway, "",
			map[string]string{wire.TurnTokenHeader: token})
	}
	wantError(t, "interrupt run-b with run-a's turn token", interrupt(a), http.StatusForbidden, wire.CodeTurnTokenInvalid, "does not match this turn")
	// Control: run-b's own token passes the check (the run has ended, so
	// the answer is that it is not running).
	wantError(t, "control: interrupt run-b with its own token", interrupt(b), http.StatusConflict, wire.CodeTurnNotRunning, "is not running")

	r := s.call(t, http.MethodGet, s.url(s.ns, "demo", "/turns/run-b"), s.gateway, "", nil)
	var st httpapi.TurnState
	must(t, json.Unmarshal(r.Body, &st))
	want := "system:serviceaccount:" + s.ns + ":gateway"
	if r.Status != http.StatusOK || st.Requester == nil || st.Requester.User != want || st.Requester.UID == "" || len(st.Requester.Groups) == 0 {
		t.Fatalf("GET run-b: %d %s, want the requester %s with UID and groups", r.Status, r.Body, want)
	}
}

// Bodies over the limit and with duplicate keys are refused before any
// turn; the control is the same request in bounds.
func (s *suite) testBodies(t *testing.T) {
	big := fmt.Sprintf(`{"prompt":%q}`, strings.Repeat("x", 2<<20))
	wantError(t, "a 2 MiB body", s.call(t, http.MethodPost, s.url(s.ns, "demo", "/decide"), s.gateway, big, nil),
		http.StatusRequestEntityTooLarge, wire.CodeRequestTooLarge, "larger than")
	wantError(t, "duplicate keys", s.call(t, http.MethodPost, s.url(s.ns, "demo", "/decide"), s.gateway, `{"prompt":"a","prompt":"b"}`, nil),
		http.StatusBadRequest, wire.CodeBadRequest, "prompt", "duplicate field")
	wantOK(t, "the same body once", s.call(t, http.MethodPost, s.url(s.ns, "demo", "/decide"), s.gateway, `{"prompt":"a"}`, nil))
}

// A token for the dispatcher's audience minted to live a year (the CLI role
// may request any duration) is refused 401, naming its lifetime and the
// flag, without quoting the token; the control, the same account's
// 10-minute token (what kubectl harness requests), runs.
func (s *suite) testTokenLifetime(t *testing.T) {
	mint := func(seconds int64) string {
		tr, err := s.cs.CoreV1().ServiceAccounts(s.ns).CreateToken(context.Background(), "gateway", &authnv1.TokenRequest{
			Spec: authnv1.TokenRequestSpec{Audiences: []string{audience}, ExpirationSeconds: &seconds},
		}, metav1.CreateOptions{})
		must(t, err)
		return tr.Status.Token
	}
	year := mint(365 * 24 * 3600)
	r := s.decide(t, year, nil)
	wantError(t, "a dispatcher-audience token valid for a year", r, http.StatusUnauthorized, wire.CodeUnauthorized,
		"8760h0m0s", "--max-token-lifetime")
	if strings.Contains(string(r.Body), year) || strings.Contains(string(r.Body), strings.Split(year, ".")[1]) {
		t.Fatalf("the 401 quotes the token: %s", r.Body)
	}
	wantOK(t, "the same account's 10-minute token", s.decide(t, mint(600), nil))
}
