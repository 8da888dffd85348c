package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/engine"
	"github.com/openclaw/harness-operator/internal/dispatcher/httpapi"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
)

// The streaming answers are served from the store alone — a reconnect
// (Last-Event-ID) and the transcript run no turn — so these tests give the
// Handler a real journal, one AgentSession and an Authorizer that allows
// everything; the Engine is never called.

const (
	testNS, testName = "team-a", "s1"
	turnBody         = `{"runId":"run-1","prompt":"hi"}`
	handlerFrame     = "httpapi.(*Handler)."
)

// allowAll lets every bearer token do everything: these tests are about
// what comes after the grant.
type allowAll struct{}

func (allowAll) Authorize(context.Context, string, httpapi.Attributes) (httpapi.Verdict, error) {
	return httpapi.Verdict{Authenticated: true, Allowed: true, User: "gateway"}, nil
}

// oneSession is a client.Reader that knows one AgentSession.
type oneSession struct{ s *v1alpha1.AgentSession }

func (o oneSession) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	as, ok := obj.(*v1alpha1.AgentSession)
	if !ok || key != client.ObjectKeyFromObject(o.s) {
		return apierrors.NewNotFound(schema.GroupResource{Group: httpapi.APIGroup, Resource: httpapi.Resource}, key.Name)
	}
	o.s.DeepCopyInto(as)
	return nil
}

func (oneSession) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not used")
}

type apiFixture struct {
	dir     string // the journal's directory
	jrnl    *journal.Journal
	handler *httpapi.Handler
	session string // the store's key of the AgentSession
}

// newAPIFixture builds the Handler; wrap (may be nil) sees the store it reads.
func newAPIFixture(t *testing.T, writeWait time.Duration, wrap func(store.Store) store.Store) *apiFixture {
	t.Helper()
	dir := t.TempDir()
	jrnl, err := journal.Open(dir, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = jrnl.Close() })
	as := &v1alpha1.AgentSession{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: testName, UID: "0c6f3b0e-7a51-4a4e-9d3b-2f1a9e0c1d2e"}}
	var st store.Store = jrnl
	if wrap != nil {
		st = wrap(jrnl)
	}
	eng := engine.New(nil, nil, jrnl, engine.Options{})
	t.Cleanup(eng.Close)
	h, err := httpapi.NewHandler(httpapi.Config{
		Engine: eng, Store: st, Sessions: oneSession{as}, Authorizer: allowAll{}, StreamWriteTimeout: writeWait,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &apiFixture{dir: dir, jrnl: jrnl, handler: h, session: engine.SessionKey(as)}
}

// run journals run-1 for turnBody with events of about size bytes each.
func (f *apiFixture) run(t *testing.T, events, size int, finish bool) *journal.Run {
	t.Helper()
	req, err := wire.DecodeTurnRequest(strings.NewReader(turnBody))
	if err != nil {
		t.Fatal(err)
	}
	digest, err := req.Digest()
	if err != nil {
		t.Fatal(err)
	}
	r, outcome, err := f.jrnl.Begin(f.session, "run-1", digest)
	if err != nil || outcome != journal.BeginNew {
		t.Fatalf("Begin = %v, %v", outcome, err)
	}
	for i := range events {
		appendEvent(t, r, i, size)
	}
	if finish {
		if err := r.Finish(store.StateFinished, json.RawMessage(`{"ok":true}`)); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func appendEvent(t *testing.T, r *journal.Run, i, size int) {
	t.Helper()
	if _, err := r.Append(wire.EventPartial, json.RawMessage(fmt.Sprintf(`{"i":%d,"delta":"%s"}`, i, strings.Repeat("x", size)))); err != nil {
		t.Fatal(err)
	}
}

func sessionPath(suffix string) string {
	return "/v1/namespaces/" + testNS + "/agentsessions/" + testName + suffix
}

// waitUntil polls a fact about the process (not the passing of time) until
// it holds, or fails after limit.
func waitUntil(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", limit, what)
		}
		time.Sleep(time.Millisecond)
	}
}
