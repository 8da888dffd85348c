package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
)

// selfManagedValidity is the validity of the generated CA and serving
// certificate; both are generated anew at every start.
const selfManagedValidity = 365 * 24 * time.Hour

// tlsOptions are the API listener's TLS settings.
type tlsOptions struct {
	certFile    string
	keyFile     string
	dnsNames    string // comma list, self-managed certificate
	ipAddresses string // comma list, self-managed certificate
	caOut       string // where the self-managed CA's PEM is written
}

// servingTLS returns the listener's TLS configuration: the given certificate
// files, else a self-managed certificate signed by a CA generated here (its
// PEM written to caOut when set). Keys are never logged or written.
func servingTLS(o tlsOptions, log logr.Logger) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	if o.certFile != "" || o.keyFile != "" {
		if o.certFile == "" || o.keyFile == "" {
			return nil, errors.New("--tls-cert-file and --tls-key-file go together")
		}
		cert, err := tls.LoadX509KeyPair(o.certFile, o.keyFile)
		if err != nil {
			return nil, fmt.Errorf("load --tls-cert-file/--tls-key-file: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
		return cfg, nil
	}
	dns := splitList(o.dnsNames)
	var ips []net.IP
	for _, s := range splitList(o.ipAddresses) {
		ip := net.ParseIP(s)
		if ip == nil {
			return nil, fmt.Errorf("--tls-ip-addresses: %q is not an IP address", s)
		}
		ips = append(ips, ip)
	}
	if len(dns) == 0 && len(ips) == 0 {
		return nil, errors.New("a self-managed certificate needs --tls-dns-names or --tls-ip-addresses")
	}
	cert, caPEM, err := selfManagedCert(dns, ips, time.Now())
	if err != nil {
		return nil, err
	}
	cfg.Certificates = []tls.Certificate{cert}
	if o.caOut != "" {
		if err := writeFileAtomic(o.caOut, caPEM, 0o644); err != nil {
			return nil, fmt.Errorf("write --tls-ca-out: %w", err)
		}
	}
	log.Info("generated a self-managed serving certificate", "dnsNames", dns, "ipAddresses", o.ipAddresses, "caFile", o.caOut)
	return cfg, nil
}

// selfManagedCert generates an ECDSA P-256 CA and a serving certificate for
// dns and ips signed by it; it returns the certificate (with its chain) and
// the CA's PEM.
func selfManagedCert(dns []string, ips []net.IP, now time.Time) (tls.Certificate, []byte, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("generate the CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "harness-dispatcher-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(selfManagedValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("create the CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("parse the CA certificate: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("generate the serving key: %w", err)
	}
	cn := "harness-dispatcher"
	if len(dns) > 0 {
		cn = dns[0]
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(selfManagedValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     dns,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("create the serving certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("parse the serving certificate: %w", err)
	}
	cert := tls.Certificate{Certificate: [][]byte{der, caDER}, PrivateKey: key, Leaf: leaf}
	return cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
}

// serial is a random 128-bit certificate serial number.
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		// crypto/rand does not fail on supported platforms.
		panic(err)
	}
	return n
}

// writeFileAtomic writes data to path through a temporary file and a rename,
// so a reader never sees a partial file.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
