package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/httpapi"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// TestTheRunShowsWhoStartedIt: GET …/turns/{runId} answers the requester
// the run's journal record holds (user, UID, groups).
func TestTheRunShowsWhoStartedIt(t *testing.T) {
	f := newAPIFixture(t, time.Second, nil)
	req, err := wire.DecodeTurnRequest(strings.NewReader(turnBody))
	if err != nil {
		t.Fatal(err)
	}
	digest, err := req.Digest()
	if err != nil {
		t.Fatal(err)
	}
	lease, err := f.jrnl.Acquire(context.Background(), f.session, "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	by := store.Requester{User: "system:serviceaccount:team-a:gateway", UID: "uid-1", Groups: []string{"system:serviceaccounts"}}
	run, _, err := f.jrnl.Claim(lease, "run-1", digest, by)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Finish(store.StateFinished, json.RawMessage(`{"ok":true}`)); err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, sessionPath("/turns/run-1"), nil)
	r.Header.Set("Authorization", "Bearer t")
	w := httptest.NewRecorder()
	f.handler.ServeHTTP(w, r)
	var st httpapi.TurnState
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || w.Code != http.StatusOK {
		t.Fatalf("GET: %d %s (%v)", w.Code, w.Body, err)
	}
	if st.Requester == nil || st.Requester.User != by.User || st.Requester.UID != by.UID || len(st.Requester.Groups) != 1 {
		t.Fatalf("requester: %+v, want %+v (body %s)", st.Requester, by, w.Body)
	}
}
