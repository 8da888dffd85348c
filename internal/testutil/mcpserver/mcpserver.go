// Package mcpserver is a minimal MCP server for tests: the streamable-HTTP
// transport (one POST per JSON-RPC message, each request answered with a
// plain application/json body; no server-initiated stream, so GET is 405),
// with a fixed list of tools whose calls it records. It implements only
// what a client needs to list and call tools: initialize, ping,
// tools/list and tools/call.
package mcpserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// Tool is one tool the server offers; its calls are answered with Reply.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"`
	// Annotations are the tool's MCP annotations (readOnlyHint, …), if any.
	Annotations json.RawMessage `json:"annotations,omitempty"`
	// Reply is the text a call returns.
	Reply string `json:"-"`
}

// Call is one tools/call the server answered.
type Call struct {
	Tool      string
	Arguments json.RawMessage
	// Header is the HTTP header of the request that carried the call.
	Header http.Header
}

// Server is a running MCP server on a loopback listener.
type Server struct {
	// URL is the endpoint (http://127.0.0.1:<port>/mcp).
	URL string

	tools []Tool
	srv   *http.Server

	mu       sync.Mutex
	calls    []Call
	requests []string // JSON-RPC methods in arrival order
}

// Start serves tools on a loopback port until the test ends.
func Start(tb testing.TB, tools ...Tool) *Server {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("mcpserver: listen: %v", err)
	}
	s := &Server{URL: "http://" + l.Addr().String() + "/mcp", tools: tools}
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", s.handle)
	s.srv = &http.Server{Handler: mux}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.srv.Serve(l)
	}()
	tb.Cleanup(func() {
		_ = s.srv.Close()
		<-done
	})
	return s
}

// Calls returns the tool calls answered so far.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Methods returns the JSON-RPC methods received so far, in order.
func (s *Server) Methods() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		// No server-initiated stream and no session to delete.
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(r.Body)
	var msg message
	if err == nil {
		err = json.Unmarshal(body, &msg)
	}
	if err != nil {
		http.Error(w, "not a JSON-RPC message", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, msg.Method)
	s.mu.Unlock()
	if len(msg.ID) == 0 || msg.Method == "" {
		// A notification or a response: accepted, nothing to answer.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	result, rpcErr := s.answer(msg, r.Header)
	out := map[string]any{"jsonrpc": "2.0", "id": msg.ID}
	if rpcErr != nil {
		out["error"] = rpcErr
	} else {
		out["result"] = result
	}
	w.Header().Set("Content-Type", "application/json")
	if msg.Method == "initialize" {
		w.Header().Set("Mcp-Session-Id", "test-session")
	}
	_ = json.NewEncoder(w).Encode(out)
}

func (s *Server) answer(msg message, h http.Header) (any, map[string]any) {
	switch msg.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(msg.Params, &p)
		return map[string]any{
			"protocolVersion": p.ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{"listChanged": false}},
			"serverInfo":      map[string]any{"name": "test-mcp", "version": "1.0.0"},
		}, nil
	case "ping":
		return map[string]any{}, nil
	case "tools/list":
		return map[string]any{"tools": s.tools}, nil
	case "tools/call":
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		_ = json.Unmarshal(msg.Params, &p)
		for _, t := range s.tools {
			if t.Name != p.Name {
				continue
			}
			s.mu.Lock()
			s.calls = append(s.calls, Call{Tool: p.Name, Arguments: p.Arguments, Header: h.Clone()})
			s.mu.Unlock()
			return map[string]any{"content": []any{map[string]any{"type": "text", "text": t.Reply}}, "isError": false}, nil
		}
		return nil, map[string]any{"code": -32602, "message": fmt.Sprintf("unknown tool %q", p.Name)}
	}
	if strings.HasPrefix(msg.Method, "notifications/") {
		return map[string]any{}, nil
	}
	return nil, map[string]any{"code": -32601, "message": "method not found: " + msg.Method}
}
