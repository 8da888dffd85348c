package appserver

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/openclaw/harness-operator/internal/platform/netguard"
	"github.com/openclaw/harness-operator/internal/platform/proxyenv"
)

// Transport carries JSON-RPC messages, one JSON object per message.
// Implementations are safe for one reader and many writers.
type Transport interface {
	// ReadMessage blocks until the next message arrives, or fails when the
	// transport is closed or broken.
	ReadMessage() ([]byte, error)
	// WriteMessage sends one message.
	WriteMessage(ctx context.Context, msg []byte) error
	// Close closes the transport; a blocked ReadMessage returns an error.
	Close() error
}

// readLimiter is a transport that stops reading a message at a limit
// (Options.MaxMessageBytes, which Connect applies) and then fails with a
// *MessageTooLargeError.
type readLimiter interface {
	setReadLimit(n int64)
}

// stdioTransport speaks newline-delimited JSON over a process's pipes.
type stdioTransport struct {
	r      *bufio.Reader
	rc     io.Closer
	limit  atomic.Int64
	wmu    sync.Mutex
	w      io.WriteCloser
	closed sync.Once
}

// NewStdioTransport speaks the app-server's stdio protocol (one JSON object
// per line) over the server process's stdout and stdin. Close closes both;
// closing stdin makes `codex app-server` exit.
func NewStdioTransport(stdout io.ReadCloser, stdin io.WriteCloser) Transport {
	t := &stdioTransport{r: bufio.NewReaderSize(stdout, 64<<10), rc: stdout, w: stdin}
	t.limit.Store(DefaultMaxMessageBytes)
	return t
}

func (t *stdioTransport) setReadLimit(n int64) { t.limit.Store(n) }

func (t *stdioTransport) ReadMessage() ([]byte, error) {
	for {
		line, err := t.readLine()
		line = bytes.TrimSpace(line)
		if len(line) > 0 {
			// A final line without newline is still a message.
			return line, nil
		}
		if err != nil {
			return nil, fmt.Errorf("stdio: %w", err)
		}
	}
}

// readLine reads up to and including the next newline, but stops with a
// *MessageTooLargeError (and no line) once the line without its newline is
// over the limit: the rest is never buffered, however long the server goes
// on.
func (t *stdioTransport) readLine() ([]byte, error) {
	limit := t.limit.Load()
	var line []byte
	for {
		frag, err := t.r.ReadSlice('\n')
		line = append(line, frag...)
		if n := int64(len(bytes.TrimSuffix(line, []byte("\n")))); n > limit {
			return nil, &MessageTooLargeError{Limit: limit, Size: n}
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

type writeDeadliner interface {
	SetWriteDeadline(time.Time) error
}

func (t *stdioTransport) WriteMessage(ctx context.Context, msg []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if d, ok := t.w.(writeDeadliner); ok {
		if dl, has := ctx.Deadline(); has {
			_ = d.SetWriteDeadline(dl)
			defer func() { _ = d.SetWriteDeadline(time.Time{}) }()
		}
	}
	buf := make([]byte, 0, len(msg)+1)
	buf = append(append(buf, msg...), '\n')
	if _, err := t.w.Write(buf); err != nil {
		return fmt.Errorf("stdio: write: %w", err)
	}
	return nil
}

func (t *stdioTransport) Close() error {
	var err error
	t.closed.Do(func() {
		err = errors.Join(t.w.Close(), t.rc.Close())
	})
	return err
}

// WebSocketOptions configure DialWebSocket.
type WebSocketOptions struct {
	// Token is sent as "Authorization: Bearer <token>" in the upgrade
	// request (what `--ws-auth capability-token` expects). Empty sends no
	// Authorization header.
	Token string
	// SignedBearer, when set, mints a fresh token for this dial instead
	// (what `--ws-auth signed-bearer-token` expects); Token is ignored.
	SignedBearer *SignedBearer
	// HTTPClient performs the upgrade request. Nil uses a client without
	// proxy and without redirects.
	HTTPClient *http.Client
	// Dialer, when set and HTTPClient is nil, dials the upgrade request's
	// connections (a client without proxy, redirects or kept-alive
	// connections): a netguard.Policy's Dialer keeps a user-named server off
	// refused addresses, checked after name resolution.
	Dialer *net.Dialer
	// RootCAs, when set and HTTPClient is nil, are the only certificate
	// authorities a wss:// server's certificate may chain to (an external
	// server's private CA); nil: the system roots.
	RootCAs *x509.CertPool
	// PingInterval is how often the connection is pinged while open
	// (DefaultPingInterval when zero; negative turns pings off). A peer that
	// does not answer a ping within PingTimeout (DefaultPingTimeout when
	// zero) is taken for gone and the connection is closed: a half-open
	// connection (a peer or path that vanished without a FIN) is detected
	// instead of waiting forever, well within the dispatcher's reattach
	// window (30 s).
	PingInterval time.Duration
	PingTimeout  time.Duration
}

// Keepalive defaults of DialWebSocket: a dead peer is noticed at most
// DefaultPingInterval + DefaultPingTimeout after it stopped answering.
const (
	DefaultPingInterval = 10 * time.Second
	DefaultPingTimeout  = 10 * time.Second
)

var defaultWSClient = &http.Client{
	Transport: &http.Transport{Proxy: proxyenv.Never, ForceAttemptHTTP2: false},
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
}

// wsTransport carries one JSON-RPC message per WebSocket text frame.
type wsTransport struct {
	c      *websocket.Conn
	ctx    context.Context // ends when the transport is closed
	cancel context.CancelFunc
	closed sync.Once
	limit  atomic.Int64
	pinged chan struct{} // closed when the keepalive goroutine has ended
	// broken is why the keepalive closed the connection: an unanswered
	// ping or a *PanicError.
	broken atomic.Pointer[error]
}

// errPingUnanswered is why the keepalive closes a connection whose peer did
// not answer a ping.
var errPingUnanswered = errors.New("the peer did not answer a ping")

func (t *wsTransport) setReadLimit(n int64) {
	t.limit.Store(n)
	t.c.SetReadLimit(n)
}

// Client is the HTTP client of the upgrade request (and of other requests
// to the same server, such as a /readyz probe): HTTPClient, or a client
// without proxy, redirects or kept-alive connections that dials with Dialer
// and trusts RootCAs.
func (o WebSocketOptions) Client() *http.Client {
	switch {
	case o.HTTPClient != nil:
		return o.HTTPClient
	case o.Dialer == nil && o.RootCAs == nil:
		return defaultWSClient
	}
	t := &http.Transport{Proxy: proxyenv.Never, ForceAttemptHTTP2: false, DisableKeepAlives: true}
	if o.Dialer != nil {
		t.DialContext = o.Dialer.DialContext
	}
	if o.RootCAs != nil {
		t.TLSClientConfig = &tls.Config{RootCAs: o.RootCAs, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: t, CheckRedirect: defaultWSClient.CheckRedirect}
}

// DialWebSocket connects to a `codex app-server --listen ws://…` endpoint.
// It never sends an Origin header. A refused upgrade is a *HandshakeError
// (errors.Is(err, ErrUnauthorized) for a missing or wrong token).
func DialWebSocket(ctx context.Context, rawURL string, opts WebSocketOptions) (Transport, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("appserver: websocket URL: %w", err)
	}
	if u.Scheme != "ws" && u.Scheme != "wss" {
		return nil, fmt.Errorf("appserver: websocket URL %q: scheme must be ws or wss", u.Redacted())
	}
	if u.User != nil {
		return nil, fmt.Errorf("appserver: websocket URL %q must not carry credentials; use the token option", u.Redacted())
	}
	client := opts.Client()
	hdr := http.Header{}
	if opts.SignedBearer != nil {
		if opts.Token, err = opts.SignedBearer.Mint(); err != nil {
			return nil, err
		}
	}
	if opts.Token != "" {
		hdr.Set("Authorization", "Bearer "+opts.Token)
	}
	c, resp, err := websocket.Dial(ctx, u.String(), &websocket.DialOptions{
		HTTPClient:      client,
		HTTPHeader:      hdr,
		CompressionMode: websocket.CompressionDisabled,
	})
	if resp != nil && resp.Body != nil {
		defer func() { _ = resp.Body.Close() }()
	}
	if err != nil {
		// Nothing the server sent (its body, its header values) goes into
		// the error: a user-named server must not be able to write into
		// conditions, Events or dispatcher answers through it.
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			return nil, fmt.Errorf("appserver: dial %s: %w", u.Redacted(), &HandshakeError{StatusCode: resp.StatusCode})
		}
		if resp != nil {
			return nil, fmt.Errorf("appserver: dial %s: the server answered 101 with an invalid WebSocket upgrade", u.Redacted())
		}
		var refused *netguard.RefusedError
		if errors.As(err, &refused) {
			return nil, fmt.Errorf("appserver: dial %s: %w", u.Redacted(), refused)
		}
		return nil, fmt.Errorf("appserver: dial %s: %s", u.Redacted(), redact(err.Error(), opts.Token))
	}
	tctx, cancel := context.WithCancel(context.Background())
	t := &wsTransport{c: c, ctx: tctx, cancel: cancel, pinged: make(chan struct{})}
	t.setReadLimit(DefaultMaxMessageBytes)
	interval, timeout := opts.PingInterval, opts.PingTimeout
	if interval == 0 {
		interval = DefaultPingInterval
	}
	if timeout <= 0 {
		timeout = DefaultPingTimeout
	}
	if interval > 0 {
		go t.keepalive(interval, timeout)
	} else {
		close(t.pinged)
	}
	return t, nil
}

// keepalive pings the peer every interval until the transport closes; a ping
// unanswered within timeout closes the connection, which ends ReadMessage
// with an error (the Client then reports the connection lost). Pongs are
// read by the Client's read loop, which always runs.
func (t *wsTransport) keepalive(interval, timeout time.Duration) {
	defer close(t.pinged)
	defer func() {
		// A panic ends this connection (the read loop reports it), not the
		// process.
		if pe := recovered("the WebSocket keepalive", recover()); pe != nil {
			t.breakWith(pe)
		}
	}()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-t.ctx.Done():
			return
		case <-tick.C:
		}
		pctx, cancel := context.WithTimeout(t.ctx, timeout)
		err := t.c.Ping(pctx)
		cancel()
		if err != nil && t.ctx.Err() == nil {
			t.breakWith(errPingUnanswered)
			return
		}
	}
}

// breakWith closes the connection for cause, which the pending read then
// reports.
func (t *wsTransport) breakWith(cause error) {
	t.broken.Store(&cause)
	_ = t.c.CloseNow()
}

func redact(s, token string) string {
	if token == "" {
		return s
	}
	return strings.ReplaceAll(s, token, "[redacted]")
}

func (t *wsTransport) ReadMessage() ([]byte, error) {
	_, b, err := t.c.Read(t.ctx)
	if err != nil {
		// The connection is over: stop the keepalive even if nobody
		// closes the transport.
		t.cancel()
		if cause := t.broken.Load(); cause != nil {
			return nil, fmt.Errorf("websocket: %w: %w", *cause, err)
		}
		if errors.Is(err, websocket.ErrMessageTooBig) {
			// The library read one byte over the limit before it stopped
			// (and closed the connection with StatusMessageTooBig).
			limit := t.limit.Load()
			return nil, &MessageTooLargeError{Limit: limit, Size: limit + 1}
		}
		return nil, fmt.Errorf("websocket: %w", err)
	}
	return b, nil
}

func (t *wsTransport) WriteMessage(ctx context.Context, msg []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// coder/websocket closes the connection when a write's context ends, so
	// bound the write by the transport's life and a fixed timeout rather
	// than by the caller's (possibly short) request context.
	wctx, cancel := context.WithTimeout(t.ctx, 30*time.Second)
	defer cancel()
	if err := t.c.Write(wctx, websocket.MessageText, msg); err != nil {
		return fmt.Errorf("websocket: write: %w", err)
	}
	return nil
}

func (t *wsTransport) Close() error {
	var err error
	t.closed.Do(func() {
		// A close handshake, bounded by the library (5 s), then the reader
		// is released.
		err = t.c.Close(websocket.StatusNormalClosure, "")
		t.cancel()
		<-t.pinged
		// Codex ends the TCP connection without echoing the close frame,
		// and a connection the server already dropped is closed too.
		if errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = nil
		}
	})
	return err
}
