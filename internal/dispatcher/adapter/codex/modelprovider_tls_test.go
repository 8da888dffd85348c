package codex

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
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

// Codex trusts an HTTPS provider whose CA is in the bundle named by
// CODEX_CA_CERTIFICATE, and still verifies every other provider's
// certificate: the design's open question 4 (TLS between app-server and
// gateway) and "The wire Codex speaks to a custom provider", TLS.
func TestModelProviderTrustsTheExtraCA(t *testing.T) {
	t.Parallel()
	codextest.Bin(t)
	gatewayCA, otherCA := newTestCA(t, "gateway-ca"), newTestCA(t, "other-ca")
	gateway, gatewayURL := tlsStub(t, gatewayCA)
	other, otherURL := tlsStub(t, otherCA)

	plain := stubmodel.Start(t)
	dir := t.TempDir()
	bundle := filepath.Join(dir, "gateway-ca.crt")
	if err := os.WriteFile(bundle, gatewayCA.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	r := &rig{stub: plain, srv: codextest.Start(t, codextest.Options{ProviderURL: plain.BaseURL(),
		Env: []string{"CODEX_CA_CERTIFICATE=" + bundle}})}
	r.c = r.connect(t)

	def := func(url string) map[string]any {
		return map[string]any{"name": "tls", "base_url": url, "wire_api": "responses",
			"request_max_retries": 0, "stream_max_retries": 0, "experimental_bearer_token": "tls-token"}
	}
	th := startThread(t, r, onProvider(gatewayID, def(gatewayURL)))
	ctx := testCtx(t, 60*time.Second)
	turn, err := th.StartTurn(ctx, appserver.TurnStartParams{Input: []appserver.InputItem{appserver.TextInput("OVER-TLS")}})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := turn.Wait(ctx); err != nil || res.Status != appserver.TurnCompleted {
		t.Fatalf("a turn against an HTTPS provider on the extra CA: %v %+v", err, res)
	}
	if n := len(gateway.RequestsContaining("OVER-TLS")); n != 1 {
		t.Errorf("the HTTPS provider on the extra CA got %d requests", n)
	}

	// The control: a provider whose CA is in no bundle is refused, so the
	// turn above was trusted through the bundle, not unverified. Codex
	// takes the failed handshake for a network outage and retries it
	// (whatever request_max_retries says) until the turn is interrupted.
	th = startThread(t, r, onProvider("other-ca", def(otherURL)))
	turn, err = th.StartTurn(ctx, appserver.TurnStartParams{Input: []appserver.InputItem{appserver.TextInput("UNTRUSTED")}})
	if err != nil {
		t.Fatal(err)
	}
	for {
		ev, err := turn.Next(ctx)
		if err != nil {
			t.Fatalf("a turn against an HTTPS provider on an unknown CA: %v before an error notice", err)
		}
		if n, ok := ev.(appserver.ErrorNotice); ok {
			if !n.WillRetry || n.Error.AdditionalDetails == nil || !strings.Contains(*n.Error.AdditionalDetails, "error sending request") {
				t.Errorf("the unknown CA's error notice: %+v, want a retried failure to send the request", n)
			}
			break
		}
	}
	if err := turn.Interrupt(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(other.Requests()); n != 0 {
		t.Errorf("the provider on an unknown CA got %d requests", n)
	}
}
