// Package kubedirect gives the dispatcher and the manager the configuration
// of every Kubernetes client they build: the API server is reached directly,
// never through a proxy the environment names (internal/platform/proxyenv
// says why they use none). It is a package of its own so that proxyenv,
// which the test isolation tool imports, stays free of client-go.
package kubedirect

import (
	"k8s.io/client-go/rest"

	"github.com/openclaw/harness-operator/internal/platform/proxyenv"
)

// Config is a copy of cfg whose clients use no proxy. A nil Proxy would mean
// client-go's default, the environment's. A nil cfg stays nil: the binaries
// refuse their options before they need a client.
func Config(cfg *rest.Config) *rest.Config {
	if cfg == nil {
		return nil
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Proxy = proxyenv.Never
	return cfg
}
