// Package externalserver is how the manager and the dispatcher reach the
// app-server of an AgentHarness with spec.external: its static token, the
// operator's dial policy checked on every resolved address
// (internal/platform/netguard), and the harness's own CA bundle when it has one.
package externalserver

import (
	"crypto/x509"
	"errors"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/platform/netguard"
)

// ErrNoCertificate is a caBundle without a PEM certificate.
var ErrNoCertificate = errors.New("spec.external.caBundle holds no PEM certificate")

// DialOptions are the options every dial (and /readyz probe) of ext uses.
func DialOptions(ext *v1alpha1.ExternalServer, token string, policy netguard.Policy) (appserver.WebSocketOptions, error) {
	opts := appserver.WebSocketOptions{Token: token, Dialer: policy.Dialer(nil)}
	if len(ext.CABundle) == 0 {
		return opts, nil
	}
	pool, err := CertPool(ext.CABundle)
	if err != nil {
		return appserver.WebSocketOptions{}, err
	}
	opts.RootCAs = pool
	return opts, nil
}

// CertPool parses a caBundle.
func CertPool(pem []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, ErrNoCertificate
	}
	return pool, nil
}
