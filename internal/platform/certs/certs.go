// Package certs keeps a self-managed CA and serving certificate in a Secret,
// rotated before they expire, and written to a certificate directory for a
// TLS server to serve (through controller-runtime's certwatcher). It wraps
// open-policy-agent/cert-controller's rotator, which also injects the CA into
// webhook configurations when asked to; the admission webhooks
// (internal/manager/webhook) and the dispatcher's API (cmd/dispatcher) use it.
//
// The Secret holds tls.crt, tls.key, ca.crt and ca.key as cert-controller
// writes them. The CA survives restarts (it lives in the Secret), so clients
// that trust ca.crt keep working while serving certificates rotate.
package certs

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

const (
	// CACertKey and CAKeyKey are the Secret keys of the CA certificate and
	// key (cert-controller's names); tls.crt and tls.key hold the serving pair.
	CACertKey = "ca.crt"
	CAKeyKey  = "ca.key"

	// defaultCAName and defaultCAOrganization name the CA certificate.
	defaultCAName         = "harness-operator-ca"
	defaultCAOrganization = "harness-operator"
	// defaultFieldOwner is the field manager of the rotator's writes.
	defaultFieldOwner = "harness-operator-cert-rotator"
	// syncInterval is how often the certificate directory is compared with
	// the Secret: a rotated certificate is served within about this long.
	syncInterval = time.Second
)

// Options configure a self-managed CA and serving certificate kept in a
// Secret, rotated before they expire (open-policy-agent/cert-controller).
type Options struct {
	// SecretNamespace and SecretName locate the Secret holding the certificates.
	SecretNamespace, SecretName string
	// CertDir is where the TLS server reads tls.crt and tls.key.
	CertDir string
	// DNSName is the main name of the serving certificate (its common name;
	// the one cert-controller checks the certificate against), e.g. the
	// Service's DNS name, or localhost outside a cluster.
	DNSName string
	// ExtraDNSNames are further names of the serving certificate.
	ExtraDNSNames []string
	// CAName is the CA certificate's common name (default harness-operator-ca).
	CAName string
	// ServerCertValidity, RotationCheckInterval and Lookahead set how long a
	// serving certificate lives, how often expiry is checked, and how long
	// before expiry it is replaced. Zero keeps cert-controller's defaults
	// (one year, 12 hours, 90 days).
	ServerCertValidity, RotationCheckInterval, Lookahead time.Duration
	// SyncCertDirFromSecret copies the Secret into CertDir. In a cluster the
	// kubelet may project the Secret volume; a process running outside one
	// (make run, tests), or one that must not wait for the kubelet's volume
	// sync, does the projection itself.
	SyncCertDirFromSecret bool
	// CAFile, when set (with SyncCertDirFromSecret), also receives the CA
	// certificate (PEM, never a key) whenever it changes, for clients.
	CAFile string
	// RequireLeaderElection runs rotation on the leader only.
	RequireLeaderElection bool
	// Webhooks are the webhook configurations the CA is injected into (none
	// for a plain TLS server).
	Webhooks []rotator.WebhookInfo
	// ControllerName names the rotator's controller (cert-controller's
	// default when empty); distinct names let several rotators share a process.
	ControllerName string
}

// names returns every DNS name of the serving certificate.
func (o Options) names() []string {
	return append([]string{o.DNSName}, o.ExtraDNSNames...)
}

// AddRotation adds certificate rotation to the manager and returns a channel
// closed once the certificates are in CertDir (and the CA is injected into
// o.Webhooks): start serving only then, or the server has no certificate.
//
// It creates the Secret when missing and, when the names of the serving
// certificate changed, drops it from the Secret so the rotator issues a new
// one signed by the same CA (cert-controller checks the main name only).
func AddRotation(mgr ctrl.Manager, o Options) (<-chan struct{}, error) {
	if o.SecretNamespace == "" || o.SecretName == "" || o.DNSName == "" || o.CertDir == "" {
		return nil, errors.New("self-managed certificates: secret namespace and name, DNS name and certificate directory are required")
	}
	if o.CAFile != "" && !o.SyncCertDirFromSecret {
		return nil, errors.New("self-managed certificates: a CA file is written only when the certificate directory is synced from the Secret")
	}
	key := types.NamespacedName{Namespace: o.SecretNamespace, Name: o.SecretName}
	if err := ensureSecret(mgr, key, o.names()); err != nil {
		return nil, err
	}
	caName := o.CAName
	if caName == "" {
		caName = defaultCAName
	}
	rotated := make(chan struct{})
	r := &rotator.CertRotator{
		SecretKey:              key,
		CertDir:                o.CertDir,
		CAName:                 caName,
		CAOrganization:         defaultCAOrganization,
		DNSName:                o.DNSName,
		ExtraDNSNames:          o.ExtraDNSNames,
		IsReady:                rotated,
		RequireLeaderElection:  o.RequireLeaderElection,
		ServerCertDuration:     o.ServerCertValidity,
		RotationCheckFrequency: o.RotationCheckInterval,
		LookaheadInterval:      o.Lookahead,
		FieldOwner:             defaultFieldOwner,
		Webhooks:               o.Webhooks,
		ControllerName:         o.ControllerName,
	}
	if err := rotator.AddRotator(mgr, r); err != nil {
		return nil, fmt.Errorf("add certificate rotator for Secret %s: %w", key, err)
	}
	if !o.SyncCertDirFromSecret {
		return rotated, nil
	}
	// A replica that does not lead never runs the rotator (with
	// RequireLeaderElection), so its certificate is ready once the sync
	// wrote the leader's from the Secret: whichever comes first.
	synced := make(chan struct{})
	if err := mgr.Add(&certDirSync{reader: mgr.GetAPIReader(), key: key, dir: o.CertDir, caFile: o.CAFile, synced: synced}); err != nil {
		return nil, fmt.Errorf("add certificate directory sync: %w", err)
	}
	ready := make(chan struct{})
	if err := mgr.Add(firstOf{rotated, synced, ready}); err != nil {
		return nil, fmt.Errorf("add certificate readiness: %w", err)
	}
	return ready, nil
}

// firstOf closes out once a or b is closed, or gives up when the manager
// stops; it runs on every replica.
type firstOf struct{ a, b, out chan struct{} }

var _ manager.LeaderElectionRunnable = firstOf{}

func (firstOf) NeedLeaderElection() bool { return false }

func (f firstOf) Start(ctx context.Context) error {
	select {
	case <-f.a:
	case <-f.b:
	case <-ctx.Done():
		return nil
	}
	close(f.out)
	return nil
}

// ensureSecret creates the (empty) certificate Secret the rotator fills in,
// unless it exists: the rotator only updates an existing Secret. An existing
// serving certificate that lacks one of names is removed (the CA stays).
// It uses a direct client: the manager's cache has not started, and the
// callers' clients may not cache Secrets at all.
func ensureSecret(mgr ctrl.Manager, key types.NamespacedName, names []string) error {
	c, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return fmt.Errorf("create client: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: map[string]string{"app.kubernetes.io/name": "harness-operator"}},
		// Opaque: kubernetes.io/tls would refuse the empty Secret the rotator fills in.
		Type: corev1.SecretTypeOpaque,
	}
	err = c.Create(ctx, secret)
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create certificate Secret %s: %w", key, err)
	}
	if err := c.Get(ctx, key, secret); err != nil {
		return fmt.Errorf("read certificate Secret %s: %w", key, err)
	}
	if missing := missingName(secret.Data[corev1.TLSCertKey], names); missing != "" {
		ctrl.Log.WithName("certs").Info("the serving certificate lacks a DNS name: issuing a new one from the same CA", "secret", key, "missing", missing)
		delete(secret.Data, corev1.TLSCertKey)
		delete(secret.Data, corev1.TLSPrivateKeyKey)
		if err := c.Update(ctx, secret); err != nil {
			return fmt.Errorf("drop the outdated serving certificate from Secret %s: %w", key, err)
		}
	}
	return nil
}

// missingName returns the first of names the PEM certificate is not valid
// for, or "" when it covers all (or there is no parsable certificate, which
// the rotator replaces anyway).
func missingName(certPEM []byte, names []string) string {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return ""
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return ""
	}
	for _, n := range names {
		if cert.VerifyHostname(n) != nil {
			return n
		}
	}
	return ""
}

// certDirSync projects the certificate Secret into the certificate directory,
// as the kubelet does for a Secret volume, without waiting for the kubelet's
// periodic volume sync.
type certDirSync struct {
	reader client.Reader
	key    types.NamespacedName
	dir    string
	caFile string
	// synced is closed once a complete set was written the first time.
	synced chan struct{}
	once   sync.Once
}

var _ manager.LeaderElectionRunnable = (*certDirSync)(nil)

// NeedLeaderElection is false: every replica that serves needs the files.
func (s *certDirSync) NeedLeaderElection() bool { return false }

// Start copies the Secret's tls.crt, tls.key and ca.crt into the directory
// (and ca.crt to caFile) whenever they change, until ctx ends. The server's
// certificate watcher picks up the new files.
func (s *certDirSync) Start(ctx context.Context) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("create certificate directory: %w", err)
	}
	tick := time.NewTicker(syncInterval)
	defer tick.Stop()
	for {
		if err := s.sync(ctx); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "sync certificates from the Secret", "secret", s.key)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func (s *certDirSync) sync(ctx context.Context) error {
	var secret corev1.Secret
	if err := s.reader.Get(ctx, s.key, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil // not created yet
		}
		return err
	}
	// Write only a complete set: a Secret the rotator has not filled in yet
	// (or is filling) is skipped.
	for _, name := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey, CACertKey} {
		if len(secret.Data[name]) == 0 {
			return nil
		}
	}
	// The certificate last: its presence is what the rotator (and a server
	// waiting for the first certificate) takes as "the pair is there". On
	// rotation the certificate watcher keeps the old pair until both match.
	files := []struct {
		path string
		data []byte
		mode os.FileMode
	}{
		{filepath.Join(s.dir, CACertKey), secret.Data[CACertKey], 0o644},
		{filepath.Join(s.dir, corev1.TLSPrivateKeyKey), secret.Data[corev1.TLSPrivateKeyKey], 0o600},
		{filepath.Join(s.dir, corev1.TLSCertKey), secret.Data[corev1.TLSCertKey], 0o600},
	}
	if s.caFile != "" {
		files = append(files, struct {
			path string
			data []byte
			mode os.FileMode
		}{s.caFile, secret.Data[CACertKey], 0o644})
	}
	for _, f := range files {
		if err := writeIfChanged(f.path, f.data, f.mode); err != nil {
			return err
		}
	}
	if s.synced != nil {
		s.once.Do(func() { close(s.synced) })
	}
	return nil
}

// writeIfChanged writes data to path unless the file already holds it.
func writeIfChanged(path string, data []byte, mode os.FileMode) error {
	if current, err := os.ReadFile(path); err == nil && bytes.Equal(current, data) {
		return nil
	}
	return WriteFileAtomic(path, data, mode)
}

// WriteFileAtomic writes data to path through a temporary file and a rename,
// so a reader never sees a half-written file.
func WriteFileAtomic(path string, data []byte, mode os.FileMode) error {
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
