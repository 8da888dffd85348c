package main

import (
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// TestServingTLSFiles: --tls-cert-file/--tls-key-file are served as given (no
// CA is generated or written), and half a pair or a bad SAN flag is refused.
func TestServingTLSFiles(t *testing.T) {
	dir := t.TempDir()
	cert, caPEM, err := selfManagedCert([]string{"dispatcher.example"}, []net.IP{net.ParseIP("10.0.0.7")}, time.Now())
	must(t, err)
	keyDER, err := x509.MarshalECPrivateKey(cert.PrivateKey.(*ecdsa.PrivateKey))
	must(t, err)
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	must(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600))
	must(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))

	caOut := filepath.Join(dir, "ca.pem")
	cfg, err := servingTLS(tlsOptions{certFile: certFile, keyFile: keyFile, caOut: caOut, dnsNames: "localhost"}, logr.Discard())
	must(t, err)
	leaf, err := x509.ParseCertificate(cfg.Certificates[0].Certificate[0])
	must(t, err)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "dispatcher.example"}); err != nil {
		t.Fatalf("the given certificate is not the one served: %v", err)
	}
	if _, err := os.Stat(caOut); !os.IsNotExist(err) {
		t.Fatalf("a CA was written with given certificate files: %v", err)
	}

	for name, o := range map[string]tlsOptions{
		"cert without key":  {certFile: certFile},
		"key without cert":  {keyFile: keyFile},
		"bad IP address":    {dnsNames: "localhost", ipAddresses: "not-an-ip"},
		"no names at all":   {dnsNames: " , ", ipAddresses: ""},
		"unreadable key":    {certFile: certFile, keyFile: filepath.Join(dir, "missing.key")},
		"CA dir is missing": {dnsNames: "localhost", caOut: filepath.Join(dir, "no", "such", "ca.pem")},
	} {
		if _, err := servingTLS(o, logr.Discard()); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
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
