package codex

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// testCA is a CA and a serving certificate it signed for 127.0.0.1.
type testCA struct {
	pem  []byte
	leaf tls.Certificate
}

func newTestCA(t *testing.T, name string) testCA {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, caCert, &leafKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return testCA{
		pem:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		leaf: tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: leafKey},
	}
}

// tlsStub is a stub model serving HTTPS on 127.0.0.1 with ca's certificate;
// it returns the stub and its https base URL.
func tlsStub(t *testing.T, ca testCA) (*stubmodel.Server, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := stubmodel.Serve(tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{ca.leaf}, MinVersion: tls.VersionTLS12}))
	t.Cleanup(s.Close)
	return s, "https://" + s.Addr() + "/v1"
}

// tlsTurn runs a turn with the text marker on th. It returns nil once the
// turn completed, or the turn's first error notice, after interrupting it:
// Codex takes a failed TLS handshake for a network outage and retries it
// (whatever request_max_retries says) until the turn is interrupted.
func tlsTurn(t *testing.T, th *appserver.Thread, marker string) *appserver.ErrorNotice {
	t.Helper()
	ctx := testCtx(t, 60*time.Second)
	turn, err := th.StartTurn(ctx, appserver.TurnStartParams{Input: []appserver.InputItem{appserver.TextInput(marker)}})
	if err != nil {
		t.Fatal(err)
	}
	for {
		ev, err := turn.Next(ctx)
		if err != nil {
			t.Fatalf("turn %s: %v", marker, err)
		}
		switch ev := ev.(type) {
		case appserver.ErrorNotice:
			if err := turn.Interrupt(ctx); err != nil {
				t.Fatal(err)
			}
			return &ev
		case appserver.TurnCompletedEvent:
			if ev.Turn.Status != appserver.TurnCompleted {
				t.Fatalf("turn %s ended %s", marker, ev.Turn.Status)
			}
			return nil
		}
	}
}

// noticeText is an error notice's message and details.
func noticeText(n *appserver.ErrorNotice) string {
	if n == nil {
		return "no error notice"
	}
	details := ""
	if n.Error.AdditionalDetails != nil {
		details = *n.Error.AdditionalDetails
	}
	return fmt.Sprintf("%q (%s, retried: %t)", n.Error.Message, details, n.WillRetry)
}

// Codex trusts an HTTPS provider whose CA is in the bundle named by
// CODEX_CA_CERTIFICATE, keeps trusting the platform's roots beside it, and
// verifies every other certificate: the design's open question 4 (TLS
// between app-server and gateway) and "The wire Codex speaks to a custom
// provider", TLS. SSL_CERT_FILE stands in for the platform's roots here: the
// roots loader (rustls-native-certs) reads it, while Codex's own bundle is
// CODEX_CA_CERTIFICATE's when both are set.
func TestModelProviderTrustsTheExtraCA(t *testing.T) {
	t.Parallel()
	codextest.Bin(t)
	gatewayCA, platformCA, unknownCA := newTestCA(t, "gateway-ca"), newTestCA(t, "platform-ca"), newTestCA(t, "unknown-ca")
	gateway, gatewayURL := tlsStub(t, gatewayCA)
	platform, platformURL := tlsStub(t, platformCA)
	unknown, unknownURL := tlsStub(t, unknownCA)

	dir := t.TempDir()
	bundle, roots := filepath.Join(dir, "gateway-ca.crt"), filepath.Join(dir, "platform-roots.crt")
	if err := os.WriteFile(bundle, gatewayCA.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(roots, platformCA.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	plain := stubmodel.Start(t)
	r := &rig{stub: plain, srv: codextest.Start(t, codextest.Options{ProviderURL: plain.BaseURL(),
		Env: []string{"CODEX_CA_CERTIFICATE=" + bundle, "SSL_CERT_FILE=" + roots}})}
	r.c = r.connect(t)

	def := func(url string) map[string]any {
		return map[string]any{"name": "tls", "base_url": url, "wire_api": "responses",
			"request_max_retries": 0, "stream_max_retries": 0, "experimental_bearer_token": "tls-token"}
	}
	for _, p := range []struct {
		name, url string
		stub      *stubmodel.Server
	}{{"gateway-ca", gatewayURL, gateway}, {"platform-ca", platformURL, platform}} {
		marker := "OVER-TLS-" + p.name
		if n := tlsTurn(t, startThread(t, r, onProvider(p.name, def(p.url))), marker); n != nil {
			t.Errorf("a turn against an HTTPS provider on the %s: %s", p.name, noticeText(n))
		} else if got := len(p.stub.RequestsContaining(marker)); got != 1 {
			t.Errorf("the HTTPS provider on the %s got %d requests", p.name, got)
		}
	}

	// The control: a provider whose CA is in neither is refused, so the
	// turns above were trusted through the bundle and the roots, not
	// unverified.
	n := tlsTurn(t, startThread(t, r, onProvider("unknown-ca", def(unknownURL))), "UNTRUSTED")
	if n == nil || n.Error.AdditionalDetails == nil || !strings.Contains(*n.Error.AdditionalDetails, "error sending request") {
		t.Errorf("a turn against an HTTPS provider on an unknown CA: %s, want a failure to send the request", noticeText(n))
	}
	if got := len(unknown.Requests()); got != 0 {
		t.Errorf("the provider on an unknown CA got %d requests", got)
	}
}
