// Package proxytest checks that a client keeps requests away from the proxy
// its environment names: a recording proxy on loopback, and a way to run a
// test in a new process whose environment names that proxy from its start.
// Go's http.ProxyFromEnvironment (client-go's default) reads the environment
// once per process, so setting it in a running test proves nothing.
package proxytest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// childEnv marks the process RunChild starts.
const childEnv = "PROXYTEST_CHILD"

// Proxy is an HTTP proxy on loopback that records each request it is asked
// to forward ("CONNECT host:port", or "GET http://host/path") and forwards
// none: it answers 502.
type Proxy struct {
	URL string
	mu  sync.Mutex
	got []string
}

// Start starts a Proxy, stopped with the test.
func Start(t *testing.T) *Proxy {
	t.Helper()
	p := &Proxy{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		line := r.Method + " " + r.URL.String()
		if r.Method == http.MethodConnect {
			line = r.Method + " " + r.Host
		}
		p.mu.Lock()
		p.got = append(p.got, line)
		p.mu.Unlock()
		http.Error(w, "recording proxy: not forwarded", http.StatusBadGateway)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// Seen is what the proxy was asked to forward, sorted.
func (p *Proxy) Seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Sorted(slices.Values(p.got))
}

// Env names p as the proxy of every scheme, in both cases, with no
// exceptions.
func (p *Proxy) Env() []string {
	return []string{"HTTP_PROXY=" + p.URL, "HTTPS_PROXY=" + p.URL, "http_proxy=" + p.URL, "https_proxy=" + p.URL,
		"NO_PROXY=", "no_proxy="}
}

// InChild reports whether this process is a child RunChild started.
func InChild() bool { return os.Getenv(childEnv) == "1" }

// RunChild runs the top-level test t again in a new process of the test
// binary, with env added to its environment, and fails t when the child
// fails. The test's body checks InChild to do the child's part.
func RunChild(t *testing.T, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.count=1", "-test.v")
	cmd.Env = append(append(os.Environ(), env...), childEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("the child process of %s: %v\n%s", t.Name(), err, out)
	}
}

// Get sends a GET to each URL with hc and returns each outcome ("url: status"
// or "url: error"), for the child's log. The requests are expected to fail:
// the test's network reaches only loopback, and the proxy forwards nothing.
func Get(hc *http.Client, urls ...string) []string {
	c := *hc
	c.Timeout = 30 * time.Second
	var out []string
	for _, u := range urls {
		resp, err := c.Get(u)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", u, err))
			continue
		}
		_ = resp.Body.Close()
		out = append(out, fmt.Sprintf("%s: %s", u, resp.Status))
	}
	return out
}
