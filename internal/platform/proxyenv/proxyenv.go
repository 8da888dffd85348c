// Package proxyenv decides which of the project's HTTP requests may go
// through a proxy named by the environment (HTTPS_PROXY, HTTP_PROXY,
// NO_PROXY and their lower-case forms), and removes proxy settings from a
// child process's environment.
//
// The rule, one place for every client the binaries build:
//   - the dispatcher and the manager never use a proxy (Never): they talk to
//     the API server, to app-servers and to their database, all of which
//     they reach directly; a proxy would see their credentials and the
//     turns, and would dial app-servers past the netguard policy;
//   - the CLI uses the environment's proxy as kubectl does, except for
//     in-cluster and loopback hosts (Direct), which a proxy outside the
//     cluster cannot reach and must not see: NO_PROXY is easy to get wrong.
//
// The project's tests and local systems talk only to loopback and to
// namespaces they create; a proxy variable inherited from the caller would
// send even loopback requests (Codex's HTTP client does) to a proxy off the
// machine, so child processes get none (Without).
package proxyenv

import (
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"golang.org/x/net/http/httpproxy"
)

// APIServerHostEnv is where a pod finds its API server's address; the
// in-cluster client configuration reads it too.
const APIServerHostEnv = "KUBERNETES_SERVICE_HOST"

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

// Func is a proxy function: http.Transport's Proxy, rest.Config's Proxy.
type Func = func(*http.Request) (*url.URL, error)

// Never sends every request directly. It is the proxy function of every
// client of the dispatcher and the manager (rest.Config.Proxy, app-server
// dials): a nil rest.Config.Proxy would mean the environment's proxy.
func Never(*http.Request) (*url.URL, error) { return nil, nil }

// private are the ranges cluster Services and Pods live in (and the
// link-local ones): never proxied.
var private = []netip.Prefix{
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("fc00::/7"),
	netip.MustParsePrefix("fe80::/10"),
}

// Direct reports whether a request to host (a URL's host name, without
// port) must go directly, whatever the environment names as proxy:
//   - loopback and unspecified addresses, localhost and names under
//     .localhost;
//   - apiServerHost, the in-cluster API server ($KUBERNETES_SERVICE_HOST);
//   - private, shared and link-local addresses, where Services and Pods
//     live;
//   - cluster names: a single label (a Service of the namespace), names
//     under .svc, and names under .cluster.local (Services and Pods).
//
// An empty host is direct too: there is nothing to send to a proxy.
func Direct(host, apiServerHost string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "" || (apiServerHost != "" && host == strings.ToLower(strings.TrimSuffix(apiServerHost, "."))) {
		return true
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		addr = addr.Unmap().WithZone("")
		if addr.IsLoopback() || addr.IsUnspecified() {
			return true
		}
		for _, p := range private {
			if p.Contains(addr) {
				return true
			}
		}
		return false
	}
	return host == "localhost" || strings.HasSuffix(host, ".localhost") ||
		!strings.Contains(host, ".") ||
		strings.HasSuffix(host, ".svc") || strings.HasSuffix(host, ".cluster.local")
}

// FromEnvironment is the CLI's proxy function: the proxy the environment
// names (read from getenv now, as Go's http.ProxyFromEnvironment reads it
// at first use), for every request that Direct does not keep direct, with
// $KUBERNETES_SERVICE_HOST as the API server.
func FromEnvironment(getenv func(string) string) Func {
	env := func(upper string) string {
		if v := getenv(upper); v != "" {
			return v
		}
		return getenv(strings.ToLower(upper))
	}
	cfg := httpproxy.Config{HTTPProxy: env("HTTP_PROXY"), HTTPSProxy: env("HTTPS_PROXY"), NoProxy: env("NO_PROXY"),
		CGI: getenv("REQUEST_METHOD") != ""}
	proxy := cfg.ProxyFunc()
	apiServer := getenv(APIServerHostEnv)
	return func(req *http.Request) (*url.URL, error) {
		if Direct(req.URL.Hostname(), apiServer) {
			return nil, nil
		}
		return proxy(req.URL)
	}
}
