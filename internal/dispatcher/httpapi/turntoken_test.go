package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/engine"
	"github.com/openclaw/harness-operator/internal/dispatcher/httpapi"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
	"github.com/openclaw/harness-operator/internal/dispatcher/turntoken"
	harnessscheme "github.com/openclaw/harness-operator/internal/platform/scheme"
)

// replica is a Handler as one dispatcher replica builds it: its own journal
// and engine, the shared key (nil: none given), and sess as the AgentSession
// that exists now.
func replica(t *testing.T, tokens *turntoken.Key, sess *v1alpha1.AgentSession) *httpapi.Handler {
	t.Helper()
	scheme, err := harnessscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(sess.DeepCopy()).Build()
	jrnl, err := journal.Open(t.TempDir(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = jrnl.Close() })
	eng := engine.New(c, c, jrnl, engine.Options{})
	t.Cleanup(eng.Close)
	h, err := httpapi.NewHandler(httpapi.Config{Engine: eng, Store: jrnl, Sessions: c, Authorizer: allowAll{}, TurnTokens: tokens})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// interruptCode is the error code h answers an interrupt of runID of sess
// presenting token with.
func interruptCode(t *testing.T, h http.Handler, sess *v1alpha1.AgentSession, runID, token string) wire.ErrorCode {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/v1/namespaces/"+sess.Namespace+"/agentsessions/"+sess.Name+"/turns/"+runID+"/interrupt", http.NoBody)
	r.Header.Set("Authorization", "Bearer gateway-token")
	r.Header.Set(wire.TurnTokenHeader, token)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var e struct{ Code wire.ErrorCode }
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
		t.Fatalf("interrupt answered %d %q: %v", w.Code, w.Body, err)
	}
	return e.Code
}

func testKey(t *testing.T, b byte) *turntoken.Key {
	t.Helper()
	k, err := turntoken.New(bytes.Repeat([]byte{b}, turntoken.KeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestTurnTokensOfOneReplicaPassOnAnotherWithTheSameKey: two replicas (or a
// dispatcher before and after a restart) built with the key of one Secret
// accept each other's turn tokens; a replica with another key does not, and
// a token stays bound to the session's UID. A token that passes reaches the
// run lookup (404 RunNotFound: no run in this replica's journal); one that
// does not is 403 TurnTokenInvalid.
func TestTurnTokensOfOneReplicaPassOnAnotherWithTheSameKey(t *testing.T) {
	const runID = "run-1"
	sess := func(uid string) *v1alpha1.AgentSession {
		return &v1alpha1.AgentSession{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "chat", UID: types.UID(uid)}}
	}
	current, deleted := sess("uid-b"), sess("uid-a")
	issuer := replica(t, testKey(t, 1), current)
	token := issuer.TurnToken(engine.SessionKey(current), runID)

	for _, tc := range []struct {
		name  string
		h     http.Handler
		token string
		want  wire.ErrorCode
	}{
		{"another replica with the same key", replica(t, testKey(t, 1), current), token, wire.CodeRunNotFound},
		{"a replica with another key", replica(t, testKey(t, 2), current), token, wire.CodeTurnTokenInvalid},
		{"a replica without a key given (random per process)", replica(t, nil, current), token, wire.CodeTurnTokenInvalid},
		{"the token of a deleted session of the same name", replica(t, testKey(t, 1), current),
			issuer.TurnToken(engine.SessionKey(deleted), runID), wire.CodeTurnTokenInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := interruptCode(t, tc.h, current, runID, tc.token); got != tc.want {
				t.Fatalf("interrupt with the issuer's token: %s, want %s", got, tc.want)
			}
		})
	}
}
