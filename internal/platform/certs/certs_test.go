package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"
)

// TestMissingName: a serving certificate is re-issued exactly when it lacks a
// requested DNS name; unparsable data is left to the rotator.
func TestMissingName(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "svc.ns.svc"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"svc.ns.svc", "svc"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	for _, c := range []struct {
		name  string
		pem   []byte
		names []string
		want  string
	}{
		{"covers every name", certPEM, []string{"svc.ns.svc", "svc"}, ""},
		{"a name was added", certPEM, []string{"svc.ns.svc", "svc", "svc.ns"}, "svc.ns"},
		{"no certificate yet", nil, []string{"svc"}, ""},
		{"garbage", []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), []string{"svc"}, ""},
	} {
		if got := missingName(c.pem, c.names); got != c.want {
			t.Errorf("%s: missingName = %q, want %q", c.name, got, c.want)
		}
	}
}
