package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
)

// scriptedAPIServer answers the three requests KubeAuthorizer makes: every
// token is valid, a SubjectAccessReview answers sar, /readyz answers ready.
type scriptedAPIServer struct {
	sar    authzv1.SubjectAccessReviewStatus
	ready  atomic.Bool
	probes atomic.Int32 // /readyz requests
}

func (s *scriptedAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/readyz":
		s.probes.Add(1)
		if !s.ready.Load() {
			http.Error(w, "[-]informer-sync failed: reason withheld\nreadyz check failed", http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte("ok"))
	case strings.HasSuffix(r.URL.Path, "/tokenreviews"):
		_ = json.NewEncoder(w).Encode(authnv1.TokenReview{Status: authnv1.TokenReviewStatus{
			Authenticated: true, User: authnv1.UserInfo{Username: "system:serviceaccount:ns:gateway"}}})
	case strings.HasSuffix(r.URL.Path, "/subjectaccessreviews"):
		_ = json.NewEncoder(w).Encode(authzv1.SubjectAccessReview{Status: s.sar})
	default:
		http.NotFound(w, r)
	}
}

// A refusal that grants nothing from an API server whose /readyz fails —
// one that has just started, its RBAC informers not synced — is no verdict
// (503 AuthUnavailable, not cached), where a 403 would make the gateway
// give its turn up. The same refusal from a ready server is a verdict, and
// an explicit deny is one without asking.
func TestARefusalFromAnAPIServerThatIsNotReadyIsNoVerdict(t *testing.T) {
	srv := &scriptedAPIServer{}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	a := NewKubeAuthorizer(cs, "")
	now := time.Unix(1000, 0)
	a.now = func() time.Time { return now }
	attrs := Attributes{Verb: VerbCreate, Namespace: "ns", Name: "s", Subresource: SubresourceTurns}

	_, err = a.Authorize(context.Background(), "token", attrs)
	var noVerdict *UnevaluatedError
	if !errors.As(err, &noVerdict) || !strings.Contains(noVerdict.Detail, "not ready") || !strings.Contains(noVerdict.Detail, "informer-sync") {
		t.Fatalf("a refusal by a server that is not ready: %v, want an UnevaluatedError saying why", err)
	}

	srv.ready.Store(true)
	now = now.Add(a.readyEvery) // the last answer of /readyz is stale
	v, err := a.Authorize(context.Background(), "token", attrs)
	if err != nil || !v.Authenticated || v.Allowed {
		t.Fatalf("the same refusal by a ready server: %+v, %v; want a verdict that refuses", v, err)
	}

	srv.ready.Store(false)
	srv.sar = authzv1.SubjectAccessReviewStatus{Denied: true, Reason: "denied by policy"}
	before := srv.probes.Load()
	v, err = a.Authorize(context.Background(), "token", attrs)
	if err != nil || v.Allowed || v.Reason != "denied by policy" || srv.probes.Load() != before {
		t.Fatalf("an explicit deny: %+v, %v, /readyz asked %d times; want a verdict without asking", v, err, srv.probes.Load()-before)
	}

	srv.sar = authzv1.SubjectAccessReviewStatus{Allowed: true}
	before = srv.probes.Load()
	if v, err = a.Authorize(context.Background(), "token", attrs); err != nil || !v.Allowed || srv.probes.Load() != before {
		t.Fatalf("a grant: %+v, %v, /readyz asked %d times; want it allowed without asking", v, err, srv.probes.Load()-before)
	}
}

// Refusals that grant nothing, however many, ask /readyz at most once per
// interval: a principal without grants naming many sessions cannot turn
// each refusal into a request to the API server's /readyz. Once the
// interval has passed, the next refusal asks again (the control).
func TestReadyzIsAskedAtMostOncePerInterval(t *testing.T) {
	srv := &scriptedAPIServer{}
	srv.ready.Store(true)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: ts.URL, QPS: -1}) // no client-side throttling of the 100 reviews
	if err != nil {
		t.Fatal(err)
	}
	a := NewKubeAuthorizer(cs, "")
	now := time.Unix(1000, 0)
	a.now = func() time.Time { return now }
	for i := range 50 {
		attrs := Attributes{Verb: VerbCreate, Namespace: "ns", Name: fmt.Sprintf("random-%d", i), Subresource: SubresourceTurns}
		if v, err := a.Authorize(context.Background(), "token", attrs); err != nil || v.Allowed {
			t.Fatalf("refusal %d: %+v, %v", i, v, err)
		}
	}
	if got := srv.probes.Load(); got != 1 {
		t.Fatalf("50 refusals within %v asked /readyz %d times, want 1", a.readyEvery, got)
	}
	now = now.Add(a.readyEvery)
	if _, err := a.Authorize(context.Background(), "token", Attributes{Verb: VerbCreate, Namespace: "ns", Name: "later"}); err != nil {
		t.Fatal(err)
	}
	if got := srv.probes.Load(); got != 2 {
		t.Fatalf("control: a refusal after the interval asked /readyz %d times in all, want 2", got)
	}
}
