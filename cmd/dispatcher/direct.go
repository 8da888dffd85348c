package main

import (
	"k8s.io/client-go/rest"

	"github.com/openclaw/harness-operator/internal/platform/proxyenv"
)

// directConfig is cfg for every client the dispatcher builds from it (the
// manager's, the clientset, leader election, the metrics filter): the API
// server is reached directly, never through a proxy the environment names.
// A nil Proxy would mean client-go's default, the environment's
// (internal/platform/proxyenv says why the dispatcher uses none).
func directConfig(cfg *rest.Config) *rest.Config {
	if cfg == nil {
		return nil // run refuses its options before it needs a client
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Proxy = proxyenv.Never
	return cfg
}
