package engine

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// mcpFront is an HTTP server in front of an MCP test server: it records the
// path and Host of every request it receives (what Codex actually asked
// for) and forwards the requests under one of its allowed paths to the MCP
// server; anything else is 404.
type mcpFront struct {
	// URL is http://127.0.0.1:<port>, without a path.
	URL string
	// host is the Host a request for URL carries.
	host string
	// allowed are the paths the front forwards: a request's path must be
	// one of them or continue one at a '/'.
	allowed []string

	mu   sync.Mutex
	seen []frontRequest
}

// frontRequest is one request the front received.
type frontRequest struct {
	Path, Host string
}

// startMCPFront serves until the suite ends, forwarding the paths allowed
// (each without a trailing '/') to the MCP endpoint mcpURL.
func startMCPFront(mcpURL string, allowed ...string) *mcpFront {
	target, err := url.Parse(mcpURL)
	Expect(err).NotTo(HaveOccurred())
	f := &mcpFront{allowed: allowed}
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.Out.URL.Scheme, r.Out.URL.Host, r.Out.URL.Path, r.Out.URL.RawPath = target.Scheme, target.Host, target.Path, ""
		r.Out.Host = target.Host
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.seen = append(f.seen, frontRequest{Path: r.URL.EscapedPath(), Host: r.Host})
		f.mu.Unlock()
		if f.inside(r.URL.EscapedPath()) {
			proxy.ServeHTTP(w, r)
			return
		}
		http.NotFound(w, r)
	}))
	DeferCleanup(srv.Close)
	f.URL = srv.URL
	f.host = strings.TrimPrefix(srv.URL, "http://")
	return f
}

// inside reports whether path is one of the allowed paths or below one.
func (f *mcpFront) inside(path string) bool {
	for _, a := range f.allowed {
		if path == a || strings.HasPrefix(path, a+"/") {
			return true
		}
	}
	return false
}

// received returns how many requests the front has received.
func (f *mcpFront) received() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.seen)
}

// strayedSince returns the requests after the first n whose path is outside
// the allowed paths or whose Host is not the front's own.
func (f *mcpFront) strayedSince(n int) []frontRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []frontRequest
	for _, r := range f.seen[n:] {
		if !f.inside(r.Path) || r.Host != f.host {
			out = append(out, r)
		}
	}
	return out
}

// insideSince returns the paths of the requests after the first n that the
// front forwarded.
func (f *mcpFront) insideSince(n int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, r := range f.seen[n:] {
		if f.inside(r.Path) && r.Host == f.host {
			out = append(out, r.Path)
		}
	}
	return out
}
