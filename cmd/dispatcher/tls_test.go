package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/openclaw/harness-operator/internal/platform/certs"
)

// TestServingTLSFiles: --tls-cert-file/--tls-key-file are served as given (no
// CA is generated or written), and conflicting or incomplete TLS flags are
// refused before anything starts.
func TestServingTLSFiles(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	dir := t.TempDir()
	cert, caPEM, err := selfManagedCert([]string{"dispatcher.example"}, []net.IP{net.ParseIP("10.0.0.7")}, time.Now())
	must(t, err)
	certFile, keyFile := writePair(t, dir, cert)

	caOut := filepath.Join(dir, "ca.pem")
	s, err := newServingTLS(tlsOptions{certFile: certFile, keyFile: keyFile, caOut: caOut, dnsNames: "localhost"}, "", logr.Discard())
	must(t, err)
	cfg, err := s.config(context.Background())
	must(t, err)
	served, err := cfg.GetCertificate(nil)
	must(t, err)
	leaf, err := x509.ParseCertificate(served.Certificate[0])
	must(t, err)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "dispatcher.example"}); err != nil {
		t.Fatalf("the given certificate is not the one served: %v", err)
	}
	if _, err := os.Stat(caOut); !os.IsNotExist(err) {
		t.Fatalf("a CA was written with given certificate files: %v", err)
	}

	secret := tlsOptions{secretName: "dispatcher-tls", secretNS: "ns", dnsNames: "localhost",
		certValidity: time.Hour, certLookahead: 10 * time.Minute, certCheckInterval: time.Minute}
	with := func(f func(*tlsOptions)) tlsOptions { o := secret; f(&o); return o }
	for name, o := range map[string]tlsOptions{
		"cert without key":           {certFile: certFile},
		"key without cert":           {keyFile: keyFile},
		"bad IP address":             {dnsNames: "localhost", ipAddresses: "not-an-ip"},
		"no names at all":            {dnsNames: " , ", ipAddresses: ""},
		"unreadable key":             {certFile: certFile, keyFile: filepath.Join(dir, "missing.key")},
		"CA dir is missing":          {dnsNames: "localhost", caOut: filepath.Join(dir, "no", "such", "ca.pem")},
		"files and a Secret":         with(func(o *tlsOptions) { o.certFile, o.keyFile = certFile, keyFile }),
		"Secret without a namespace": with(func(o *tlsOptions) { o.secretNS = "" }),
		"Secret without DNS names":   with(func(o *tlsOptions) { o.dnsNames = "," }),
		"lookahead beyond validity":  with(func(o *tlsOptions) { o.certLookahead = 2 * time.Hour }),
		"zero check interval":        with(func(o *tlsOptions) { o.certCheckInterval = 0 }),
		"Secret CA dir is missing":   with(func(o *tlsOptions) { o.caOut = filepath.Join(dir, "no", "such", "ca.pem") }),
		"namespace without a Secret": {secretNS: "ns", dnsNames: "localhost"},
		"cert dir without a Secret":  {certDir: dir, dnsNames: "localhost"},
	} {
		if _, err := newServingTLS(o, "", logr.Discard()); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// The Secret's namespace falls back to POD_NAMESPACE, then the Lease's.
	for _, c := range []struct{ podNS, leaseNS, want string }{{"pod-ns", "lease-ns", "pod-ns"}, {"", "lease-ns", "lease-ns"}} {
		t.Setenv("POD_NAMESPACE", c.podNS)
		s, err := newServingTLS(with(func(o *tlsOptions) { o.secretNS = "" }), c.leaseNS, logr.Discard())
		must(t, err)
		s.close()
		if s.certs.SecretNamespace != c.want {
			t.Errorf("POD_NAMESPACE %q, lease namespace %q: Secret namespace %q, want %q", c.podNS, c.leaseNS, s.certs.SecretNamespace, c.want)
		}
	}
}

// writePair writes cert's leaf and ECDSA key as tls.crt and tls.key in dir
// (through renames, as a Secret volume update replaces files).
func writePair(t *testing.T, dir string, cert tls.Certificate) (certFile, keyFile string) {
	t.Helper()
	keyDER, err := x509.MarshalECPrivateKey(cert.PrivateKey.(*ecdsa.PrivateKey))
	must(t, err)
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	must(t, certs.WriteFileAtomic(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	must(t, certs.WriteFileAtomic(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600))
	return certFile, keyFile
}

// TestSelfManagedCert: the CA signs a serving certificate for every requested
// name and address, and the CA PEM holds only the certificate, no key.
func TestSelfManagedCert(t *testing.T) {
	cert, caPEM, err := selfManagedCert([]string{"localhost", "dispatcher.ns.svc"}, []net.IP{net.ParseIP("127.0.0.1")}, time.Now())
	must(t, err)
	if strings.Contains(string(caPEM), "PRIVATE KEY") {
		t.Fatal("the CA PEM holds a private key")
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("no CA certificate in the PEM")
	}
	for _, name := range []string{"localhost", "dispatcher.ns.svc", "127.0.0.1"} {
		if _, err := cert.Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := cert.Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "other.example"}); err == nil {
		t.Error("verified for a name it was not issued for")
	}
}
