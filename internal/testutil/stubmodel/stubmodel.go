// Package stubmodel is a scriptable OpenAI Responses-API server for tests.
//
// It serves POST /v1/responses as server-sent events in the shapes the real
// Codex CLI consumes (docs/codex-app-server.md, and the transcripts the
// protocol notes were taken from), listens on 127.0.0.1 only, and records
// every request body so that a test can assert on what the agent runtime
// offered and sent to the model: the tools, the input items and the
// function_call_output items.
//
// A test scripts replies per request: [Server.When] queues replies for
// requests whose latest user message contains a marker, [Server.Enqueue]
// queues replies for any request, and everything else gets the default reply
// ("Hello from stub"; a shell tool call for a message starting with
// ShellDirective; a call of any tool for one starting with ToolDirective; or "got tool output: <output>" when the latest input is
// a function_call_output). Replies are built with [Text], [Call], [Reasoning],
// [HTTPError], [Cut] and [Stall]; [Reply.HoldBefore] pauses a text stream
// between two deltas. A [Gate] releases stalled and held streams and reports
// when a stream reached it, so tests synchronise on what the stub has sent
// rather than on delays.
package stubmodel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// DefaultText is the reply text for a request that nothing scripted.
const DefaultText = "Hello from stub"

// ToolOutputPrefix starts the default reply to a request whose latest input
// item is a function_call_output; the output text follows it.
const ToolOutputPrefix = "got tool output: "

// Server is a running stub model server. It is safe for concurrent use.
type Server struct {
	srv       *http.Server
	listener  net.Listener
	done      chan struct{} // closed when Serve returns
	closing   chan struct{} // closed when Close starts
	closeOnce sync.Once
	handlers  sync.WaitGroup

	mu       sync.Mutex
	seq      int
	itemSeq  int
	requests []*Request
	rules    []*rule
	queue    []Reply
	outage   *Reply        // while set, the reply to every request (Outage)
	changed  chan struct{} // closed and replaced whenever requests change
	images   imageScript   // POST /v1/images/generations (images.go)
	unserved []string      // "METHOD /path" of requests to routes not served
}

type rule struct {
	marker  string
	replies []Reply
}

// New starts a stub on 127.0.0.1 with a free port. Close stops it.
func New() (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("stubmodel: listen on 127.0.0.1: %w", err)
	}
	return Serve(l), nil
}

// Serve runs a stub on an existing listener and takes ownership of it. Use it
// only for addresses a test owns (a loopback address, or one inside a network
// namespace the test created); New is the ordinary entry point.
func Serve(l net.Listener) *Server {
	s := &Server{
		listener: l,
		done:     make(chan struct{}),
		closing:  make(chan struct{}),
		changed:  make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/responses", s.handleResponses)
	mux.HandleFunc("POST /v1/images/generations", s.handleImages)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.unserved = append(s.unserved, r.Method+" "+r.URL.Path)
		s.mu.Unlock()
		http.Error(w, "stubmodel: only POST /v1/responses and /v1/images/generations are served", http.StatusNotFound)
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(l)
	}()
	return s
}

// Start starts a stub for tb and stops it when the test ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	s, err := New()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s
}

// Close stops the server and ends every open stream, stalled ones included.
// It is idempotent.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closing)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := s.srv.Shutdown(ctx); err != nil {
			_ = s.srv.Close()
		}
		<-s.done
		s.handlers.Wait()
	})
}

// Addr is the host:port the stub listens on.
func (s *Server) Addr() string { return s.listener.Addr().String() }

// BaseURL is the provider base URL to configure in Codex
// (model_providers.<id>.base_url), e.g. http://127.0.0.1:40123/v1.
func (s *Server) BaseURL() string { return "http://" + s.Addr() + "/v1" }

// When scripts the replies for requests whose latest user message contains
// marker: the first such request gets replies[0], the next replies[1], and
// so on. Used-up rules fall through to the queue and then to the default
// reply. Rules are tried in the order they were added.
func (s *Server) When(marker string, replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = append(s.rules, &rule{marker: marker, replies: append([]Reply(nil), replies...)})
}

// Outage answers every request that arrives until end is called with r
// instead of its scripted reply, as a provider that is down answers them
// all; the scripted replies are kept for the requests after it. An outage
// that stalls (Stall) holds its requests until its gate is released, which
// may be after end.
func (s *Server) Outage(r Reply) (end func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outage = &r
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.outage = nil
	}
}

// Enqueue queues replies for the next requests that no When rule matches.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, replies...)
}

// Requests returns the requests received so far, in arrival order.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

// Unserved returns the method and path ("GET /v1/models") of every request
// to a route the stub does not serve, in arrival order, so a test can assert
// that a client called nothing but the Responses API.
func (s *Server) Unserved() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.unserved...)
}

// RequestsContaining returns the requests whose latest user message
// contains marker.
func (s *Server) RequestsContaining(marker string) []*Request {
	var out []*Request
	for _, r := range s.Requests() {
		if strings.Contains(r.LastUserText(), marker) {
			out = append(out, r)
		}
	}
	return out
}

// FunctionCallOutputs returns every function_call_output item of every
// request, de-duplicated by call id (Codex re-sends history every turn).
func (s *Server) FunctionCallOutputs() []FunctionCallOutput {
	seen := map[string]bool{}
	var out []FunctionCallOutput
	for _, r := range s.Requests() {
		for _, o := range r.FunctionCallOutputs() {
			if !seen[o.CallID] {
				seen[o.CallID] = true
				out = append(out, o)
			}
		}
	}
	return out
}

// WaitRequest waits until a request that satisfies match has arrived (one
// already received counts) and returns the first such request.
func (s *Server) WaitRequest(ctx context.Context, match func(*Request) bool) (*Request, error) {
	for {
		s.mu.Lock()
		for _, r := range s.requests {
			if match == nil || match(r) {
				s.mu.Unlock()
				return r, nil
			}
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("stubmodel: waiting for a request: %w", context.Cause(ctx))
		}
	}
}

// WaitMarker waits for a request whose latest user message contains marker.
func (s *Server) WaitMarker(ctx context.Context, marker string) (*Request, error) {
	return s.WaitRequest(ctx, func(r *Request) bool { return strings.Contains(r.LastUserText(), marker) })
}

func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// pick chooses the reply for r. It is called with s.mu held.
func (s *Server) pickLocked(r *Request) Reply {
	if s.outage != nil {
		return *s.outage
	}
	last := r.LastUserText()
	for _, rl := range s.rules {
		if len(rl.replies) > 0 && strings.Contains(last, rl.marker) {
			rep := rl.replies[0]
			rl.replies = rl.replies[1:]
			return rep
		}
	}
	if len(s.queue) > 0 {
		rep := s.queue[0]
		s.queue = s.queue[1:]
		return rep
	}
	if out, ok := r.lastFunctionCallOutput(); ok {
		return Text(ToolOutputPrefix + out.Output)
	}
	if cmd, ok := strings.CutPrefix(strings.TrimSpace(last), ShellDirective); ok {
		return CallJSON("exec_command", map[string]string{"cmd": strings.TrimSpace(cmd)})
	}
	if call, ok := strings.CutPrefix(strings.TrimSpace(last), ToolDirective); ok {
		return toolDirectiveCall(strings.TrimSpace(call))
	}
	return Text(DefaultText)
}

// toolDirectiveCall is the call a ToolDirective message asks for: the tool
// name (`namespace.name` for a namespaced tool), then its JSON arguments
// ("{}" when none are given).
func toolDirectiveCall(spec string) Reply {
	name, args, _ := strings.Cut(spec, " ")
	args = strings.TrimSpace(args)
	if args == "" {
		args = "{}"
	}
	fc := FunctionCall{Name: name, Arguments: args}
	if ns, bare, ok := strings.Cut(name, "."); ok {
		fc.Namespace, fc.Name = ns, bare
	}
	return Call(fc)
}

// ShellDirective starts a user message whose default reply is a call of
// Codex's shell tool (exec_command) with the rest of the message as the
// command — so `make run` can show what a session's working directory holds:
// `kubectl harness turn demo --prompt "RUN_SHELL: ls -A"`.
const ShellDirective = "RUN_SHELL:"

// ToolDirective starts a user message whose default reply is a call of the
// named tool with the JSON arguments that follow — so `make run` can show
// host tool calls, user-input requests and MCP calls without a scripted
// stub: `--prompt 'CALL_TOOL: get_weather {"city":"Paris"}'`, or
// `CALL_TOOL: mcp__docs.lookup {"q":"x"}` for a tool in a namespace.
const ToolDirective = "CALL_TOOL:"

func (s *Server) handleResponses(w http.ResponseWriter, hr *http.Request) {
	s.handlers.Add(1)
	defer s.handlers.Done()
	body, err := io.ReadAll(io.LimitReader(hr.Body, 64<<20))
	if err != nil {
		http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	req, err := parseRequest(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req.Header = hr.Header.Clone()
	req.done = make(chan struct{})

	s.mu.Lock()
	s.seq++
	req.Seq = s.seq
	s.requests = append(s.requests, req)
	reply := s.pickLocked(req)
	s.notifyLocked()
	s.mu.Unlock()

	err = s.serve(w, hr, req, reply)

	s.mu.Lock()
	req.outcome = outcomeFor(err)
	close(req.done)
	s.notifyLocked()
	s.mu.Unlock()
}

func outcomeFor(err error) Outcome {
	switch {
	case err == nil:
		return OutcomeServed
	case errors.Is(err, errClientGone):
		return OutcomeClientGone
	default:
		return OutcomeServerClosed
	}
}

var errClientGone = errors.New("client disconnected")

func (s *Server) nextID(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.itemSeq++
	return fmt.Sprintf("%s_%d", prefix, s.itemSeq)
}

func (s *Server) serve(w http.ResponseWriter, hr *http.Request, req *Request, reply Reply) error {
	ctx := hr.Context()
	for reply.stall != nil {
		if err := s.wait(ctx, reply.stall.gate); err != nil {
			return err
		}
		reply = reply.stall.then
	}
	if reply.status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(reply.status)
		msg := reply.errMessage
		if msg == "" {
			msg = http.StatusText(reply.status)
		}
		b, _ := json.Marshal(map[string]any{"error": map[string]any{
			"message": msg, "type": "server_error", "code": nil, "param": nil,
		}})
		_, _ = w.Write(b)
		return nil
	}

	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	sse := &sseWriter{w: w, f: flusher, ctx: ctx, holds: reply.holds, wait: s.wait}

	respID := s.nextID("resp")
	sse.event("response.created", map[string]any{"response": responseObj(respID, "in_progress", []any{}, nil)})
	sse.event("response.in_progress", map[string]any{"response": responseObj(respID, "in_progress", []any{}, nil)})

	var output []any
	for i, part := range reply.parts {
		output = append(output, s.writePart(sse, i, part))
	}
	if reply.cut {
		// End the stream here: Codex fails the turn with "stream closed
		// before response.completed".
		return sse.err
	}
	usage := map[string]any{
		"input_tokens": 10, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": 5, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens": 15,
	}
	sse.event("response.completed", map[string]any{"response": responseObj(respID, "completed", output, usage)})
	return sse.err
}

// wait blocks until gate is released, the client goes away or the server
// closes.
func (s *Server) wait(ctx context.Context, gate *Gate) error {
	gate.reach()
	select {
	case <-gate.C():
		return nil
	case <-ctx.Done():
		return errClientGone
	case <-s.closing:
		return errors.New("server closed")
	}
}

func responseObj(id, status string, output []any, usage map[string]any) map[string]any {
	o := map[string]any{"id": id, "object": "response", "status": status, "output": output}
	if usage != nil {
		o["usage"] = usage
	}
	return o
}

func (s *Server) writePart(sse *sseWriter, idx int, p part) map[string]any {
	switch p.kind {
	case partReasoning:
		id := s.nextID("rs")
		sse.event("response.output_item.added", map[string]any{"output_index": idx,
			"item": map[string]any{"type": "reasoning", "id": id, "summary": []any{}}})
		sse.event("response.reasoning_summary_part.added", map[string]any{"item_id": id, "output_index": idx,
			"summary_index": 0, "part": map[string]any{"type": "summary_text", "text": ""}})
		for _, d := range p.deltas {
			sse.event("response.reasoning_summary_text.delta", map[string]any{"item_id": id, "output_index": idx,
				"summary_index": 0, "delta": d})
		}
		sse.event("response.reasoning_summary_text.done", map[string]any{"item_id": id, "output_index": idx,
			"summary_index": 0, "text": p.text})
		sse.event("response.reasoning_summary_part.done", map[string]any{"item_id": id, "output_index": idx,
			"summary_index": 0, "part": map[string]any{"type": "summary_text", "text": p.text}})
		item := map[string]any{"type": "reasoning", "id": id,
			"summary": []any{map[string]any{"type": "summary_text", "text": p.text}}}
		sse.event("response.output_item.done", map[string]any{"output_index": idx, "item": item})
		return item
	case partCall:
		id := s.nextID("fc")
		callID := p.call.CallID
		if callID == "" {
			callID = s.nextID("call")
		}
		args := p.call.Arguments
		if args == "" {
			args = "{}"
		}
		added := map[string]any{"type": "function_call", "id": id, "call_id": callID, "name": p.call.Name,
			"arguments": "", "status": "in_progress"}
		if p.call.Namespace != "" {
			added["namespace"] = p.call.Namespace
		}
		sse.event("response.output_item.added", map[string]any{"output_index": idx, "item": added})
		sse.event("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": idx, "delta": args})
		sse.event("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": idx, "arguments": args})
		item := map[string]any{"type": "function_call", "id": id, "call_id": callID, "name": p.call.Name,
			"arguments": args, "status": "completed"}
		if p.call.Namespace != "" {
			item["namespace"] = p.call.Namespace
		}
		sse.event("response.output_item.done", map[string]any{"output_index": idx, "item": item})
		return item
	default: // partText
		id := s.nextID("msg")
		sse.event("response.output_item.added", map[string]any{"output_index": idx,
			"item": map[string]any{"type": "message", "id": id, "role": "assistant", "status": "in_progress", "content": []any{}}})
		sse.event("response.content_part.added", map[string]any{"item_id": id, "output_index": idx, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
		for _, d := range p.deltas {
			sse.hold()
			if p.deltaDelay > 0 {
				sse.pause(p.deltaDelay)
			}
			sse.event("response.output_text.delta", map[string]any{"item_id": id, "output_index": idx, "content_index": 0, "delta": d})
		}
		sse.event("response.output_text.done", map[string]any{"item_id": id, "output_index": idx, "content_index": 0, "text": p.text})
		content := []any{map[string]any{"type": "output_text", "text": p.text, "annotations": []any{}}}
		sse.event("response.content_part.done", map[string]any{"item_id": id, "output_index": idx, "content_index": 0,
			"part": content[0]})
		item := map[string]any{"type": "message", "id": id, "role": "assistant", "status": "completed", "content": content}
		sse.event("response.output_item.done", map[string]any{"output_index": idx, "item": item})
		return item
	}
}

type sseWriter struct {
	w   io.Writer
	f   http.Flusher
	ctx context.Context
	err error

	holds      map[int]*Gate // Reply.holds
	wait       func(context.Context, *Gate) error
	textDeltas int // text deltas written (or about to be)
}

// hold waits at the next text delta's gate, if it has one.
func (s *sseWriter) hold() {
	n := s.textDeltas
	s.textDeltas++
	if g := s.holds[n]; g != nil && s.err == nil {
		s.err = s.wait(s.ctx, g)
	}
}

func (s *sseWriter) event(typ string, data map[string]any) {
	if s.err != nil {
		return
	}
	if s.ctx.Err() != nil {
		s.err = errClientGone
		return
	}
	data["type"] = typ
	b, err := json.Marshal(data)
	if err != nil {
		s.err = err
		return
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "event: %s\ndata: %s\n\n", typ, b)
	if _, err := s.w.Write(buf.Bytes()); err != nil {
		s.err = errClientGone
		return
	}
	if s.f != nil {
		s.f.Flush()
	}
}

func (s *sseWriter) pause(d time.Duration) {
	if s.err != nil {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.ctx.Done():
		s.err = errClientGone
	}
}
