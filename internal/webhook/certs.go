package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

// CertOptions configure the self-managed webhook certificates: a CA and a
// serving certificate kept in a Secret, rotated before they expire, with the
// CA injected into the webhook configurations (open-policy-agent/cert-controller).
type CertOptions struct {
	// SecretNamespace and SecretName locate the Secret holding the certificates.
	SecretNamespace, SecretName string
	// CertDir is where the webhook server reads tls.crt and tls.key.
	CertDir string
	// DNSName is the name the API server uses to reach the webhook server
	// (the Service's DNS name, or localhost outside a cluster).
	DNSName string
	// ServerCertValidity, RotationCheckInterval and Lookahead set how long a
	// serving certificate lives, how often expiry is checked, and how long
	// before expiry it is replaced. Zero keeps cert-controller's defaults.
	ServerCertValidity, RotationCheckInterval, Lookahead time.Duration
	// SyncCertDirFromSecret copies the Secret into CertDir. In a cluster the
	// kubelet projects the Secret volume; a manager running outside one (make
	// run, tests) has no kubelet, so it does the projection itself.
	SyncCertDirFromSecret bool
	// RequireLeaderElection runs rotation on the leader only.
	RequireLeaderElection bool
}

// AddCertRotation adds certificate rotation to the manager and returns a
// channel closed once the certificates are in CertDir and the CA is injected:
// register the webhooks (Setup) only then, or the webhook server starts
// without a certificate.
func AddCertRotation(mgr ctrl.Manager, o CertOptions) (<-chan struct{}, error) {
	if o.SecretNamespace == "" || o.SecretName == "" || o.DNSName == "" || o.CertDir == "" {
		return nil, errors.New("webhook certificates: secret namespace and name, DNS name and certificate directory are required")
	}
	if err := ensureSecret(mgr, o.SecretNamespace, o.SecretName); err != nil {
		return nil, err
	}
	ready := make(chan struct{})
	r := &rotator.CertRotator{
		SecretKey:              types.NamespacedName{Namespace: o.SecretNamespace, Name: o.SecretName},
		CertDir:                o.CertDir,
		CAName:                 "harness-operator-ca",
		CAOrganization:         "harness-operator",
		DNSName:                o.DNSName,
		IsReady:                ready,
		RequireLeaderElection:  o.RequireLeaderElection,
		ServerCertDuration:     o.ServerCertValidity,
		RotationCheckFrequency: o.RotationCheckInterval,
		LookaheadInterval:      o.Lookahead,
		FieldOwner:             "harness-operator-cert-rotator",
		Webhooks: []rotator.WebhookInfo{
			{Name: ValidatingConfigurationName, Type: rotator.Validating},
			{Name: MutatingConfigurationName, Type: rotator.Mutating},
		},
	}
	if err := rotator.AddRotator(mgr, r); err != nil {
		return nil, fmt.Errorf("add webhook certificate rotator: %w", err)
	}
	if o.SyncCertDirFromSecret {
		if err := mgr.Add(&certDirSync{reader: mgr.GetAPIReader(), key: r.SecretKey, dir: o.CertDir}); err != nil {
			return nil, fmt.Errorf("add certificate directory sync: %w", err)
		}
	}
	return ready, nil
}

// ensureSecret creates the (empty) certificate Secret the rotator fills in,
// unless it exists: the rotator only updates an existing Secret.
func ensureSecret(mgr ctrl.Manager, namespace, name string) error {
	c, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return fmt.Errorf("create client: %w", err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"app.kubernetes.io/name": "harness-operator"}},
		Type:       corev1.SecretTypeOpaque,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create webhook certificate Secret %s/%s: %w", namespace, name, err)
	}
	return nil
}

// certDirSync projects the certificate Secret into the certificate directory,
// as the kubelet does for a Secret volume (used outside a cluster only).
type certDirSync struct {
	reader client.Reader
	key    types.NamespacedName
	dir    string
}

var _ manager.LeaderElectionRunnable = (*certDirSync)(nil)

// NeedLeaderElection is false: every replica serves webhooks.
func (s *certDirSync) NeedLeaderElection() bool { return false }

// Start copies the Secret's tls.crt and tls.key into the directory whenever
// they change, until ctx ends. The webhook server's certificate watcher picks
// up the new files.
func (s *certDirSync) Start(ctx context.Context) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("create certificate directory: %w", err)
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if err := s.sync(ctx); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "sync webhook certificates", "secret", s.key)
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
			return nil // the rotator has not created it yet
		}
		return err
	}
	for _, name := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
		data := secret.Data[name]
		if len(data) == 0 {
			return nil
		}
		file := filepath.Join(s.dir, name)
		if current, err := os.ReadFile(file); err == nil && bytes.Equal(current, data) {
			continue
		}
		// Write then rename, so the watcher never reads a half-written file.
		tmp := file + ".tmp"
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, file); err != nil {
			return err
		}
	}
	return nil
}
