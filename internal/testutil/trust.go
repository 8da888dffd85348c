package testutil

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
)

// TrustingTransport is an HTTPS transport that trusts only the CA
// certificates in caFile (a dispatcher's --tls-ca-out, an API server's CA)
// and never uses a proxy.
func TrustingTransport(caFile string) (*http.Transport, error) {
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("%s holds no certificate", caFile)
	}
	return &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}, nil
}
