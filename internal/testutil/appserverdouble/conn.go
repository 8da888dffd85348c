package appserverdouble

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/coder/websocket"
)

// conn is one client connection. Its messages are handled one at a time in
// arrival order, each answered before the next is read (the double never
// waits for anything, so nothing is gained by handling them concurrently).
type conn struct {
	s  *Server
	ws *websocket.Conn
}

// message is a JSON-RPC message from the client: a request (method and
// id), a notification (method only) or an answer to a server request (the
// double sends none).
type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// JSON-RPC error codes the double answers with (Codex's).
const (
	codeInvalidRequest = -32600 // e.g. a thread it does not have
	codeMethodNotFound = -32601
)

// response is the answer to a request.
type response struct {
	ID     json.RawMessage `json:"id"`
	Result any             `json:"result,omitempty"`
	Error  *rpcError       `json:"error,omitempty"`
}

// notification is a server notification.
type notification struct {
	Method string `json:"method"`
	Params any    `json:"params"`
}

// answer is what a method returns: the result or the error, and the
// notifications sent after the response.
type answer struct {
	result any
	err    *rpcError
	after  []notification
}

// method answers one request's params.
type method func(s *Server, params json.RawMessage) answer

// methods are the requests the double answers; anything else is
// codeMethodNotFound.
var methods = map[string]method{
	"initialize":         (*Server).initialize,
	"account/read":       func(*Server, json.RawMessage) answer { return answer{result: loggedInByProvider} },
	"model/list":         func(*Server, json.RawMessage) answer { return answer{result: emptyCatalog} },
	"fs/createDirectory": func(*Server, json.RawMessage) answer { return answer{result: struct{}{}} },
	"thread/start":       (*Server).startThread,
	"thread/resume":      (*Server).resumeThread,
	"thread/unsubscribe": func(*Server, json.RawMessage) answer { return answer{result: unsubscribed} },
	"thread/turns/list":  (*Server).listTurns,
	"turn/start":         (*Server).startTurn,
	// A turn ends with its turn/start's notifications: there is never a
	// running turn to interrupt.
	"turn/interrupt": func(*Server, json.RawMessage) answer { return answer{result: struct{}{}} },
}

// loggedInByProvider is account/read's answer for a server whose model
// provider carries its own key (as the stub model's config does in Codex):
// no login needed, none present.
var loggedInByProvider = map[string]any{"account": nil, "requiresOpenaiAuth": false}

// unsubscribed is thread/unsubscribe's answer.
var unsubscribed = map[string]string{"status": "unsubscribed"}

// emptyCatalog is model/list's answer: one page, no model.
var emptyCatalog = map[string]any{"data": []any{}, "nextCursor": nil}

// serve reads and answers the client's messages until the connection ends
// or ctx does.
func (c *conn) serve(ctx context.Context) error {
	for {
		_, data, err := c.ws.Read(ctx)
		if err != nil {
			return err
		}
		var msg message
		if json.Unmarshal(data, &msg) != nil || msg.Method == "" || len(msg.ID) == 0 {
			continue // not a request: initialized, or an answer the double never asked for
		}
		a := answer{err: &rpcError{Code: codeMethodNotFound, Message: "method not found: " + msg.Method}}
		if m, ok := methods[msg.Method]; ok {
			a = m(c.s, msg.Params)
		}
		if err := c.write(ctx, response{ID: msg.ID, Result: a.result, Error: a.err}); err != nil {
			return err
		}
		for _, n := range a.after {
			if err := c.write(ctx, n); err != nil {
				return err
			}
		}
	}
}

// write sends one message as a text frame.
func (c *conn) write(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("appserverdouble: encode: %w", err)
	}
	return c.ws.Write(ctx, websocket.MessageText, b)
}

// initialize answers the handshake with Codex's userAgent shape,
// "<clientInfo.name>/<version> (<os>; <arch>) <terminal> (<name>; <client version>)".
func (s *Server) initialize(params json.RawMessage) answer {
	var p struct {
		ClientInfo struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"clientInfo"`
	}
	if err := json.Unmarshal(params, &p); err != nil || p.ClientInfo.Name == "" {
		return answer{err: &rpcError{Code: codeInvalidRequest, Message: "initialize: clientInfo.name is required"}}
	}
	name := p.ClientInfo.Name
	return answer{result: map[string]any{
		"userAgent":      fmt.Sprintf("%s/%s (appserverdouble; x86_64) double (%s; %s)", name, Version, name, p.ClientInfo.Version),
		"codexHome":      codexHome,
		"platformFamily": "unix",
		"platformOs":     "linux",
	}}
}

// codexHome is the native home the double reports; the dispatcher makes
// its sessions' working directories under it (fs/createDirectory, which
// writes nothing).
const codexHome = "/appserverdouble/home"
