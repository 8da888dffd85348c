// Package proxyenv removes proxy settings from a child process's
// environment. The project's tests and local systems talk only to loopback
// and to namespaces they create; a proxy variable inherited from the caller
// would send even loopback requests (Codex's HTTP client does) to a proxy
// off the machine.
package proxyenv

import "strings"

// IsProxy reports whether the variable named name is a proxy setting: its
// name ends in _proxy, in any case. That covers curl's and Go's
// (http_proxy, HTTPS_PROXY, ALL_PROXY, NO_PROXY), gRPC's and npm's
// (npm_config_https_proxy).
func IsProxy(name string) bool { return strings.HasSuffix(strings.ToLower(name), "_proxy") }

// Without returns env ("NAME=value" entries) without its proxy variables.
func Without(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); !IsProxy(k) {
			out = append(out, kv)
		}
	}
	return out
}
