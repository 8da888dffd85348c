// Package appserverdouble is a zero-latency double of `codex app-server`
// for the dispatcher's benchmarks: it speaks the app-server's JSON-RPC
// protocol over WebSocket and answers every turn at once with one short
// agent message, so that a turn's time through it is the dispatcher's own
// (BenchmarkDispatcherConcurrency in internal/dispatcher/httpapi). It lives with
// the benchmarks and is never part of the product.
//
// What it serves is what a plain text turn of the dispatcher and the
// manager's handshake use, in the shapes of the reference transcripts of
// Codex 0.169.0 (transcript-basic, -resume-2 and -ws): GET /readyz and
// /healthz without a token; the WebSocket upgrade at / with an optional
// capability token (Options.Token; a missing or wrong one is refused 401,
// as `--ws-auth capability-token` refuses it); and the methods initialize
// (with the initialized notification), account/read, model/list,
// fs/createDirectory, thread/start, thread/resume, thread/unsubscribe,
// thread/turns/list, turn/start and turn/interrupt. A turn/start is
// answered with the running turn and then, on the same connection, the
// notifications of a turn that completes at once: turn/started, the user
// message's item/started and item/completed, the agent message's
// item/started, one item/agentMessage/delta and item/completed,
// thread/tokenUsage/updated and turn/completed (with thread/status/changed
// active before and idle after). Any other method is answered with the
// JSON-RPC error -32601, so a caller that needs more fails visibly.
//
// Where it differs from Codex, on purpose: no model is called (the turn's
// text is Options.Reply), the model catalog is empty (as Codex knows no
// model of the stub), nothing is written to disk (threads live in memory
// for the server's lifetime, shared by its connections, so a thread
// started on one connection resumes on another), a turn's notifications go
// to the connection that started it (Codex sends them to every connection
// subscribed to the thread), turns never run long enough to be interrupted,
// and server requests (tool calls, approvals) are never sent.
//
// Files: server.go (the listener, the probes, the upgrade and its token),
// conn.go (one connection's JSON-RPC loop and the method table), turn.go
// (threads and the notifications of a turn).
package appserverdouble

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Version is the Codex version the double reports in its userAgent: the
// release the reference transcripts were recorded with (above the
// operator's floor, appserver.MinimumVersion).
const Version = "0.169.0"

// DefaultReply is the agent message of every turn when Options.Reply is
// empty.
const DefaultReply = "ok."

// Options configure a double.
type Options struct {
	// Token, when set, is the bearer token the WebSocket upgrade must carry
	// (what `--ws-auth capability-token` checks).
	Token string
	// Reply is the text of every turn's agent message (DefaultReply when
	// empty).
	Reply string
}

// Server is a running double on 127.0.0.1. It is safe for concurrent use.
type Server struct {
	// URL is the WebSocket endpoint, ws://127.0.0.1:<port>.
	URL string

	opts     Options
	listener net.Listener
	srv      *http.Server
	done     chan struct{} // closed when Serve returns
	ctx      context.Context
	cancel   context.CancelFunc // ends every connection
	conns    sync.WaitGroup
	closed   sync.Once

	threads threadTable
	turns   atomic.Int64 // turns started, for Turns
}

// New starts a double on a free port of 127.0.0.1. Close stops it.
func New(opts Options) (*Server, error) {
	if opts.Reply == "" {
		opts.Reply = DefaultReply
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("appserverdouble: listen on 127.0.0.1: %w", err)
	}
	s := &Server{URL: "ws://" + l.Addr().String(), opts: opts, listener: l, done: make(chan struct{}),
		threads: threadTable{byID: map[string]*thread{}}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	mux := http.NewServeMux()
	probe := func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }
	mux.HandleFunc("GET /readyz", probe)
	mux.HandleFunc("GET /healthz", probe)
	mux.HandleFunc("/", s.upgrade)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(l)
	}()
	return s, nil
}

// Start starts a double for tb and stops it when the test ends.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	s, err := New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s
}

// Close stops the listener, ends every connection and waits for them. It is
// idempotent.
func (s *Server) Close() {
	s.closed.Do(func() {
		s.cancel()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := s.srv.Shutdown(ctx); err != nil {
			_ = s.srv.Close()
		}
		<-s.done
		s.conns.Wait()
	})
}

// Turns is how many turns the double has started.
func (s *Server) Turns() int64 { return s.turns.Load() }

// upgrade accepts a WebSocket client that presents the token and serves its
// JSON-RPC messages until it leaves or the double closes.
func (s *Server) upgrade(w http.ResponseWriter, r *http.Request) {
	if s.opts.Token != "" {
		want := []byte("Bearer " + s.opts.Token)
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
	}
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return // Accept has answered the client
	}
	s.conns.Add(1)
	defer s.conns.Done()
	ws.SetReadLimit(maxMessageBytes)
	c := &conn{s: s, ws: ws}
	err = c.serve(s.ctx)
	switch {
	case errors.Is(err, context.Canceled):
		_ = ws.Close(websocket.StatusGoingAway, "the double is closing")
	default:
		_ = ws.CloseNow()
	}
}

// maxMessageBytes bounds a client's message (a thread/start with many
// dynamic tools is the largest the dispatcher sends).
const maxMessageBytes = 16 << 20
