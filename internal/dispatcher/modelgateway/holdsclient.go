package modelgateway

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// Defaults of HoldsClientOptions.
const (
	// DefaultHoldsTimeout bounds one holds question, connection included:
	// a model request waits for it, and a dispatcher that does not answer
	// in time is a refusal.
	DefaultHoldsTimeout = 2 * time.Second
	// DefaultTokenFile is where kubelet projects the pod's ServiceAccount
	// token, rotated before it expires.
	DefaultTokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	// maxHoldsAnswer bounds the dispatcher's answer (a small JSON object,
	// or an error body).
	maxHoldsAnswer = 16 << 10
	// maxTokenFile bounds the token file: a ServiceAccount token is a JWT
	// of a few KiB.
	maxTokenFile = 64 << 10
	// holdsIdleConns is how many idle connections to the dispatcher are
	// kept: each model request asks once, so a busy gateway reuses them.
	holdsIdleConns = 64
)

// HoldsClientOptions configure a HoldsClient.
type HoldsClientOptions struct {
	// DispatcherURL is the dispatcher's base URL (https://host:port); the
	// client posts to its wire.ModelGatewayHoldsPath.
	DispatcherURL string
	// CAFile is the PEM bundle the dispatcher's certificate is checked
	// against; empty: the platform's roots.
	CAFile string
	// TokenFile holds the gateway's bearer token (DefaultTokenFile). It is
	// read again for every question, so a token kubelet rotated is sent
	// from the next one on.
	TokenFile string
	// Timeout bounds each question (DefaultHoldsTimeout).
	Timeout time.Duration
}

// HoldsClient is the Liveness of a gateway: it asks the dispatcher's holds
// endpoint over HTTPS, with the gateway's ServiceAccount token. It reuses
// its connections, follows no redirect and uses no proxy (the token is for
// the dispatcher alone). It never retries: an answer other than 200 with a
// well-formed {"holds": …}, a timeout or a transport error is an error,
// and the gateway refuses the request (fail closed); a false is final.
type HoldsClient struct {
	url       string
	tokenFile string
	timeout   time.Duration
	client    *http.Client
}

var _ Liveness = (*HoldsClient)(nil)

// NewHoldsClient checks o and returns the client. It reads the CA file
// now, and the token file once to fail at start rather than at the first
// request.
func NewHoldsClient(o HoldsClientOptions) (*HoldsClient, error) {
	u, err := url.Parse(o.DispatcherURL)
	switch {
	case o.DispatcherURL == "":
		return nil, errors.New("modelgateway: the dispatcher's URL is required")
	case err != nil:
		return nil, fmt.Errorf("modelgateway: the dispatcher's URL: %w", err)
	case u.Scheme != "https" || u.Host == "":
		return nil, fmt.Errorf("modelgateway: the dispatcher's URL must be https://host[:port], not %q: the token it is sent must not cross the network in the clear", o.DispatcherURL)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("modelgateway: the dispatcher's URL %s must not carry user information, a query or a fragment", u.Redacted())
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("modelgateway: read the dispatcher's CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("modelgateway: the dispatcher's CA file %s holds no PEM certificate", o.CAFile)
		}
		tlsConfig.RootCAs = pool
	}
	c := &HoldsClient{
		url:       strings.TrimSuffix(u.String(), "/") + wire.ModelGatewayHoldsPath,
		tokenFile: o.TokenFile,
		timeout:   o.Timeout,
	}
	if c.tokenFile == "" {
		c.tokenFile = DefaultTokenFile
	}
	if c.timeout <= 0 {
		c.timeout = DefaultHoldsTimeout
	}
	if _, err := c.token(); err != nil {
		return nil, err
	}
	c.client = &http.Client{
		Transport: &http.Transport{
			Proxy:               nil, // the dispatcher is reached directly
			DialContext:         (&net.Dialer{Timeout: c.timeout, KeepAlive: 30 * time.Second}).DialContext,
			TLSClientConfig:     tlsConfig,
			TLSHandshakeTimeout: c.timeout,
			MaxIdleConns:        holdsIdleConns,
			MaxIdleConnsPerHost: holdsIdleConns,
			IdleConnTimeout:     90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return c, nil
}

// CloseIdleConnections closes the idle connections to the dispatcher (at
// shutdown).
func (c *HoldsClient) CloseIdleConnections() { c.client.CloseIdleConnections() }

// token reads the bearer token from its file.
func (c *HoldsClient) token() (string, error) {
	f, err := os.Open(c.tokenFile)
	if err != nil {
		return "", fmt.Errorf("modelgateway: read the ServiceAccount token: %w", err)
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return "", fmt.Errorf("modelgateway: read the ServiceAccount token %s: %w", c.tokenFile, err)
	}
	t := strings.TrimSpace(string(b))
	switch {
	case len(b) > maxTokenFile:
		return "", fmt.Errorf("modelgateway: the ServiceAccount token file %s is larger than %d bytes", c.tokenFile, maxTokenFile)
	case t == "":
		return "", fmt.Errorf("modelgateway: the ServiceAccount token file %s is empty", c.tokenFile)
	case strings.ContainsAny(t, " \t\r\n"):
		return "", fmt.Errorf("modelgateway: the ServiceAccount token file %s holds more than one token", c.tokenFile)
	}
	return t, nil
}

// Holds implements Liveness: one POST, no retry.
func (c *HoldsClient) Holds(ctx context.Context, lease string, token int64) (bool, error) {
	bearer, err := c.token()
	if err != nil {
		return false, err
	}
	body, err := json.Marshal(wire.HoldsRequest{Lease: lease, Token: token})
	if err != nil {
		return false, fmt.Errorf("modelgateway: encode the holds question: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return false, fmt.Errorf("modelgateway: the holds question: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+bearer)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return false, fmt.Errorf("modelgateway: ask the dispatcher whether the grant holds: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxHoldsAnswer+1))
	if err != nil {
		return false, fmt.Errorf("modelgateway: read the dispatcher's holds answer: %w", err)
	}
	if len(answer) > maxHoldsAnswer {
		return false, fmt.Errorf("modelgateway: the dispatcher's holds answer is larger than %d bytes", maxHoldsAnswer)
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("modelgateway: the dispatcher answered the holds question %d: %s", resp.StatusCode, refusal(answer))
	}
	var a wire.HoldsAnswer
	if err := wire.DecodeStrict(bytes.NewReader(answer), &a); err != nil {
		return false, fmt.Errorf("modelgateway: the dispatcher's holds answer is not {\"holds\": true|false}: %w", err)
	}
	if !bytes.Contains(answer, []byte(`"holds"`)) {
		// DecodeStrict leaves a missing field at false: absent is no answer.
		return false, errors.New("modelgateway: the dispatcher's holds answer has no \"holds\"")
	}
	return a.Holds, nil
}

// refusal is the dispatcher's error body as a log line: its code and
// message when it is the API's error shape, else its first 200 bytes.
func refusal(body []byte) string {
	var e wire.Error
	if json.Unmarshal(body, &e) == nil && e.Code != "" {
		return string(e.Code) + ": " + e.Message
	}
	s := strings.ToValidUTF8(strings.TrimSpace(string(body)), "?")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
