package webhook

import (
	"crypto/tls"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// tlsHandshakes counts the TLS handshakes the webhook server began. The API
// server calls in-cluster webhooks over HTTP/1.1 and keeps at most 25 idle
// connections to one server (client-go's transport), so more concurrent
// admissions than that open and close connections, and each new one costs a
// handshake with the serving certificate's RSA key
// (docs/benchmarks/admission.md reads this counter).
var tlsHandshakes = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "harness_webhook_tls_handshakes_total",
	Help: "TLS handshakes the admission webhook server began (one per ClientHello).",
})

func init() {
	ctrlmetrics.Registry.MustRegister(tlsHandshakes)
}

// CountTLSHandshakes is a webhook server TLS option that counts handshakes
// in harness_webhook_tls_handshakes_total. It keeps any GetConfigForClient
// already set.
func CountTLSHandshakes(c *tls.Config) {
	next := c.GetConfigForClient
	c.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		tlsHandshakes.Inc()
		if next != nil {
			return next(hello)
		}
		return nil, nil
	}
}
