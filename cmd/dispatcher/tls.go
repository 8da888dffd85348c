package main

import (
	"context"
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
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"

	"github.com/openclaw/harness-operator/internal/platform/certs"
)

// selfManagedValidity is the validity of the ephemeral CA and serving
// certificate; both are generated anew at every start.
const selfManagedValidity = 365 * 24 * time.Hour

// tlsOptions are the API listener's TLS settings.
type tlsOptions struct {
	certFile    string
	keyFile     string
	secretName  string // the Secret of the self-managed CA and certificate
	secretNS    string // its namespace; default POD_NAMESPACE, then the Lease's
	certDir     string // where the Secret is copied; default a temporary directory
	dnsNames    string // comma list, self-managed certificates
	ipAddresses string // comma list, ephemeral certificate only
	caOut       string // where the self-managed CA's PEM is written

	// certValidity, certLookahead and certCheckInterval tune rotation of the
	// Secret-backed serving certificate.
	certValidity, certLookahead, certCheckInterval time.Duration
}

// tlsMode is where the API's certificate comes from.
type tlsMode int

const (
	// tlsEphemeral: a CA and certificate generated at every start (make run).
	tlsEphemeral tlsMode = iota
	// tlsFiles: --tls-cert-file/--tls-key-file, reloaded when they change.
	tlsFiles
	// tlsSecret: a CA and rotated certificate kept in --tls-secret-name.
	tlsSecret
)

// servingTLS supplies the API listener's TLS configuration. newServingTLS
// checks the flags (and loads given files) before anything starts; addTo
// adds what keeps the certificate current to the manager; config blocks until
// a certificate exists. Keys are never logged.
type servingTLS struct {
	mode tlsMode
	log  logr.Logger
	// static is the ephemeral mode's configuration.
	static *tls.Config
	// watcher serves --tls-cert-file/--tls-key-file (files mode).
	watcher *certwatcher.CertWatcher
	// certs configure the Secret mode; ready closes once its files exist.
	certs certs.Options
	ready <-chan struct{}
	// tempDir is the certificate directory this process created (removed by close).
	tempDir string
}

// newServingTLS checks the TLS flags. leaderNS is the fallback namespace of
// the certificate Secret after $POD_NAMESPACE.
func newServingTLS(o tlsOptions, leaderNS string, log logr.Logger) (*servingTLS, error) {
	s := &servingTLS{log: log}
	files := o.certFile != "" || o.keyFile != ""
	switch {
	case files && o.secretName != "":
		return nil, errors.New("--tls-cert-file/--tls-key-file and --tls-secret-name exclude each other")
	case o.secretName == "" && (o.secretNS != "" || o.certDir != ""):
		return nil, errors.New("--tls-secret-namespace and --tls-cert-dir apply only with --tls-secret-name")
	case files:
		if o.certFile == "" || o.keyFile == "" {
			return nil, errors.New("--tls-cert-file and --tls-key-file go together")
		}
		w, err := certwatcher.New(o.certFile, o.keyFile)
		if err != nil {
			return nil, fmt.Errorf("load --tls-cert-file/--tls-key-file: %w", err)
		}
		s.mode, s.watcher = tlsFiles, w
		log.Info("serving the given certificate files, reloaded when they change", "certFile", o.certFile, "keyFile", o.keyFile)
		return s, nil
	case o.secretName != "":
		return s, s.secretMode(o, leaderNS)
	}
	cfg, err := ephemeralTLS(o, log)
	if err != nil {
		return nil, err
	}
	s.mode, s.static = tlsEphemeral, cfg
	return s, nil
}

// secretMode checks the flags of Secret-backed certificates.
func (s *servingTLS) secretMode(o tlsOptions, leaderNS string) error {
	ns := namespaceOrDefault(o.secretNS, leaderNS)
	if ns == "" {
		return errors.New("--tls-secret-name needs the Secret's namespace: set --tls-secret-namespace (default: $POD_NAMESPACE, then --leader-election-namespace; neither is set)")
	}
	dns := splitList(o.dnsNames)
	if len(dns) == 0 {
		return errors.New("--tls-secret-name needs --tls-dns-names (the first is the certificate's main name)")
	}
	for name, d := range map[string]time.Duration{"--tls-cert-validity": o.certValidity, "--tls-cert-lookahead": o.certLookahead, "--tls-cert-check-interval": o.certCheckInterval} {
		if d <= 0 {
			return fmt.Errorf("%s must be positive, got %s", name, d)
		}
	}
	if o.certLookahead >= o.certValidity {
		return fmt.Errorf("--tls-cert-lookahead (%s) must be shorter than --tls-cert-validity (%s), or every check replaces the certificate", o.certLookahead, o.certValidity)
	}
	if o.caOut != "" {
		if st, err := os.Stat(filepath.Dir(o.caOut)); err != nil || !st.IsDir() {
			return fmt.Errorf("--tls-ca-out: the directory of %s does not exist", o.caOut)
		}
	}
	dir := o.certDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "harness-dispatcher-tls-")
		if err != nil {
			return fmt.Errorf("create a certificate directory (set --tls-cert-dir): %w", err)
		}
		dir, s.tempDir = tmp, tmp
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("--tls-cert-dir %s: %w", dir, err)
	}
	s.mode = tlsSecret
	s.certs = certs.Options{
		SecretNamespace: ns, SecretName: o.secretName, CertDir: dir,
		DNSName: dns[0], ExtraDNSNames: dns[1:], CAName: "harness-dispatcher-ca",
		ServerCertValidity: o.certValidity, Lookahead: o.certLookahead, RotationCheckInterval: o.certCheckInterval,
		// The dispatcher copies the Secret itself: no Secret volume to wait for,
		// and --tls-ca-out follows the CA.
		SyncCertDirFromSecret: true, CAFile: o.caOut,
	}
	return nil
}

// namespaceOrDefault is the namespace of a Secret the dispatcher keeps:
// ns, else $POD_NAMESPACE, else leaderNS (--leader-election-namespace).
func namespaceOrDefault(ns, leaderNS string) string {
	for _, fallback := range []string{os.Getenv("POD_NAMESPACE"), leaderNS} {
		if ns == "" {
			ns = fallback
		}
	}
	return ns
}

// addTo adds to the manager what keeps the certificate current: the file
// watcher, or the rotator of the Secret (on the leader only when leaderElect;
// the other replicas serve what the leader wrote to the Secret, synced into
// their certificate directory). controllerName names the rotator's controller.
func (s *servingTLS) addTo(mgr ctrl.Manager, leaderElect bool, controllerName string) error {
	switch s.mode {
	case tlsFiles:
		if err := mgr.Add(s.watcher); err != nil {
			return fmt.Errorf("add the certificate watcher: %w", err)
		}
	case tlsSecret:
		o := s.certs
		o.RequireLeaderElection, o.ControllerName = leaderElect, controllerName
		ready, err := certs.AddRotation(mgr, o)
		if err != nil {
			return fmt.Errorf("--tls-secret-name: %w", err)
		}
		s.ready = ready
		s.log.Info("serving a self-managed certificate kept in a Secret", "secret", o.SecretNamespace+"/"+o.SecretName,
			"dnsNames", append([]string{o.DNSName}, o.ExtraDNSNames...), "certDir", o.CertDir, "caFile", o.CAFile)
	}
	return nil
}

// config returns the listener's TLS configuration once a certificate exists:
// in Secret mode it waits for the rotator's first certificate (the API does
// not listen before), then serves the directory through a certwatcher that
// runs until ctx ends.
func (s *servingTLS) config(ctx context.Context) (*tls.Config, error) {
	switch s.mode {
	case tlsEphemeral:
		return s.static, nil
	case tlsFiles:
		return watchedConfig(s.watcher), nil
	}
	if s.ready == nil {
		return nil, errors.New("the certificate rotator was not added")
	}
	s.log.Info("waiting for the serving certificate in the Secret", "secret", s.certs.SecretNamespace+"/"+s.certs.SecretName)
	select {
	case <-s.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	w, err := certwatcher.New(filepath.Join(s.certs.CertDir, corev1.TLSCertKey), filepath.Join(s.certs.CertDir, corev1.TLSPrivateKeyKey))
	if err != nil {
		return nil, fmt.Errorf("load the certificate copied from the Secret: %w", err)
	}
	go func() {
		if err := w.Start(ctx); err != nil {
			s.log.Error(err, "certificate watcher stopped: rotated certificates are not picked up")
		}
	}()
	return watchedConfig(w), nil
}

// close removes the temporary certificate directory, if one was created.
func (s *servingTLS) close() {
	if s.tempDir != "" {
		_ = os.RemoveAll(s.tempDir)
	}
}

// watchedConfig serves the watcher's current certificate.
func watchedConfig(w *certwatcher.CertWatcher) *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}, GetCertificate: w.GetCertificate}
}

// ephemeralTLS returns a configuration serving a certificate signed by a CA
// generated here (its PEM written to caOut when set): both change at every
// start, for local development.
func ephemeralTLS(o tlsOptions, log logr.Logger) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
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
		if err := certs.WriteFileAtomic(o.caOut, caPEM, 0o644); err != nil {
			return nil, fmt.Errorf("write --tls-ca-out: %w", err)
		}
	}
	log.Info("generated an ephemeral serving certificate and CA (they change at every start: use --tls-secret-name or --tls-cert-file in a cluster)",
		"dnsNames", dns, "ipAddresses", o.ipAddresses, "caFile", o.caOut)
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
