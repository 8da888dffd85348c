package appserver

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Handlers answer server-initiated requests. A nil function declines:
// tool calls fail (success false), approvals are declined, user input gets
// no answers. Every handled request is also delivered to the turn as a
// ServerRequestHandled event, so a decline is visible
// (docs/design/contract-rules.md, rule 9).
// A function that panics fails its turn with a *TurnStreamError, not the
// process (package doc).
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

// serverRequestRefused is the JSON-RPC error code of a request refused
// because MaxServerRequests were being handled (the range -32000..-32099 is
// the implementation's own).
const serverRequestRefused = -32000

// startServerRequest hands a server request to its handler on a goroutine,
// or refuses it when MaxServerRequests are being handled already.
func (c *Client) startServerRequest(env envelope) {
	c.mu.Lock()
	if c.lostErr != nil {
		c.mu.Unlock()
		return
	}
	if c.serving >= c.opts.MaxServerRequests {
		c.mu.Unlock()
		c.refuseServerRequest(env)
		return
	}
	c.serving++
	c.goLocked(func() {
		defer func() {
			c.mu.Lock()
			c.serving--
			c.mu.Unlock()
		}()
		c.serveRequest(env)
	})
	c.mu.Unlock()
}

// refuseServerRequest answers a request over the limit with an error, on
// the read loop: it runs no handler and holds nothing, and a server that
// floods waits for the answers it causes.
func (c *Client) refuseServerRequest(env envelope) {
	c.refused.Add(1)
	msg := fmt.Sprintf("harness-operator refused %s: it is handling %d requests of this app-server already (its limit, Options.MaxServerRequests)",
		env.Method, c.opts.MaxServerRequests)
	if ok, skipped := c.refusedLog.allow(time.Now()); ok {
		c.log.Info("refused a server request over the limit", "method", env.Method,
			"limit", c.opts.MaxServerRequests, "refusedSinceLastRecord", skipped)
	}
	threadID, turnID := routingIDs(env.Params)
	c.recordServerRequest(env, threadID, turnID, requestKind(env.Method), nil, true)
	_ = c.respond(env.ID, nil, &rpcErrorBody{Code: serverRequestRefused, Message: msg})
}

// serveRequest runs the handler of a server request and answers it. A panic
// (in the caller's handler or here) answers the request with an error and
// fails the turn concerned; the connection and other turns go on.
func (c *Client) serveRequest(env envelope) {
	threadID, turnID := routingIDs(env.Params)
	defer func() {
		if pe := recovered("the handler of "+env.Method, recover()); pe != nil {
			c.logPanic(pe)
			c.failTurn(threadID, turnID, pe)
			_ = c.respond(env.ID, nil, &rpcErrorBody{Code: -32603, Message: "harness-operator failed to handle " + env.Method})
		}
	}()
	kind := requestKind(env.Method)
	result, rpcErr, declined := c.runHandler(env, kind, c.handlersFor(threadID), threadID, turnID)
	// Record the request in the turn's stream before answering, so that
	// it precedes everything the answer causes (e.g. turn/completed).
	var raw json.RawMessage
	if rpcErr == nil {
		raw, _ = json.Marshal(result)
	}
	c.recordServerRequest(env, threadID, turnID, kind, raw, declined)
	_ = c.respond(env.ID, result, rpcErr)
}

// recordServerRequest delivers a ServerRequestHandled event to the turn.
func (c *Client) recordServerRequest(env envelope, threadID, turnID string, kind ServerRequestKind, response json.RawMessage, declined bool) {
	if threadID == "" || turnID == "" {
		return
	}
	ev := ServerRequestHandled{
		EventMeta: EventMeta{Method: env.Method, ThreadID: threadID, TurnID: turnID, Params: env.Params},
		Kind:      kind, Response: response, Declined: declined,
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lostErr == nil {
		c.deliverLocked(ev)
	}
}

// requestKind classifies a server request by its method.
func requestKind(method string) ServerRequestKind {
	switch method {
	case MethodToolCall:
		return KindToolCall
	case MethodCommandApproval, MethodFileApproval, MethodPermissions, MethodApplyPatchApproval, MethodExecCommandApproval:
		return KindApproval
	case MethodElicitation:
		return KindElicitation
	case MethodUserInput:
		return KindUserInput
	default:
		return KindUnsupported
	}
}

// runHandler asks the thread's handler (or the default decline) for the
// answer to a server request.
func (c *Client) runHandler(env envelope, kind ServerRequestKind, h Handlers, threadID, turnID string) (result any, rpcErr *rpcErrorBody, declined bool) {
	ctx := c.reqCtx
	var common struct {
		ItemID  string `json:"itemId"`
		Command string `json:"command"`
	}
	_ = json.Unmarshal(env.Params, &common)

	switch kind {
	case KindToolCall:
		var call ToolCall
		if err := json.Unmarshal(env.Params, &call); err != nil {
			return nil, &rpcErrorBody{Code: -32602, Message: "invalid item/tool/call params"}, false
		}
		res := ToolText(fmt.Sprintf("tool %q is not available in this turn", call.Tool), false)
		if h.ToolCall != nil {
			res = h.ToolCall(ctx, call)
		}
		if res.ContentItems == nil {
			res.ContentItems = []ContentItem{}
		}
		return res, nil, !res.Success
	case KindApproval, KindElicitation:
		d := ApprovalDecline
		if h.Approval != nil {
			d = h.Approval(ctx, ApprovalRequest{Method: env.Method, ThreadID: threadID, TurnID: turnID,
				ItemID: common.ItemID, Command: common.Command, Params: env.Params})
		}
		return approvalResponse(env.Method, d, env.Params), nil, d != ApprovalAccept
	case KindUserInput:
		var answers map[string][]string
		if h.UserInput != nil {
			answers = h.UserInput(ctx, UserInputRequest{ThreadID: threadID, TurnID: turnID,
				ItemID: common.ItemID, Params: env.Params})
		}
		out := map[string]any{}
		for q, a := range answers {
			out[q] = map[string]any{"answers": a}
		}
		return map[string]any{"answers": out}, nil, answers == nil
	default:
		return nil, &rpcErrorBody{Code: -32601, Message: "harness-operator does not support " + env.Method}, true
	}
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
