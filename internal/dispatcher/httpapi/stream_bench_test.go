package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/engine"
	"github.com/openclaw/harness-operator/internal/dispatcher/httpapi"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
)

// BenchmarkStreamReplay is the HTTP layer's own work on one stream, without
// an API server: a POST …/turns reconnect over TLS (a kept-alive
// connection) to an ended run of 8 events, its body decoded, the run read
// from the journal and written as SSE, and the client reading it to its
// end. The authorizer allows everything (no verdict cache). allocs/op and
// flushes/op are the figures to compare; the client's share is in both.
func BenchmarkStreamReplay(b *testing.B) {
	jrnl, err := journal.Open(b.TempDir(), journal.Options{})
	benchMust(b, err)
	b.Cleanup(func() { _ = jrnl.Close() })
	as := &v1alpha1.AgentSession{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: testName, UID: "0c6f3b0e-7a51-4a4e-9d3b-2f1a9e0c1d2e"}}
	eng := engine.New(nil, nil, jrnl, engine.Options{})
	b.Cleanup(eng.Close)
	h, err := httpapi.NewHandler(httpapi.Config{Engine: eng, Store: jrnl, Sessions: oneSession{as}, Authorizer: allowAll{}})
	benchMust(b, err)
	req, err := wire.DecodeTurnRequest(strings.NewReader(turnBody))
	benchMust(b, err)
	digest, err := req.Digest()
	benchMust(b, err)
	run, _, err := jrnl.Begin(engine.SessionKey(as), "run-1", digest)
	benchMust(b, err)
	for i := range 8 {
		_, err := run.Append(wire.EventPartial, json.RawMessage(fmt.Sprintf(`{"i":%d,"delta":"%s"}`, i, strings.Repeat("x", 100))))
		benchMust(b, err)
	}
	benchMust(b, run.Finish(store.StateFinished, json.RawMessage(`{"ok":true}`)))

	counter := &flushCounter{h: h}
	srv := httptest.NewTLSServer(counter)
	b.Cleanup(srv.Close)
	client := srv.Client()
	b.ReportAllocs()
	for b.Loop() {
		r, err := http.NewRequest(http.MethodPost, srv.URL+sessionPath("/turns"), strings.NewReader(turnBody))
		benchMust(b, err)
		r.Header.Set("Authorization", "Bearer t")
		r.Header.Set("Last-Event-ID", "0")
		resp, err := client.Do(r)
		benchMust(b, err)
		_, err = io.Copy(io.Discard, resp.Body)
		benchMust(b, err)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
	b.ReportMetric(float64(counter.flushes.Load())/float64(b.N), "flushes/op")
}
