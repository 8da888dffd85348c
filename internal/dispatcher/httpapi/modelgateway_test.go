package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/engine"
	"github.com/openclaw/harness-operator/internal/dispatcher/httpapi"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
)

const gatewayUser = "system:serviceaccount:harness-operator-system:harness-model-gateway"

// tokenAPIServer is a Kubernetes API server that knows a few tokens
// (token → user) and counts the SubjectAccessReviews it is asked, which
// grant everything.
type tokenAPIServer struct {
	users map[string]string
	sars  atomic.Int32
}

func (s *tokenAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case strings.HasSuffix(r.URL.Path, "/tokenreviews"):
		var tr authnv1.TokenReview
		_ = json.NewDecoder(r.Body).Decode(&tr)
		user, ok := s.users[tr.Spec.Token]
		tr.Status = authnv1.TokenReviewStatus{Authenticated: ok, User: authnv1.UserInfo{Username: user}}
		if !ok {
			tr.Status.Error = "invalid bearer token"
		}
		_ = json.NewEncoder(w).Encode(tr)
	case strings.HasSuffix(r.URL.Path, "/subjectaccessreviews"):
		s.sars.Add(1)
		_ = json.NewEncoder(w).Encode(authzv1.SubjectAccessReview{Status: authzv1.SubjectAccessReviewStatus{Allowed: true}})
	default:
		http.NotFound(w, r)
	}
}

type holdsFixture struct {
	jrnl    *journal.Journal
	handler *httpapi.Handler
	api     *tokenAPIServer
	session string // the AgentSession's store key
}

// newHoldsFixture is a Handler over a real journal (wrap, when not nil,
// sees it first) that authenticates through a KubeAuthorizer against
// tokenAPIServer: "gw" is the gateway's token, "other" another
// ServiceAccount's.
func newHoldsFixture(t *testing.T, modelGatewayUser string, wrap func(store.Store) store.Store) *holdsFixture {
	t.Helper()
	jrnl, err := journal.Open(t.TempDir(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = jrnl.Close() })
	var st store.Store = jrnl
	if wrap != nil {
		st = wrap(jrnl)
	}
	api := &tokenAPIServer{users: map[string]string{"gw": gatewayUser, "other": "system:serviceaccount:team-a:gateway"}}
	ts := httptest.NewServer(api)
	t.Cleanup(ts.Close)
	// JSON, so that tokenAPIServer can read the token under review.
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: ts.URL, ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
	if err != nil {
		t.Fatal(err)
	}
	eng := engine.New(nil, nil, jrnl, engine.Options{})
	t.Cleanup(eng.Close)
	as := &v1alpha1.AgentSession{}
	as.Namespace, as.Name, as.UID = testNS, testName, "0c6f3b0e-7a51-4a4e-9d3b-2f1a9e0c1d2e"
	h, err := httpapi.NewHandler(httpapi.Config{
		Engine: eng, Store: st, Sessions: oneSession{as}, Authorizer: httpapi.NewKubeAuthorizer(cs, ""),
		ModelGatewayUser: modelGatewayUser,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &holdsFixture{jrnl: jrnl, handler: h, api: api, session: engine.SessionKey(as)}
}

// ask posts body to the holds endpoint with token ("" for none).
func (f *holdsFixture) ask(token, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, wire.ModelGatewayHoldsPath, strings.NewReader(body))
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	f.handler.ServeHTTP(w, r)
	return w
}

func holdsBody(lease string, token int64) string {
	b, _ := json.Marshal(wire.HoldsRequest{Lease: lease, Token: token})
	return string(b)
}

// wantHolds fails unless the gateway's question about (lease, token) is
// answered 200 with want.
func (f *holdsFixture) wantHolds(t *testing.T, what, lease string, token int64, want bool) {
	t.Helper()
	w := f.ask("gw", holdsBody(lease, token))
	var a wire.HoldsAnswer
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &a) != nil || a.Holds != want {
		t.Fatalf("holds %s: %d %s, want 200 {\"holds\":%v}", what, w.Code, w.Body, want)
	}
}

// holdsAnswered is harness_dispatcher_model_gateway_holds_total{answer}.
func holdsAnswered(t *testing.T, answer string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "harness_dispatcher_model_gateway_holds_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "answer" && l.GetValue() == answer {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// The gateway's user is told that a turn's grant (and a call's) holds while
// it is the current grant, and not once it was released; a later grant's
// token does not make the old one hold again. No SubjectAccessReview is
// asked: the identity is the authorization.
func TestModelGatewayHoldsFollowsTheLease(t *testing.T) {
	f := newHoldsFixture(t, gatewayUser, nil)
	ctx := context.Background()
	trueBefore, falseBefore := holdsAnswered(t, "true"), holdsAnswered(t, "false")
	for _, key := range []string{f.session, f.session + ".call"} {
		f.wantHolds(t, "before any grant", key, 1, false)
		lease, err := f.jrnl.Acquire(ctx, key, "dispatcher-0", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		f.wantHolds(t, "while the grant is current", key, lease.Token, true)
		f.wantHolds(t, "of a token never granted", key, lease.Token+1, false)
		if err := f.jrnl.Release(ctx, lease); err != nil {
			t.Fatal(err)
		}
		f.wantHolds(t, "after Release", key, lease.Token, false)
		next, err := f.jrnl.Acquire(ctx, key, "dispatcher-0", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		f.wantHolds(t, "of the next grant", key, next.Token, true)
		f.wantHolds(t, "of the released grant while the next one holds", key, lease.Token, false)
	}
	if n := f.api.sars.Load(); n != 0 {
		t.Fatalf("%d SubjectAccessReviews were asked; the holds endpoint needs none", n)
	}
	if got, want := holdsAnswered(t, "true")-trueBefore, 4.0; got != want {
		t.Errorf("holds_total{answer=true} grew by %v, want %v", got, want)
	}
	if got, want := holdsAnswered(t, "false")-falseBefore, 8.0; got != want {
		t.Errorf("holds_total{answer=false} grew by %v, want %v", got, want)
	}
}

// Only the gateway's user may ask, whatever it asks: another authenticated
// ServiceAccount is refused 403 naming the rule, even about a grant that
// holds; no token is 401; a token the API server rejects is 401; and with
// --model-gateway-user unset, everyone is refused, the answer naming the
// flag.
func TestModelGatewayHoldsAcceptsOnlyTheGatewaysUser(t *testing.T) {
	f := newHoldsFixture(t, gatewayUser, nil)
	lease, err := f.jrnl.Acquire(context.Background(), f.session, "dispatcher-0", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	body := holdsBody(f.session, lease.Token)
	f.wantHolds(t, "control: the gateway's user", f.session, lease.Token, true)

	w := f.ask("other", body)
	if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), `system:serviceaccount:team-a:gateway`) ||
		!strings.Contains(w.Body.String(), "--model-gateway-user") || strings.Contains(w.Body.String(), "holds\":") {
		t.Fatalf("another ServiceAccount: %d %s; want 403 naming the user and --model-gateway-user, and no answer", w.Code, w.Body)
	}
	if w := f.ask("", body); w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "bearer token is required") {
		t.Fatalf("no token: %d %s; want 401", w.Code, w.Body)
	}
	if w := f.ask("forged", body); w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "TokenReview") {
		t.Fatalf("a token the API server rejects: %d %s; want 401", w.Code, w.Body)
	}

	off := newHoldsFixture(t, "", nil)
	for _, token := range []string{"gw", "other"} {
		if w := off.ask(token, body); w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "--model-gateway-user is not set") {
			t.Fatalf("token %q without --model-gateway-user: %d %s; want 403 naming the flag", token, w.Code, w.Body)
		}
	}
}

// A request that is not a grant is refused 400 naming the field; the
// answer never reaches the store.
func TestModelGatewayHoldsRefusesABadRequestNamingTheField(t *testing.T) {
	f := newHoldsFixture(t, gatewayUser, nil)
	for _, tc := range []struct{ name, body, want string }{
		{"no lease", `{"token":1}`, "lease"},
		{"a lease without a namespace", holdsBody("0c6f3b0e", 1), "claim lease"},
		{"a lease with a second slash", holdsBody(testNS+"/a/b", 1), "claim lease"},
		{"a lease with another suffix", holdsBody(f.session+".turn", 1), "claim lease"},
		{"no token", holdsBody(f.session, 0), "token: must be"},
		{"a negative token", holdsBody(f.session, -3), "token: must be"},
		{"a token that is not a number", `{"lease":"` + f.session + `","token":"1"}`, "token"},
		{"an unknown field", `{"lease":"` + f.session + `","token":1,"run":"r"}`, "run: unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := f.ask("gw", tc.body)
			if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), tc.want) {
				t.Fatalf("%s: %d %s; want 400 naming %q", tc.body, w.Code, w.Body, tc.want)
			}
		})
	}
}

// brokenHolds is a store whose Holds fails, as a database that cannot be
// reached.
type brokenHolds struct{ store.Store }

func (brokenHolds) Holds(context.Context, string, int64) (bool, error) {
	return false, errors.New("dial tcp 10.96.0.7:5432: connect: connection refused")
}

// A store that cannot answer is 503 with Retry-After, never an answer: the
// gateway then fails closed. The answer does not show the store's address.
func TestModelGatewayHoldsIsUnavailableWhenTheStoreCannotAnswer(t *testing.T) {
	f := newHoldsFixture(t, gatewayUser, func(st store.Store) store.Store { return brokenHolds{st} })
	errorsBefore := holdsAnswered(t, "error")
	w := f.ask("gw", holdsBody(f.session, 1))
	if got := holdsAnswered(t, "error") - errorsBefore; got != 1 {
		t.Errorf("holds_total{answer=error} grew by %v, want 1", got)
	}
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" ||
		!strings.Contains(w.Body.String(), "StoreUnavailable") || strings.Contains(w.Body.String(), "10.96.0.7") {
		t.Fatalf("a failing store: %d %s (Retry-After %q); want 503 StoreUnavailable with Retry-After, without the address",
			w.Code, w.Body, w.Header().Get("Retry-After"))
	}
}
