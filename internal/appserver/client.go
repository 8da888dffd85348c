// Package appserver is a client for the JSON-RPC protocol of `codex
// app-server` (Codex's native agent server), over WebSocket or stdio.
//
// Connect performs the handshake (initialize with experimentalApi, the
// version floor check, initialized). A Client then starts or resumes
// threads; a Thread starts turns; a Turn delivers its notifications as typed
// events (Next, Run, Wait). Server-initiated requests (dynamic tool calls,
// approvals, user input) go to the Handlers of their thread. A dropped
// connection surfaces as a *ConnectionLostError that says whether a turn may
// have had side effects. All methods are safe for concurrent use.
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
)

// DefaultClientName is the clientInfo.name sent in initialize. Codex echoes
// it as the first element of userAgent and as the model request's
// originator header.
const DefaultClientName = "harness-operator"

// DefaultRequestTimeout bounds a request whose context has no deadline.
const DefaultRequestTimeout = 2 * time.Minute

// maxUnclaimedTurns bounds the buffered event streams of turns nobody has
// attached to, per thread.
const maxUnclaimedTurns = 32

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
	done    chan struct{} // closed when the connection ends
	loopEnd chan struct{} // closed when the read loop has returned
	reqs    sync.WaitGroup
	reqCtx  context.Context // cancelled when the connection ends
	cancel  context.CancelFunc

	mu        sync.Mutex
	pending   map[int64]*pendingCall
	threads   map[string]*threadState
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
	if opts.ClientName == "" {
		opts.ClientName = DefaultClientName
	}
	if strings.Contains(opts.ClientName, "/") {
		_ = t.Close()
		return nil, fmt.Errorf("appserver: clientInfo.name %q must not contain '/'", opts.ClientName)
	}
	if opts.ClientVersion == "" {
		opts.ClientVersion = "0.0.0"
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	if _, err := Floor(opts.MinVersion); err != nil {
		_ = t.Close()
		return nil, err
	}
	c := &Client{
		t:       t,
		opts:    opts,
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
// reader and running server-request handlers, whose contexts are cancelled)
// to finish. Turns keep running on the server; see ResumeThread.
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

func (c *Client) readLoop() {
	defer close(c.loopEnd)
	for {
		msg, err := c.t.ReadMessage()
		if err != nil {
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
	c.streamLocked(threadID, turnID).pushLocked(ev)
}

// threadState holds a thread's handlers and the event streams of its turns.
type threadState struct {
	handlers *Handlers
	turns    map[string]*turnStream
	order    []string // turn ids in creation order
}

func (c *Client) threadLocked(threadID string) *threadState {
	th := c.threads[threadID]
	if th == nil {
		th = &threadState{turns: map[string]*turnStream{}}
		c.threads[threadID] = th
	}
	return th
}

func (c *Client) streamLocked(threadID, turnID string) *turnStream {
	th := c.threadLocked(threadID)
	s := th.turns[turnID]
	if s == nil {
		s = &turnStream{notify: make(chan struct{})}
		th.turns[turnID] = s
		th.order = append(th.order, turnID)
		c.pruneLocked(th)
	}
	return s
}

// pruneLocked drops the oldest unattached streams beyond the bound.
func (c *Client) pruneLocked(th *threadState) {
	unclaimed := 0
	for _, id := range th.order {
		if s := th.turns[id]; s != nil && !s.attached {
			unclaimed++
		}
	}
	for i := 0; unclaimed > maxUnclaimedTurns && i < len(th.order); i++ {
		id := th.order[i]
		if s := th.turns[id]; s != nil && !s.attached {
			delete(th.turns, id)
			unclaimed--
		}
	}
	kept := th.order[:0]
	for _, id := range th.order {
		if th.turns[id] != nil {
			kept = append(kept, id)
		}
	}
	th.order = kept
}

func (c *Client) dropStreamLocked(threadID, turnID string) {
	if th := c.threads[threadID]; th != nil {
		delete(th.turns, turnID)
	}
}

// turnStream buffers a turn's events until its Turn consumes them.
type turnStream struct {
	events    []Event
	completed bool // turn/completed was received
	attached  bool
	notify    chan struct{} // closed and replaced on every change
}

func (s *turnStream) pushLocked(ev Event) {
	if _, ok := ev.(TurnCompletedEvent); ok {
		s.completed = true
	}
	s.events = append(s.events, ev)
	s.wakeLocked()
}

func (s *turnStream) wakeLocked() {
	close(s.notify)
	s.notify = make(chan struct{})
}

// Handlers answer server-initiated requests. A nil function declines:
// tool calls fail (success false), approvals are declined, user input gets
// no answers. Every handled request is also delivered to the turn as a
// ServerRequestHandled event, so a decline is visible (DESIGN.md §5 rule 9).
type Handlers struct {
	// ToolCall runs a dynamic tool (item/tool/call). The adapter must
	// refuse tools not offered in this turn.
	ToolCall func(ctx context.Context, call ToolCall) ToolResult
	// Approval decides command, file-change, permission and MCP
	// elicitation requests.
	Approval func(ctx context.Context, req ApprovalRequest) ApprovalDecision
	// UserInput answers request_user_input; return nil to decline.
	UserInput func(ctx context.Context, req UserInputRequest) map[string][]string
}

// ToolCall is an item/tool/call request.
type ToolCall struct {
	ThreadID  string          `json:"threadId"`
	TurnID    string          `json:"turnId"`
	CallID    string          `json:"callId"`
	Namespace *string         `json:"namespace"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

// ToolResult answers a ToolCall: what the model is told the tool returned.
type ToolResult struct {
	ContentItems []ContentItem `json:"contentItems"`
	Success      bool          `json:"success"`
}

// ToolText is a ToolResult with one text item.
func ToolText(text string, success bool) ToolResult {
	return ToolResult{ContentItems: []ContentItem{TextContent(text)}, Success: success}
}

// ApprovalRequest is an approval request from the runtime.
type ApprovalRequest struct {
	// Method is the request method (e.g. item/commandExecution/requestApproval).
	Method   string
	ThreadID string
	TurnID   string
	ItemID   string
	// Command is set for command approvals.
	Command string
	// Params is the raw request.
	Params json.RawMessage
}

// ApprovalDecision answers an ApprovalRequest.
type ApprovalDecision string

// Approval decisions.
const (
	ApprovalDecline ApprovalDecision = "decline"
	ApprovalCancel  ApprovalDecision = "cancel"
	ApprovalAccept  ApprovalDecision = "accept"
)

// UserInputRequest is an item/tool/requestUserInput request.
type UserInputRequest struct {
	ThreadID string
	TurnID   string
	ItemID   string
	Params   json.RawMessage
}

func (c *Client) handlersFor(threadID string) Handlers {
	c.mu.Lock()
	defer c.mu.Unlock()
	if th := c.threads[threadID]; th != nil && th.handlers != nil {
		return *th.handlers
	}
	return c.opts.Handlers
}

func (c *Client) startServerRequest(env envelope) {
	c.mu.Lock()
	if c.lostErr != nil {
		c.mu.Unlock()
		return
	}
	c.reqs.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.reqs.Done()
		c.handleServerRequest(env)
	}()
}

func (c *Client) handleServerRequest(env envelope) {
	threadID, turnID := routingIDs(env.Params)
	h := c.handlersFor(threadID)
	ctx := c.reqCtx
	var (
		kind     ServerRequestKind
		result   any
		rpcErr   *rpcErrorBody
		declined bool
	)
	var common struct {
		ItemID  string `json:"itemId"`
		Command string `json:"command"`
	}
	_ = json.Unmarshal(env.Params, &common)

	switch env.Method {
	case MethodToolCall:
		kind = KindToolCall
		var call ToolCall
		if err := json.Unmarshal(env.Params, &call); err != nil {
			rpcErr = &rpcErrorBody{Code: -32602, Message: "invalid item/tool/call params"}
			break
		}
		res := ToolText(fmt.Sprintf("tool %q is not available in this turn", call.Tool), false)
		if h.ToolCall != nil {
			res = h.ToolCall(ctx, call)
		}
		if res.ContentItems == nil {
			res.ContentItems = []ContentItem{}
		}
		result, declined = res, !res.Success
	case MethodCommandApproval, MethodFileApproval, MethodPermissions, MethodApplyPatchApproval,
		MethodExecCommandApproval, MethodElicitation:
		kind = KindApproval
		if env.Method == MethodElicitation {
			kind = KindElicitation
		}
		d := ApprovalDecline
		if h.Approval != nil {
			d = h.Approval(ctx, ApprovalRequest{Method: env.Method, ThreadID: threadID, TurnID: turnID,
				ItemID: common.ItemID, Command: common.Command, Params: env.Params})
		}
		result, declined = approvalResponse(env.Method, d, env.Params), d != ApprovalAccept
	case MethodUserInput:
		kind = KindUserInput
		var answers map[string][]string
		if h.UserInput != nil {
			answers = h.UserInput(ctx, UserInputRequest{ThreadID: threadID, TurnID: turnID,
				ItemID: common.ItemID, Params: env.Params})
		}
		declined = answers == nil
		out := map[string]any{}
		for q, a := range answers {
			out[q] = map[string]any{"answers": a}
		}
		result = map[string]any{"answers": out}
	default:
		kind = KindUnsupported
		declined = true
		rpcErr = &rpcErrorBody{Code: -32601, Message: "harness-operator does not support " + env.Method}
	}

	// Record the request in the turn's stream before answering, so that
	// it precedes everything the answer causes (e.g. turn/completed).
	if threadID != "" && turnID != "" {
		var raw json.RawMessage
		if rpcErr == nil {
			raw, _ = json.Marshal(result)
		}
		ev := ServerRequestHandled{
			EventMeta: EventMeta{Method: env.Method, ThreadID: threadID, TurnID: turnID, Params: env.Params},
			Kind:      kind, Response: raw, Declined: declined,
		}
		c.mu.Lock()
		if c.lostErr == nil {
			c.streamLocked(threadID, turnID).pushLocked(ev)
		}
		c.mu.Unlock()
	}
	_ = c.respond(env.ID, result, rpcErr)
}

// approvalResponse maps a decision onto the response shape of each
// approval method.
func approvalResponse(method string, d ApprovalDecision, params json.RawMessage) any {
	switch method {
	case MethodPermissions:
		if d == ApprovalAccept {
			var p struct {
				Permissions json.RawMessage `json:"permissions"`
			}
			_ = json.Unmarshal(params, &p)
			return map[string]any{"permissions": p.Permissions, "scope": "turn"}
		}
		return map[string]any{"permissions": map[string]any{}, "scope": "turn"}
	case MethodApplyPatchApproval, MethodExecCommandApproval:
		switch d {
		case ApprovalAccept:
			return map[string]any{"decision": "approved"}
		case ApprovalCancel:
			return map[string]any{"decision": "abort"}
		default:
			return map[string]any{"decision": map[string]any{"denied": map[string]any{"rejection": "declined by harness-operator"}}}
		}
	case MethodElicitation:
		return map[string]any{"action": string(d), "content": nil, "_meta": nil}
	default: // command and file-change approvals
		return map[string]any{"decision": string(d)}
	}
}

var errNoThread = errors.New("appserver: empty thread id")
