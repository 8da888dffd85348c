package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/platform/proxyenv"
)

// Environment variables of the dispatcher discovery.
const (
	envDispatcherURL = "HARNESS_DISPATCHER_URL"
	envDispatcherCA  = "HARNESS_DISPATCHER_CA"
)

// dispatcherFlags find and authenticate to the dispatcher.
type dispatcherFlags struct {
	url            string
	ca             string
	serviceAccount string
	audience       string
	// namespace and service locate the dispatcher Service for the API
	// server's service proxy (proxy.go), used when no URL is given.
	namespace string
	service   string
}

func (d *dispatcherFlags) add(f *pflag.FlagSet) {
	f.StringVar(&d.url, "dispatcher", "", "Base URL of the dispatcher API (default: $"+envDispatcherURL+
		"; without either, the dispatcher Service through the API server's service proxy).")
	f.StringVar(&d.ca, "dispatcher-ca", "", "PEM file of a CA to trust for the dispatcher, besides the system roots (default: $"+envDispatcherCA+
		"); only with a dispatcher URL.")
	f.StringVar(&d.namespace, "dispatcher-namespace", "", "Namespace of the dispatcher Service, reached through the API server's service proxy when no URL is given (default: $"+
		envDispatcherNamespace+", else "+defaultDispatcherNamespace+").")
	f.StringVar(&d.service, "dispatcher-service", "", "Name of the dispatcher Service (default: the one Service labeled "+dispatcherSelector.String()+").")
	f.StringVar(&d.serviceAccount, "service-account", defaultServiceAccount,
		"ServiceAccount (in the session's namespace) whose short-lived token the CLI requests and sends to the dispatcher; "+
			"the kubeconfig's own credential never reaches the dispatcher. Needs create on serviceaccounts/token for it.")
	f.StringVar(&d.audience, "audience", defaultAudience,
		"Audience of the requested token: the dispatcher's --token-audience (the chart's dispatcher.tokenAudience).")
}

// dispatcherClient calls the dispatcher's HTTP API.
type dispatcherClient struct {
	base  *url.URL
	http  *http.Client
	token string
	// authHeader carries the token: Authorization when the CLI talks to the
	// dispatcher directly, wire.ProxyAuthorizationHeader through the
	// API server's service proxy (which deletes Authorization, and whose
	// own Authorization is the kubeconfig's credential set by http). Empty
	// means Authorization.
	authHeader string
}

// dispatcher finds the dispatcher — --dispatcher, else
// $HARNESS_DISPATCHER_URL, else the dispatcher Service through the API
// server's service proxy — and requests the short-lived ServiceAccount token
// it sends there (token.go), telling stderr whose it is.
func (d *dispatcherFlags) dispatcher(ctx context.Context, kc *kubeClient, stderr io.Writer) (*dispatcherClient, error) {
	raw, source := d.url, "--dispatcher"
	if raw == "" {
		raw, source = os.Getenv(envDispatcherURL), "$"+envDispatcherURL
	}
	if raw == "" {
		return d.proxyDispatcher(ctx, kc, stderr)
	}
	base, err := url.Parse(raw)
	if err == nil && base.Scheme == "http" {
		// The request carries a bearer token: in cleartext anyone on the
		// path could replay it for its lifetime.
		return nil, badInput(fmt.Errorf("%s %q: plain http:// is refused, the dispatcher token must travel over TLS; want https://host[:port][/path]", source, raw))
	}
	if err != nil || base.Scheme != "https" || base.Host == "" {
		return nil, badInput(fmt.Errorf("%s %q: want https://host[:port][/path]", source, raw))
	}
	caFile := d.ca
	if caFile == "" {
		caFile = os.Getenv(envDispatcherCA)
	}
	tlsCfg, err := dispatcherTLS(caFile)
	if err != nil {
		return nil, err
	}
	token, err := d.requestToken(ctx, kc, stderr)
	if err != nil {
		return nil, err
	}
	return &dispatcherClient{base: base, http: &http.Client{Transport: dispatcherTransport(tlsCfg)}, token: token}, nil
}

// dispatcherTransport is Go's default transport with tlsCfg and the
// environment's proxy for a public dispatcher URL only: a dispatcher
// Service, a pod or a port-forward on loopback is reached directly, so its
// token never passes a proxy (proxyenv.Direct).
func dispatcherTransport(tlsCfg *tls.Config) *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsCfg
	tr.Proxy = proxyenv.FromEnvironment(os.Getenv)
	return tr
}

// dispatcherTLS trusts the system roots plus the PEM file, when given.
func dispatcherTLS(caFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile == "" {
		return cfg, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, badInput(fmt.Errorf("dispatcher CA: %w", err))
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, badInput(fmt.Errorf("dispatcher CA %s: no PEM certificate in the file", caFile))
	}
	cfg.RootCAs = pool
	return cfg, nil
}

// sessionURL is the URL of a route of the AgentSession ns/name (of run
// runID, for a run's routes): wire.Route*.
func (dc *dispatcherClient) sessionURL(ns, name, route, runID string) string {
	u := *dc.base
	u.Path = strings.TrimSuffix(u.Path, "/") + wire.SessionRoute(ns, name, route, runID)
	return u.String()
}

func (dc *dispatcherClient) do(ctx context.Context, method, u string, body []byte, hdr http.Header) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	header := dc.authHeader
	if header == "" {
		header = "Authorization"
	}
	req.Header.Set(header, "Bearer "+dc.token)
	resp, err := dc.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("dispatcher: %w", err)
	}
	return resp, nil
}

// responseError turns a non-2xx answer into the exit error: 3 for a turn's
// error code (wire.ErrorCode.IsTurnError), 2 for a bad request or an unknown
// session, 1 otherwise. The caller
// prints nothing for exit 3, so the message goes to stderr here.
func responseError(resp *http.Response, stderr io.Writer) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err := apiServerStatus(resp, b); err != nil {
		return err
	}
	ae := &wire.Error{}
	if json.Unmarshal(b, ae) != nil || ae.Code == "" {
		return fmt.Errorf("dispatcher answered %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	switch {
	case ae.Code.IsTurnError():
		// A turn's error code (docs/dispatcher-api.md, "Errors"): a
		// fail-closed decision or a dispatcher refusal of the turn.
		_, _ = fmt.Fprintf(stderr, "error: %s (HTTP %d, retryable %t)\n", ae.Error(), resp.StatusCode, ae.Retryable)
		return &exitError{code: exitFailClosed}
	case resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusNotFound:
		return badInput(ae)
	}
	return fmt.Errorf("dispatcher answered %d %w", resp.StatusCode, ae)
}
