package modelgateway

import (
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// TestAddedCountsEveryForwardedRequest: the time the gateway adds
// (harness_model_gateway_added_seconds, what `make bench` reads) is counted
// once for every forwarded request, not only for those whose upstream
// write the transport happened to report before the answer came back.
func TestAddedCountsEveryForwardedRequest(t *testing.T) {
	f := newFixture(t)
	cred := f.credential("team-a/uid-1")
	// Codex's first request is about 26 KB: the transport writes a body
	// that size past its buffer, straight to the connection.
	big := strings.Replace(testBody, `"tools":[]`, `"tools":[],"instructions":"`+strings.Repeat("x", 26<<10)+`"`, 1)
	const requests = 200
	for i := range requests {
		body := testBody
		if i%2 == 1 {
			body = big
		}
		if resp, body := f.post(cred, body); resp.StatusCode != http.StatusOK {
			t.Fatalf("a forwarded request: %d %.300s", resp.StatusCode, body)
		}
	}
	var m dto.Metric
	if err := f.gw.metrics.added.Write(&m); err != nil {
		t.Fatal(err)
	}
	if n := m.GetHistogram().GetSampleCount(); n != requests {
		t.Fatalf("added_seconds counted %d of %d forwarded requests", n, requests)
	}
}
