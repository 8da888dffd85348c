package webhook

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestCountTLSHandshakesCountsConnectionsNotRequests: requests on one
// kept-alive connection are one handshake; a new connection is another.
func TestCountTLSHandshakesCountsConnectionsNotRequests(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	srv.TLS = &tls.Config{NextProtos: []string{"http/1.1"}}
	CountTLSHandshakes(srv.TLS)
	srv.StartTLS()
	defer srv.Close()
	before := testutil.ToFloat64(tlsHandshakes)
	get := func(c *http.Client) {
		t.Helper()
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	c := srv.Client()
	for range 3 {
		get(c)
	}
	if got := testutil.ToFloat64(tlsHandshakes) - before; got != 1 {
		t.Fatalf("3 requests on one connection: %v handshakes, want 1", got)
	}
	c.CloseIdleConnections()
	get(c)
	if got := testutil.ToFloat64(tlsHandshakes) - before; got != 2 {
		t.Fatalf("after a new connection: %v handshakes, want 2", got)
	}
}
