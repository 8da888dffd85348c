package appserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
)

// DefaultClientName is the clientInfo.name sent in initialize. Codex echoes
// it as the first element of userAgent and as the model request's
// originator header.
const DefaultClientName = "harness-operator"

// DefaultRequestTimeout bounds a request whose context has no deadline.
const DefaultRequestTimeout = 2 * time.Minute

// Options configure Connect.
type Options struct {
	// ClientName is clientInfo.name (default DefaultClientName). It must not
	// contain "/": the version is parsed from "<name>/<version> …".
	ClientName string
	// ClientTitle and ClientVersion complete clientInfo.
	ClientTitle   string
	ClientVersion string
	// MinVersion raises the version floor above MinimumVersion (never
	// lowers it); e.g. an AgentHarness's spec.minVersion.
	MinVersion string
	// RequestTimeout applies to requests whose context has no deadline
	// (default DefaultRequestTimeout).
	RequestTimeout time.Duration
	// Handlers answer server requests of threads without their own
	// handlers. Nil functions decline.
	Handlers Handlers

	// The limits against a misbehaving app-server (package doc); zero
	// means the default.
	//
	// MaxMessageBytes is the largest message the server may send
	// (DefaultMaxMessageBytes); a larger one ends the connection.
	MaxMessageBytes int64
	// MaxUnreadEvents and MaxUnreadBytes (raw params) bound one turn's
	// events that its consumer has not read (DefaultMaxUnreadEvents,
	// DefaultMaxUnreadBytes); beyond either, that turn's stream fails.
	MaxUnreadEvents int
	MaxUnreadBytes  int64
	// MaxServerRequests bounds the server requests handled at once
	// (DefaultMaxServerRequests); one beyond is refused with an error.
	MaxServerRequests int
	// Logger records recovered panics (with their stack), failed turn
	// streams and, at most once a minute, dropped notifications and
	// refused requests. When unset, the logger in Connect's context is used
	// (logr.FromContextOrDiscard).
	Logger logr.Logger
}

// withDefaults fills the zero options with their defaults.
func (o Options) withDefaults(ctx context.Context) Options {
	if o.ClientName == "" {
		o.ClientName = DefaultClientName
	}
	if o.ClientVersion == "" {
		o.ClientVersion = "0.0.0"
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if o.MaxUnreadEvents <= 0 {
		o.MaxUnreadEvents = DefaultMaxUnreadEvents
	}
	if o.MaxUnreadBytes <= 0 {
		o.MaxUnreadBytes = DefaultMaxUnreadBytes
	}
	if o.MaxServerRequests <= 0 {
		o.MaxServerRequests = DefaultMaxServerRequests
	}
	if o.Logger.GetSink() == nil {
		o.Logger = logr.FromContextOrDiscard(ctx)
	}
	return o
}

// ServerInfo is what the server reported in the handshake.
type ServerInfo struct {
	UserAgent      string `json:"userAgent"`
	CodexHome      string `json:"codexHome"`
	PlatformFamily string `json:"platformFamily"`
	PlatformOS     string `json:"platformOs"`
	// Version is the Codex version parsed from UserAgent.
	Version string `json:"-"`
}

// Client is a connection to one app-server.
type Client struct {
	t       Transport
	opts    Options
	info    ServerInfo
	nextID  atomic.Int64
	done    chan struct{}   // closed when the connection ends
	loopEnd chan struct{}   // closed when the read loop has returned
	reqs    sync.WaitGroup  // goroutines started with goLocked
	reqCtx  context.Context // cancelled when the connection ends
	cancel  context.CancelFunc

	log logr.Logger
	// What was dropped or refused (Stats), and the rate limits of their
	// log records.
	unknownDropped, refused atomic.Uint64
	unknownLog, refusedLog  logEvery

	mu        sync.Mutex
	pending   map[int64]*pendingCall
	threads   map[string]*threadState
	serving   int   // server requests being handled
	lostErr   error // cause once the connection ended
	closeOnce sync.Once
}

type pendingCall struct {
	method string
	ch     chan rpcResponse
}

type rpcResponse struct {
	Result json.RawMessage
	Error  *rpcErrorBody
}

type rpcErrorBody struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

type envelope struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *rpcErrorBody   `json:"error,omitempty"`
}

// Connect performs the app-server handshake on t: initialize (clientInfo,
// capabilities.experimentalApi), the version check against the floor, then
// the initialized notification. A server whose version is missing,
// unparsable or below the floor is refused with a *VersionError before any
// thread exists, and t is closed. On success the Client owns t.
func Connect(ctx context.Context, t Transport, opts Options) (*Client, error) {
	opts = opts.withDefaults(ctx)
	if strings.Contains(opts.ClientName, "/") {
		_ = t.Close()
		return nil, fmt.Errorf("appserver: clientInfo.name %q must not contain '/'", opts.ClientName)
	}
	if _, err := Floor(opts.MinVersion); err != nil {
		_ = t.Close()
		return nil, err
	}
	if rl, ok := t.(readLimiter); ok {
		rl.setReadLimit(opts.MaxMessageBytes)
	}
	c := &Client{
		t:       t,
		opts:    opts,
		log:     opts.Logger,
		done:    make(chan struct{}),
		loopEnd: make(chan struct{}),
		pending: map[int64]*pendingCall{},
		threads: map[string]*threadState{},
	}
	c.reqCtx, c.cancel = context.WithCancel(context.Background())
	go c.readLoop()

	params := map[string]any{
		"clientInfo": map[string]any{
			"name":    opts.ClientName,
			"title":   opts.ClientTitle,
			"version": opts.ClientVersion,
		},
		"capabilities": map[string]any{"experimentalApi": true},
	}
	if opts.ClientTitle == "" {
		params["clientInfo"].(map[string]any)["title"] = nil
	}
	var info ServerInfo
	if err := c.Call(ctx, MethodInitialize, params, &info); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("appserver: handshake: %w", err)
	}
	v, err := CheckVersion(info.UserAgent, opts.MinVersion)
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	info.Version = v.String()
	c.info = info
	if err := c.notify(ctx, MethodInitialized, nil); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("appserver: handshake: %w", err)
	}
	return c, nil
}

// ServerInfo returns what the server reported in the handshake.
func (c *Client) ServerInfo() ServerInfo { return c.info }

// Done is closed when the connection has ended.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err is the cause of the connection's end, or nil while it is open.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lostErr
}

// Close closes the connection and waits for the client's goroutines (the
// reader, running server-request handlers, whose contexts are cancelled,
// and interrupts of failed turn streams) to finish. Turns keep running on
// the server; see ResumeThread.
func (c *Client) Close() error {
	var err error
	c.closeOnce.Do(func() {
		c.shutdown(ErrClosed)
		err = c.t.Close()
		<-c.loopEnd
		c.reqs.Wait()
	})
	return err
}

// shutdown marks the connection as ended and wakes every waiter.
func (c *Client) shutdown(cause error) {
	c.mu.Lock()
	if c.lostErr != nil {
		c.mu.Unlock()
		return
	}
	c.lostErr = cause
	close(c.done)
	for _, th := range c.threads {
		for _, s := range th.turns {
			s.wakeLocked()
		}
	}
	c.mu.Unlock()
	c.cancel()
}

// readLoop reads and dispatches the server's messages until the connection
// ends. It never waits for a consumer: events are buffered per turn, server
// requests run on their own goroutines.
func (c *Client) readLoop() {
	defer close(c.loopEnd)
	defer func() {
		// A panic here (a caller's Transport, or a bug in dispatching) ends
		// this connection only.
		if pe := recovered("the app-server client's read loop", recover()); pe != nil {
			c.logPanic(pe)
			c.shutdown(pe)
			_ = c.t.Close()
		}
	}()
	for {
		msg, err := c.t.ReadMessage()
		if err == nil && int64(len(msg)) > c.opts.MaxMessageBytes {
			// The package's transports stop at the limit themselves; this
			// holds it for any other Transport.
			err = &MessageTooLargeError{Limit: c.opts.MaxMessageBytes, Size: int64(len(msg))}
		}
		if err != nil {
			var tooLarge *MessageTooLargeError
			if errors.As(err, &tooLarge) {
				c.log.Error(err, "closing the app-server connection")
				_ = c.t.Close()
			}
			c.shutdown(err)
			return
		}
		c.dispatch(msg)
	}
}

func (c *Client) dispatch(msg []byte) {
	var env envelope
	if err := json.Unmarshal(msg, &env); err != nil {
		return // not JSON-RPC; nothing to route
	}
	switch {
	case env.Method != "" && len(env.ID) > 0:
		c.startServerRequest(env)
	case env.Method != "":
		c.route(env.Method, env.Params)
	case len(env.ID) > 0:
		id, err := strconv.ParseInt(string(env.ID), 10, 64)
		if err != nil {
			return // not one of ours (our ids are integers)
		}
		c.mu.Lock()
		p := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if p != nil {
			p.ch <- rpcResponse{Result: env.Result, Error: env.Error}
		}
	}
}

// Call sends a request and decodes its result into result (which may be
// nil). It is the untyped escape hatch for methods without a typed wrapper.
// Errors: *RPCError for a server error, *TimeoutError when ctx ends first,
// *ConnectionLostError when the connection ends first.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	return c.call(ctx, method, params, result, "", "")
}

func (c *Client) call(ctx context.Context, method string, params, result any, threadID, turnHint string) error {
	isTurnStart := method == MethodTurnStart
	lost := func(sent bool, cause error) error {
		return &ConnectionLostError{Method: method, ThreadID: threadID, TurnID: turnHint,
			AfterTurnStarted: isTurnStart && sent, Err: cause}
	}
	id := c.nextID.Add(1)
	body, err := json.Marshal(struct {
		ID     int64  `json:"id"`
		Method string `json:"method"`
		Params any    `json:"params,omitempty"`
	}{id, method, params})
	if err != nil {
		return fmt.Errorf("appserver: %s: encode params: %w", method, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.RequestTimeout)
		defer cancel()
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("appserver: %s: %w", method, err)
	}
	p := &pendingCall{method: method, ch: make(chan rpcResponse, 1)}
	c.mu.Lock()
	if c.lostErr != nil {
		cause := c.lostErr
		c.mu.Unlock()
		return lost(false, cause)
	}
	c.pending[id] = p
	c.mu.Unlock()
	unregister := func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}

	if err := c.t.WriteMessage(ctx, body); err != nil {
		unregister()
		if cause := c.Err(); cause != nil {
			return lost(false, cause)
		}
		// A failed write leaves the stream in an unknown state: end the
		// connection rather than risk a half-written message. The request
		// may have been partly sent; for turn/start assume it arrived.
		c.shutdown(err)
		_ = c.t.Close()
		return lost(true, err)
	}

	select {
	case resp := <-p.ch:
		return decodeResponse(method, resp, result)
	case <-ctx.Done():
		unregister()
		select { // the answer may have raced the deadline
		case resp := <-p.ch:
			return decodeResponse(method, resp, result)
		default:
		}
		return &TimeoutError{Method: method, AfterTurnStarted: isTurnStart, Err: ctx.Err()}
	case <-c.done:
		unregister()
		select {
		case resp := <-p.ch:
			return decodeResponse(method, resp, result)
		default:
		}
		return lost(true, c.Err())
	}
}

func decodeResponse(method string, resp rpcResponse, result any) error {
	if resp.Error != nil {
		return &RPCError{Method: method, Code: resp.Error.Code, Message: resp.Error.Message, Data: resp.Error.Data}
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(resp.Result, result); err != nil {
		return fmt.Errorf("appserver: %s: decode result: %w", method, err)
	}
	return nil
}

func (c *Client) notify(ctx context.Context, method string, params any) error {
	body, err := json.Marshal(struct {
		Method string `json:"method"`
		Params any    `json:"params,omitempty"`
	}{method, params})
	if err != nil {
		return fmt.Errorf("appserver: %s: encode: %w", method, err)
	}
	if err := c.t.WriteMessage(ctx, body); err != nil {
		return fmt.Errorf("appserver: %s: %w", method, err)
	}
	return nil
}

// respond answers a server request with a result or an error.
func (c *Client) respond(id json.RawMessage, result any, rpcErr *rpcErrorBody) error {
	msg := struct {
		ID     json.RawMessage `json:"id"`
		Result any             `json:"result,omitempty"`
		Error  *rpcErrorBody   `json:"error,omitempty"`
	}{ID: id, Result: result, Error: rpcErr}
	body, err := json.Marshal(msg)
	if err != nil {
		return fmt.Errorf("appserver: encode response: %w", err)
	}
	ctx, cancel := context.WithTimeout(c.reqCtx, 30*time.Second)
	defer cancel()
	return c.t.WriteMessage(ctx, body)
}

// routingIDs extracts the thread and turn a notification belongs to.
func routingIDs(params json.RawMessage) (threadID, turnID string) {
	var v struct {
		ThreadID string `json:"threadId"`
		TurnID   string `json:"turnId"`
		Turn     *struct {
			ID string `json:"id"`
		} `json:"turn"`
		Thread *struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if len(params) == 0 || json.Unmarshal(params, &v) != nil {
		return "", ""
	}
	threadID, turnID = v.ThreadID, v.TurnID
	if threadID == "" && v.Thread != nil {
		threadID = v.Thread.ID
	}
	if turnID == "" && v.Turn != nil {
		turnID = v.Turn.ID
	}
	return threadID, turnID
}

// route delivers a notification to its turn's stream. Thread-level and
// connection-level notifications (status, warnings, rate limits) are not
// delivered.
func (c *Client) route(method string, params json.RawMessage) {
	threadID, turnID := routingIDs(params)
	if threadID == "" || turnID == "" {
		return
	}
	ev := decodeEvent(EventMeta{Method: method, ThreadID: threadID, TurnID: turnID, Params: params})
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deliverLocked(ev)
}

var errNoThread = errors.New("appserver: empty thread id")
