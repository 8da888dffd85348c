package modelgateway

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// dispatcherStub is a dispatcher's holds endpoint over TLS: answer decides
// each answer; it counts requests and new connections.
type dispatcherStub struct {
	srv      *httptest.Server
	caFile   string
	requests atomic.Int32
	conns    atomic.Int32
}

func newDispatcherStub(t *testing.T, answer http.HandlerFunc) *dispatcherStub {
	t.Helper()
	d := &dispatcherStub{}
	d.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.requests.Add(1)
		// The question read whole: the server then sees the client leave
		// (the request's context ends), which a handler that waits needs.
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		answer(w, r)
	}))
	d.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			d.conns.Add(1)
		}
	}
	d.srv.StartTLS()
	t.Cleanup(d.srv.Close)
	d.caFile = filepath.Join(t.TempDir(), "ca.crt")
	writeTestFile(t, d.caFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: d.srv.Certificate().Raw})))
	return d
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// newClient is a HoldsClient of d with the token in a file of its own.
func (d *dispatcherStub) newClient(t *testing.T, token string, timeout time.Duration) (*HoldsClient, string) {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "token")
	writeTestFile(t, tokenFile, token+"\n")
	c, err := NewHoldsClient(HoldsClientOptions{DispatcherURL: d.srv.URL, CAFile: d.caFile, TokenFile: tokenFile, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c, tokenFile
}

// A grant the dispatcher says holds is true, another false; each question
// carries the token the file holds at that moment (kubelet rotates it),
// and the questions share one connection.
func TestHoldsClientAsksTheDispatcherWithTheCurrentToken(t *testing.T) {
	var sawToken atomic.Value
	d := newDispatcherStub(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != wire.ModelGatewayHoldsPath {
			http.NotFound(w, r)
			return
		}
		sawToken.Store(r.Header.Get("Authorization"))
		var q wire.HoldsRequest
		if err := wire.DecodeStrict(r.Body, &q); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_ = json.NewEncoder(w).Encode(wire.HoldsAnswer{Holds: q.Lease == "team-a/uid-1" && q.Token == 7})
	})
	c, tokenFile := d.newClient(t, "token-1", 0)
	ctx := context.Background()
	if ok, err := c.Holds(ctx, "team-a/uid-1", 7); err != nil || !ok {
		t.Fatalf("the current grant: %v, %v; want true", ok, err)
	}
	if got := sawToken.Load(); got != "Bearer token-1" {
		t.Fatalf("Authorization %q, want the file's token", got)
	}
	if ok, err := c.Holds(ctx, "team-a/uid-1", 6); err != nil || ok {
		t.Fatalf("an old grant: %v, %v; want false", ok, err)
	}
	writeTestFile(t, tokenFile, "token-2\n")
	if ok, err := c.Holds(ctx, "team-a/uid-1.call", 7); err != nil || ok {
		t.Fatalf("another lease key: %v, %v; want false", ok, err)
	}
	if got := sawToken.Load(); got != "Bearer token-2" {
		t.Fatalf("after the token file changed, Authorization %q; want the new token", got)
	}
	if n, conns := d.requests.Load(), d.conns.Load(); n != 3 || conns != 1 {
		t.Fatalf("%d requests on %d connections; want 3 on 1 (one question each, the connection reused)", n, conns)
	}
}

// Whatever is not a 200 with {"holds": true|false} is an error, after one
// request: the gateway refuses then. A false is never asked again either.
func TestHoldsClientFailsClosed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer http.HandlerFunc
		want   string // part of the error; "" for a clean false
	}{
		{"false is final", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"holds":false}`)) }, ""},
		{"a store that cannot answer", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(wire.Error{Code: wire.CodeStoreUnavailable, Message: "the dispatcher's store could not say"})
		}, "503: StoreUnavailable: the dispatcher's store could not say"},
		{"a refusal of the gateway's user", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusForbidden)
			_ = json.NewEncoder(w).Encode(wire.Error{Code: wire.CodeForbidden, Message: "only the model gateway's ServiceAccount"})
		}, "403: Forbidden"},
		{"a 500 that is not the API's", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "boom", http.StatusInternalServerError) }, "500: boom"},
		{"not JSON", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`yes`)) }, "not {\"holds\""},
		{"holds of the wrong type", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"holds":"true"}`)) }, "holds"},
		{"no holds", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{}`)) }, "no \"holds\""},
		{"a redirect is not followed", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
		}, "307"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDispatcherStub(t, tc.answer)
			c, _ := d.newClient(t, "token-1", DefaultHoldsTimeout)
			ok, err := c.Holds(context.Background(), "team-a/uid-1", 7)
			switch {
			case tc.want == "" && (err != nil || ok):
				t.Fatalf("Holds = %v, %v; want false", ok, err)
			case tc.want != "" && (err == nil || ok || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Holds = %v, %v; want an error naming %q", ok, err, tc.want)
			case tc.want != "" && strings.Contains(err.Error(), "token-1"):
				t.Fatalf("the error %q quotes the bearer token", err)
			}
			if n := d.requests.Load(); n != 1 {
				t.Fatalf("%d requests; want exactly 1 (no retry)", n)
			}
		})
	}
}

// A dispatcher that does not answer within the timeout is an error, after
// exactly one request. The connection is opened by a first question, so
// the timeout that strikes is the answer's, not a slow TLS handshake's,
// and the silent handler is released before the server closes.
func TestHoldsClientGivesUpOnASilentDispatcher(t *testing.T) {
	var questions atomic.Int32
	release := make(chan struct{})
	d := newDispatcherStub(t, func(w http.ResponseWriter, r *http.Request) {
		if questions.Add(1) == 1 {
			_, _ = w.Write([]byte(`{"holds":true}`))
			return
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) }) // before the server's Close (cleanups run last first)
	c, _ := d.newClient(t, "token-1", time.Second)
	if ok, err := c.Holds(context.Background(), "team-a/uid-1", 7); err != nil || !ok {
		t.Fatalf("the first question: %v, %v; want true", ok, err)
	}
	ok, err := c.Holds(context.Background(), "team-a/uid-1", 7)
	if err == nil || ok || !strings.Contains(err.Error(), "deadline exceeded") || strings.Contains(err.Error(), "token-1") {
		t.Fatalf("Holds = %v, %v; want an error naming the deadline, not the token", ok, err)
	}
	if n := d.requests.Load(); n != 2 {
		t.Fatalf("%d requests; want exactly 2 (no retry)", n)
	}
}

// The dispatcher's certificate is checked against the CA file: a server on
// another CA is an error, and the token is not sent to it.
func TestHoldsClientTrustsOnlyTheDispatchersCA(t *testing.T) {
	d := newDispatcherStub(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"holds":true}`)) })
	// Another CA, for the same address (every httptest server has one
	// certificate).
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "another CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	otherCA := filepath.Join(t.TempDir(), "other-ca.crt")
	writeTestFile(t, otherCA, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	tokenFile := filepath.Join(t.TempDir(), "token")
	writeTestFile(t, tokenFile, "token-1")
	c, err := NewHoldsClient(HoldsClientOptions{DispatcherURL: d.srv.URL, CAFile: otherCA, TokenFile: tokenFile})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	if ok, err := c.Holds(context.Background(), "team-a/uid-1", 7); err == nil || ok || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a dispatcher on another CA: %v, %v; want a certificate error", ok, err)
	}
	if n := d.requests.Load(); n != 0 {
		t.Fatalf("%d requests reached the server on another CA", n)
	}
}

// Options that cannot work are refused at start, naming what is wrong.
func TestNewHoldsClientRefusesBadOptions(t *testing.T) {
	dir := t.TempDir()
	token, empty, ca := filepath.Join(dir, "token"), filepath.Join(dir, "empty"), filepath.Join(dir, "ca.crt")
	writeTestFile(t, token, "t")
	writeTestFile(t, empty, "\n")
	writeTestFile(t, ca, "not a certificate")
	for _, tc := range []struct {
		name string
		o    HoldsClientOptions
		want string
	}{
		{"no URL", HoldsClientOptions{TokenFile: token}, "URL is required"},
		{"plain http", HoldsClientOptions{DispatcherURL: "http://dispatcher:8443", TokenFile: token}, "must be https"},
		{"a query", HoldsClientOptions{DispatcherURL: "https://dispatcher:8443/?a=b", TokenFile: token}, "must not carry"},
		{"a CA file without a certificate", HoldsClientOptions{DispatcherURL: "https://dispatcher:8443", CAFile: ca, TokenFile: token}, "holds no PEM certificate"},
		{"no token file", HoldsClientOptions{DispatcherURL: "https://dispatcher:8443", TokenFile: filepath.Join(dir, "missing")}, "ServiceAccount token"},
		{"an empty token file", HoldsClientOptions{DispatcherURL: "https://dispatcher:8443", TokenFile: empty}, "is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewHoldsClient(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewHoldsClient = %v, want an error naming %q", err, tc.want)
			}
		})
	}
}
