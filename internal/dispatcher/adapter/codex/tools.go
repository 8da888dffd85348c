package codex

import (
	"context"
	"errors"
	"fmt"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/policy/toolpolicy"
)

// onToolCall answers item/tool/call (a dynamic tool call) for this turn's
// thread. It runs on the client's goroutine for server requests.
//
// A tool not offered in this turn — never offered, safe-denied, disabled,
// namespaced, or offered only when the thread started (Codex keeps the
// dynamic tools of thread/start) — is refused: success false with a clear
// message, and a failed tool_terminal with executionStarted false. An
// offered tool is a tool_call event answered through Hooks.AnswerTool
// within the tool timeout.
func (t *Turn) onToolCall(_ context.Context, call appserver.ToolCall) appserver.ToolResult {
	<-t.promptSent // the prompt record precedes the turn's tool I/O

	name := call.Tool
	if call.Namespace != nil && *call.Namespace != "" {
		name = *call.Namespace + "." + call.Tool
	}
	args := call.Arguments
	if len(args) == 0 {
		args = []byte("{}")
	}

	t.mu.Lock()
	if hc := t.calls[call.CallID]; hc != nil {
		// The same call delivered again (e.g. after a reattach): never ask
		// the client twice.
		t.mu.Unlock()
		<-hc.done
		return hc.result
	}
	hc := &hostCall{done: make(chan struct{})}
	t.calls[call.CallID] = hc
	defer close(hc.done)

	refuse := func(reason, msg string) appserver.ToolResult {
		t.toolIO(call.CallID, name, args, []appserver.ContentItem{appserver.TextContent(msg)}, true)
		a := agentEvent(wire.StreamTool, wire.PhaseRefused, call.CallID, "")
		a.Agent.Tool, a.Agent.CallID, a.Agent.Text = name, call.CallID, msg
		t.emit(a)
		t.terminal(&wire.ToolTerminal{CallID: call.CallID, Tool: name, Arguments: args, ExecutionStarted: false,
			Outcome: wire.OutcomeFailure, Failure: &wire.ToolFailure{Reason: reason, Message: msg}})
		hc.result = appserver.ToolText(msg, false)
		return hc.result
	}
	offered := (call.Namespace == nil || *call.Namespace == "") && t.offered[call.Tool]
	switch {
	case t.result != nil || t.closing:
		defer t.mu.Unlock()
		return refuse(wire.FailureCancelled, fmt.Sprintf("tool %q was called after the turn ended", name))
	case !offered && t.safeDenied[toolpolicy.Normalize(name)]:
		defer t.mu.Unlock()
		return refuse(wire.FailureNotOffered, fmt.Sprintf("tool %q is denied by the tool policy of this turn", name))
	case !offered:
		defer t.mu.Unlock()
		return refuse(wire.FailureNotOffered, fmt.Sprintf("tool %q is not available in this turn", name))
	case t.hooks.AnswerTool == nil:
		defer t.mu.Unlock()
		return refuse(wire.FailureNoClient, fmt.Sprintf("tool %q cannot run: no client answers host tools", name))
	}
	a := agentEvent(wire.StreamTool, wire.PhaseStart, call.CallID, "")
	a.Agent.Tool, a.Agent.CallID = name, call.CallID
	t.emit(a)
	t.emit(adapter.Event{Type: wire.EventToolCall, ToolCall: &wire.ToolCall{CallID: call.CallID, Tool: name, Arguments: args}})
	t.emit(adapter.Event{Type: wire.EventTranscript, Transcript: &wire.TranscriptRecord{
		Type: wire.RecordToolCall, Role: wire.RoleAssistant, CallID: call.CallID, Tool: name, Arguments: args,
		ThreadID: t.threadID, TurnID: t.turnID, ItemID: call.CallID}})
	t.handlers.Add(1)
	defer t.handlers.Done()
	turnCtx := t.turnCtx
	timeout := t.in.EffectiveToolTimeout()
	t.mu.Unlock()

	ctx, cancel := context.WithTimeout(turnCtx, timeout)
	answer, err := t.hooks.AnswerTool(ctx, wire.ToolCall{CallID: call.CallID, Tool: name, Arguments: args})
	expired := ctx.Err()
	cancel()

	t.mu.Lock()
	defer t.mu.Unlock()
	term := &wire.ToolTerminal{CallID: call.CallID, Tool: name, Arguments: args, ExecutionStarted: true}
	var res appserver.ToolResult
	switch {
	case err != nil:
		var msg, reason string
		switch {
		case errors.Is(expired, context.DeadlineExceeded):
			reason, msg = wire.FailureTimeout, fmt.Sprintf("tool %q did not answer within %v", name, timeout)
		case turnCtx.Err() != nil:
			reason, msg = wire.FailureCancelled, fmt.Sprintf("tool %q: the turn ended before the tool answered", name)
		default:
			reason, msg = wire.FailureToolError, fmt.Sprintf("tool %q failed: %v", name, err)
		}
		term.Outcome, term.Failure = wire.OutcomeFailure, &wire.ToolFailure{Reason: reason, Message: msg}
		res = appserver.ToolText(msg, false)
	default:
		res = toolResult(answer)
		term.Outcome = wire.OutcomeSuccess
		if answer.IsError {
			msg := answer.ErrorMessage
			if msg == "" {
				msg = contentText(res.ContentItems)
			}
			term.Outcome, term.Failure = wire.OutcomeFailure, &wire.ToolFailure{Reason: wire.FailureToolError, Message: msg}
		}
		t.media = append(t.media, answer.MediaURLs...)
	}
	t.toolIO(call.CallID, name, nil, res.ContentItems, term.Outcome == wire.OutcomeFailure)
	t.terminal(term)
	hc.result = res
	return res
}

// toolResult converts the client's answer into Codex's dynamic tool response.
func toolResult(a wire.ToolAnswer) appserver.ToolResult {
	res := appserver.ToolResult{Success: !a.IsError, ContentItems: []appserver.ContentItem{}}
	for _, c := range a.Content {
		switch {
		case c.Type == "image" && c.ImageURL != "":
			res.ContentItems = append(res.ContentItems, appserver.ContentItem{Type: "inputImage", ImageURL: c.ImageURL})
		case c.Text != "":
			res.ContentItems = append(res.ContentItems, appserver.TextContent(c.Text))
		}
	}
	if len(res.ContentItems) == 0 && a.ErrorMessage != "" {
		res.ContentItems = append(res.ContentItems, appserver.TextContent(a.ErrorMessage))
	}
	return res
}

// toolIO emits the transcript records of a host tool call: the call (when
// args is not nil, i.e. for a refused call that emitted no record yet) and
// its result (text and image URLs); t.mu must be held.
func (t *Turn) toolIO(callID, tool string, args []byte, content []appserver.ContentItem, isError bool) {
	var images []string
	for _, c := range content {
		if c.ImageURL != "" {
			images = append(images, c.ImageURL)
		}
	}
	if args != nil {
		t.emit(adapter.Event{Type: wire.EventTranscript, Transcript: &wire.TranscriptRecord{
			Type: wire.RecordToolCall, Role: wire.RoleAssistant, CallID: callID, Tool: tool, Arguments: args,
			ThreadID: t.threadID, TurnID: t.turnID, ItemID: callID}})
	}
	t.emit(adapter.Event{Type: wire.EventTranscript, Transcript: &wire.TranscriptRecord{
		Type: wire.RecordToolResult, Role: wire.RoleTool, CallID: callID, Tool: tool, Text: contentText(content),
		Images: images, IsError: isError, ThreadID: t.threadID, TurnID: t.turnID, ItemID: callID}})
}
