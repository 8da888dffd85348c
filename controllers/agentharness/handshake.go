package agentharness

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

const (
	// handshakeTimeout bounds one initialize handshake.
	handshakeTimeout = 15 * time.Second
	// probeTimeout bounds one /readyz probe of an external server.
	probeTimeout = 5 * time.Second
	// externalProbeInterval is how often an external server's /readyz is probed.
	externalProbeInterval = 30 * time.Second
	// handshakeRetryBase and handshakeRetryMax bound the back-off between
	// handshakes that failed (connection or auth); a changed token retries at once.
	handshakeRetryBase = 5 * time.Second
	handshakeRetryMax  = 2 * time.Minute
)

// handshakeFunc performs the initialize handshake (never a thread) with the
// app-server at a ws:// or wss:// URL, authenticating with auth (a managed
// pod: a signed token minted for the dial; an external server: its static
// token), and returns what the server said about itself. A server that
// answered but is below the floor is not an error here: the caller judges the
// userAgent against the harness's floor, so a changed minVersion needs no new
// handshake. Errors are connection and auth failures; they never contain the
// token.
type handshakeFunc func(ctx context.Context, url string, auth appserver.WebSocketOptions) (serverFacts, error)

// serverFacts are what a handshake learned: the initialize result's
// userAgent, the login state (account/read; nil when the server did not
// answer it, e.g. below the floor) and the names of its model catalog
// (model/list; nil when it could not be read).
type serverFacts struct {
	userAgent string
	login     *appserver.Login
	catalog   []string
}

// appServerHandshake is the handshakeFunc that speaks to a real app-server
// with internal/harness/appserver.
func appServerHandshake(ctx context.Context, rawURL string, auth appserver.WebSocketOptions) (serverFacts, error) {
	ctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	t, err := appserver.DialWebSocket(ctx, rawURL, auth)
	if err != nil {
		return serverFacts{}, err
	}
	c, err := appserver.Connect(ctx, t, appserver.Options{ClientTitle: "harness-operator manager"})
	if err != nil {
		var ve *appserver.VersionError
		if errors.As(err, &ve) {
			return serverFacts{userAgent: ve.UserAgent}, nil
		}
		return serverFacts{}, err
	}
	defer func() { _ = c.Close() }()
	facts := serverFacts{userAgent: c.ServerInfo().UserAgent}
	if l, err := c.ReadLogin(ctx); err == nil {
		facts.login = &l
	}
	// An unread catalog is unknown, never a failed handshake: the server
	// still takes turns, and the adapter reads the catalog again per request.
	if models, err := c.ListModels(ctx); err == nil {
		facts.catalog = catalogNames(models)
	}
	return facts, nil
}

// probeFunc reports whether GET <base>/readyz answers 200, asked with
// client (the external server's dial policy and CA bundle).
type probeFunc func(ctx context.Context, readyzURL string, client *http.Client) error

func httpReadyz(ctx context.Context, readyzURL string, probeClient *http.Client) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, readyzURL, nil)
	if err != nil {
		return err
	}
	resp, err := probeClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %d", readyzURL, resp.StatusCode)
	}
	return nil
}

// readyzURL is the /readyz address on the host of an external server's
// ws:// (http) or wss:// (https) URL.
func readyzURL(wsURL string) (string, error) {
	u, err := url.Parse(wsURL)
	if err != nil {
		return "", fmt.Errorf("parse external.url: %w", err)
	}
	scheme := "http"
	switch u.Scheme {
	case "ws":
	case "wss":
		scheme = "https"
	default:
		return "", fmt.Errorf("external.url %q: scheme must be ws or wss", u.Redacted())
	}
	return (&url.URL{Scheme: scheme, Host: u.Host, Path: "/readyz"}).String(), nil
}

// handshakeResult is what one handshake found. Successful results are kept
// for as long as their key (image digest, or external URL and generation)
// is in use; failures are retried with back-off, or at once when the token
// changed.
type handshakeResult struct {
	// server is the pod name (or `external`) the handshake went to.
	server string
	// userAgent of the initialize result, the login state and the model
	// catalog's names (nil: unknown); meaningful when err is nil.
	userAgent string
	login     *appserver.Login
	catalog   []string
	// err is the connection or auth failure.
	err error
	// tokenFP fingerprints the token the handshake used.
	tokenFP  string
	failures int
	retryAt  time.Time
}

// needsHandshake reports whether key must be (re)handshaken.
func needsHandshake(res *handshakeResult, tokenFP string, now time.Time) bool {
	if res == nil {
		return true
	}
	if res.err == nil {
		return false
	}
	return res.tokenFP != tokenFP || !now.Before(res.retryAt)
}

// retryDelay is the back-off after the n-th consecutive failure.
func retryDelay(failures int) time.Duration {
	d := handshakeRetryBase
	for i := 1; i < failures && d < handshakeRetryMax; i++ {
		d *= 2
	}
	return min(d, handshakeRetryMax)
}

// tokenFingerprint identifies a token without revealing it.
func tokenFingerprint(token string) string {
	sum := sha256.Sum256([]byte("harness-operator token fingerprint\x00" + token))
	return hex.EncodeToString(sum[:8])
}

// handshakeCache keeps handshake results in memory per harness, keyed by
// image digest (managed) or URL and generation (external).
type handshakeCache struct {
	mu        sync.Mutex
	harnesses map[types.NamespacedName]*harnessResults
}

type harnessResults struct {
	uid   types.UID
	byKey map[string]handshakeResult
}

func newHandshakeCache() *handshakeCache {
	return &handshakeCache{harnesses: map[types.NamespacedName]*harnessResults{}}
}

func (c *handshakeCache) entry(nn types.NamespacedName, uid types.UID) *harnessResults {
	e := c.harnesses[nn]
	if e == nil || e.uid != uid {
		e = &harnessResults{uid: uid, byKey: map[string]handshakeResult{}}
		c.harnesses[nn] = e
	}
	return e
}

// lookup returns a copy of the result for key, or nil.
func (c *handshakeCache) lookup(nn types.NamespacedName, uid types.UID, key string) *handshakeResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	res, ok := c.entry(nn, uid).byKey[key]
	if !ok {
		return nil
	}
	return &res
}

func (c *handshakeCache) store(nn types.NamespacedName, uid types.UID, key string, res handshakeResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entry(nn, uid).byKey[key] = res
}

// retain drops the results whose keys are no longer in use.
func (c *handshakeCache) retain(nn types.NamespacedName, uid types.UID, keys map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entry(nn, uid)
	for k := range e.byKey {
		if !keys[k] {
			delete(e.byKey, k)
		}
	}
}

// forget drops everything about a deleted harness.
func (c *handshakeCache) forget(nn types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.harnesses, nn)
}
