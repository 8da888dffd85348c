package proxyenv

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/openclaw/harness-operator/internal/testutil/proxytest"
)

func TestWithout(t *testing.T) {
	env := []string{
		"PATH=/bin", "HTTP_PROXY=http://192.0.2.9:3128", "https_proxy=http://192.0.2.9:3128",
		"All_Proxy=socks5://192.0.2.9:1080", "NO_PROXY=x", "npm_config_https_proxy=http://192.0.2.9:3128",
		"GRPC_PROXY=x", "HOME=/root", "PROXY_NOT=1",
	}
	if got, want := Without(env), []string{"PATH=/bin", "HOME=/root", "PROXY_NOT=1"}; !slices.Equal(got, want) {
		t.Fatalf("Without: %q, want %q", got, want)
	}
}

func TestDirect(t *testing.T) {
	const apiServer = "203.0.113.1" // a public address, to tell this rule from the private ranges'
	for _, tc := range []struct {
		host   string
		direct bool
	}{
		{"127.0.0.1", true},
		{"127.9.9.9", true},
		{"::1", true},
		{"0.0.0.0", true},
		{"::ffff:127.0.0.1", true},
		{"localhost", true},
		{"LOCALHOST.", true},
		{"dispatcher.localhost", true},
		{apiServer, true},
		{"10.96.0.1", true},
		{"172.20.3.4", true},
		{"192.168.1.10", true},
		{"100.64.0.7", true},
		{"169.254.169.254", true},
		{"fd00:10:96::1", true},
		{"fe80::1%eth0", true},
		{"kubernetes.default.svc", true},
		{"harness-dispatcher.harness-system.svc", true},
		{"harness-dispatcher.harness-system.svc.cluster.local", true},
		{"harness-dispatcher.harness-system.svc.cluster.local.", true},
		{"10-244-1-7.harness-system.pod.cluster.local", true},
		{"harness-dispatcher", true},
		{"", true},
		// What a proxy may carry: public names and addresses.
		{"203.0.113.2", false},
		{"2001:db8::1", false},
		{"api.example.com", false},
		{"dispatcher.example.com", false},
		{"svc.example.com", false},
		{"localhost.example.com", false},
		{"cluster.local.example.com", false},
	} {
		if got := Direct(tc.host, apiServer); got != tc.direct {
			t.Errorf("Direct(%q) = %v, want %v", tc.host, got, tc.direct)
		}
	}
}

// TestFromEnvironmentKeepsClusterAndLoopbackTrafficDirect: with every proxy
// variable naming a recording proxy, requests to the API server, Services,
// Pods and loopback go directly to their server and the proxy sees none of
// them. Control: a request to a public host reaches the proxy, as the
// environment asks; Never keeps even that one direct.
func TestFromEnvironmentKeepsClusterAndLoopbackTrafficDirect(t *testing.T) {
	proxy := proxytest.Start(t)
	env := map[string]string{APIServerHostEnv: "10.96.0.1"}
	for _, kv := range proxy.Env() {
		name, value, _ := strings.Cut(kv, "=")
		env[name] = value
	}
	var (
		mu      sync.Mutex
		reached []string
	)
	target := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		reached = append(reached, r.Host)
	}))
	defer target.Close()
	proxyURL, err := url.Parse(proxy.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxyAddr := proxyURL.Host
	// Every address but the proxy's is the target's: the test reaches only
	// loopback, and a direct request must arrive somewhere to be seen.
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr != proxyAddr {
			addr = target.Listener.Addr().String()
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	client := func(proxy Func) *http.Client {
		return &http.Client{Transport: &http.Transport{Proxy: proxy, DialContext: dial, DisableKeepAlives: true}}
	}

	direct := []string{
		"http://10.96.0.1:443/version",
		"http://kubernetes.default.svc/version",
		"http://harness-dispatcher.harness-system.svc.cluster.local:8443/v1",
		"http://harness-dispatcher:8443/v1",
		"http://10.244.1.7:4500/readyz",
		"http://[fd00:10:244::7]:4500/readyz",
		"http://localhost:8443/v1",
		"http://127.0.0.1:8443/v1",
	}
	var resp *http.Response
	for _, u := range direct {
		resp, err = client(FromEnvironment(getenv(env))).Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		_ = resp.Body.Close()
	}
	if got := proxy.Seen(); len(got) != 0 {
		t.Fatalf("the proxy was asked to forward %q: in-cluster and loopback requests must go directly", got)
	}
	if len(reached) != len(direct) {
		t.Fatalf("the servers received %q, want the %d requests directly", reached, len(direct))
	}

	const public = "http://api.example.test/v1"
	resp, err = client(FromEnvironment(getenv(env))).Get(public)
	if err != nil {
		t.Fatalf("GET %s: %v", public, err)
	}
	_ = resp.Body.Close()
	if got := proxy.Seen(); !slices.Equal(got, []string{"GET " + public}) || resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("the proxy saw %q (status %d), want the public request through it", got, resp.StatusCode)
	}
	resp, err = client(Never).Get(public)
	if err != nil {
		t.Fatalf("GET %s with Never: %v", public, err)
	}
	_ = resp.Body.Close()
	if got := proxy.Seen(); len(got) != 1 || resp.StatusCode != http.StatusOK {
		t.Fatalf("with Never the proxy saw %q (status %d), want the request direct", got, resp.StatusCode)
	}
}

func getenv(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}
