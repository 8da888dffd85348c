package codex

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

// relay maps one Codex event of the turn onto the engine's stream; t.mu must
// be held.
func (t *Turn) relay(ev appserver.Event) {
	switch e := ev.(type) {
	case appserver.TurnStarted:
		t.emit(agentEvent(wire.StreamLifecycle, wire.PhaseStart, "", string(e.Turn.Status)))
	case appserver.ItemStarted:
		t.itemStarted(e.Item)
	case appserver.AgentMessageDelta:
		st := t.item(e.ItemID, "agentMessage")
		// The deltas relayed for a message are the prefix of its text that
		// one connection delivered from its start. After a reattach, deltas
		// of a message whose start this connection did not see follow a
		// gap, and a message read back from thread/turns/list is already
		// complete (Codex lists only finished items): either way the text
		// the client lacks is sent once, by itemCompleted.
		if st.completed || t.connGen > 0 && st.startGen != t.connGen {
			return
		}
		st.relayed.WriteString(e.Delta)
		t.emit(adapter.Event{Type: wire.EventPartial, Partial: &wire.Partial{ItemID: e.ItemID, Delta: e.Delta}})
	case appserver.ReasoningDelta:
		a := agentEvent(wire.StreamReasoning, wire.PhaseDelta, e.ItemID, "")
		a.Agent.Text = e.Delta
		t.emit(a)
	case appserver.PlanDelta:
		a := agentEvent(wire.StreamPlan, wire.PhaseDelta, e.ItemID, "")
		a.Agent.Text = e.Delta
		t.emit(a)
	case appserver.PlanUpdated:
		var b strings.Builder
		if e.Explanation != "" {
			b.WriteString(e.Explanation)
			b.WriteString("\n")
		}
		for _, s := range e.Plan {
			fmt.Fprintf(&b, "- [%s] %s\n", s.Status, s.Step)
		}
		t.planSteps = strings.TrimSpace(b.String())
		a := agentEvent(wire.StreamPlan, wire.PhaseUpdate, "", "")
		a.Agent.Text = t.planSteps
		a.Agent.Data = e.Params
		t.emit(a)
	case appserver.CommandOutputDelta:
		a := agentEvent(wire.StreamTool, wire.PhaseUpdate, e.ItemID, "")
		a.Agent.Tool, a.Agent.CallID, a.Agent.Text = wire.NativeToolExec, e.ItemID, e.Delta
		t.emit(a)
	case appserver.TokenUsageUpdated:
		if !t.usageSeen {
			t.usageSeen = true
			t.usageBase = sub(e.Usage.Total, e.Usage.Last)
		}
		t.usageLast = e.Usage.Total
	case appserver.ErrorNotice:
		a := agentEvent(wire.StreamError, "", "", e.Error.ErrorInfo())
		a.Agent.Text = e.Error.Message
		a.Agent.Data = e.Params
		t.emit(a)
	case appserver.ServerRequestHandled:
		t.serverRequest(e)
	case appserver.ItemCompleted:
		t.itemCompleted(e.Item)
	}
}

func agentEvent(stream, phase, itemID, status string) adapter.Event {
	return adapter.Event{Type: wire.EventAgent, Agent: &wire.AgentEvent{Stream: stream, Phase: phase, ItemID: itemID, Status: status}}
}

func sub(a, b appserver.TokenBreakdown) appserver.TokenBreakdown {
	return appserver.TokenBreakdown{
		TotalTokens:           a.TotalTokens - b.TotalTokens,
		InputTokens:           a.InputTokens - b.InputTokens,
		CachedInputTokens:     a.CachedInputTokens - b.CachedInputTokens,
		OutputTokens:          a.OutputTokens - b.OutputTokens,
		ReasoningOutputTokens: a.ReasoningOutputTokens - b.ReasoningOutputTokens,
	}
}

// item returns the relay state of an item, creating it as "not started on
// any connection".
func (t *Turn) item(id, typ string) *itemState {
	st := t.items[id]
	if st == nil {
		st = &itemState{typ: typ, startGen: -1}
		t.items[id] = st
	}
	return st
}

func (t *Turn) itemStarted(it appserver.Item) {
	st := t.item(it.ID, it.Type)
	if st.completed {
		return
	}
	if st.startGen < 0 {
		st.startGen = t.connGen
	}
	t.noteItem(it)
	switch it.Type {
	case "userMessage", "agentMessage", "dynamicToolCall":
		// The prompt record, partials and the host tool handler cover these.
	case "reasoning":
		t.emit(agentEvent(wire.StreamReasoning, wire.PhaseStart, it.ID, ""))
	case "plan":
		t.emit(agentEvent(wire.StreamPlan, wire.PhaseStart, it.ID, ""))
	case "contextCompaction":
		t.emit(agentEvent(wire.StreamCompaction, wire.PhaseStart, it.ID, ""))
	default:
		if n, ok := describeNative(it); ok {
			a := agentEvent(wire.StreamTool, wire.PhaseStart, it.ID, it.Status)
			a.Agent.Tool, a.Agent.CallID, a.Agent.Data = n.tool, it.ID, withoutImageBytes(it.Type, it.Raw)
			t.emit(a)
		}
	}
}

// itemCompleted relays a completed item, once.
func (t *Turn) itemCompleted(it appserver.Item) {
	st := t.item(it.ID, it.Type)
	if st.completed {
		return
	}
	st.completed = true
	switch it.Type {
	case "userMessage":
	case "agentMessage":
		// Send what the client has not seen: all of it when no delta was
		// relayed, the missing tail after a reattach.
		if rel := st.relayed.String(); strings.HasPrefix(it.Text, rel) && len(it.Text) > len(rel) {
			t.emit(adapter.Event{Type: wire.EventPartial, Partial: &wire.Partial{ItemID: it.ID, Delta: it.Text[len(rel):]}})
		}
		t.texts = append(t.texts, it.Text)
		t.emit(adapter.Event{Type: wire.EventTranscript, Transcript: &wire.TranscriptRecord{
			Type: wire.RecordMessage, Role: wire.RoleAssistant, Text: it.Text,
			ThreadID: t.threadID, TurnID: t.turnID, ItemID: it.ID}})
	case "reasoning":
		text := strings.Join(append(append([]string{}, it.Summary...), it.ReasoningContent...), "\n")
		t.reasoning = append(t.reasoning, text)
		a := agentEvent(wire.StreamReasoning, wire.PhaseEnd, it.ID, "")
		a.Agent.Text = text
		t.emit(a)
	case "plan":
		t.plans = append(t.plans, it.Text)
		a := agentEvent(wire.StreamPlan, wire.PhaseEnd, it.ID, "")
		a.Agent.Text = it.Text
		t.emit(a)
	case "contextCompaction":
		// Codex also sends the deprecated thread/compacted notification for
		// the same compaction; the item alone is relayed.
		t.emit(agentEvent(wire.StreamCompaction, wire.PhaseEnd, it.ID, ""))
	case "dynamicToolCall":
		a := agentEvent(wire.StreamTool, wire.PhaseEnd, it.ID, it.Status)
		a.Agent.Tool, a.Agent.CallID = it.Tool, it.ID
		t.emit(a)
		if !t.terminals[it.ID] && t.calls[it.ID] == nil {
			// The call reached no handler of this adapter (e.g. it was sent
			// to a connection that dropped): report what Codex recorded. A
			// handler that is still waiting (Codex completes the item as
			// failed at an interrupt) reports the call itself.
			success := it.Success != nil && *it.Success && it.Status == "completed"
			term := &wire.ToolTerminal{CallID: it.ID, Tool: it.Tool, Arguments: it.Arguments, ExecutionStarted: true,
				Outcome: wire.OutcomeSuccess}
			if !success {
				term.Outcome = wire.OutcomeFailure
				term.Failure = &wire.ToolFailure{Reason: wire.FailureToolError, Message: contentText(it.ContentItems)}
			}
			t.terminal(term)
		}
	default:
		n, ok := describeNative(it)
		if !ok {
			return
		}
		a := agentEvent(wire.StreamTool, wire.PhaseEnd, it.ID, it.Status)
		a.Agent.Tool, a.Agent.CallID, a.Agent.Data = n.tool, it.ID, withoutImageBytes(it.Type, it.Raw)
		t.emit(a)
		if t.terminals[it.ID] {
			return // declined earlier: already reported
		}
		media := t.deliverImage(it.ID, &n)
		t.emit(adapter.Event{Type: wire.EventTranscript, Transcript: &wire.TranscriptRecord{
			Type: wire.RecordToolCall, Role: wire.RoleAssistant, CallID: it.ID, Tool: n.tool, Arguments: n.args,
			Native: true, ThreadID: t.threadID, TurnID: t.turnID, ItemID: it.ID}})
		t.emit(adapter.Event{Type: wire.EventTranscript, Transcript: &wire.TranscriptRecord{
			Type: wire.RecordToolResult, Role: wire.RoleTool, CallID: it.ID, Tool: n.tool, Text: n.output,
			IsError: n.failure != nil, Native: true, ThreadID: t.threadID, TurnID: t.turnID, ItemID: it.ID}})
		if media != nil {
			t.emit(adapter.Event{Type: wire.EventMedia, Media: media})
		}
		term := &wire.ToolTerminal{CallID: it.ID, Tool: n.tool, Arguments: n.args, ExecutionStarted: n.started,
			Outcome: wire.OutcomeSuccess, Native: true, NativeMutation: n.mutation}
		if n.failure != nil {
			term.Outcome, term.Failure = wire.OutcomeFailure, n.failure
		}
		t.terminal(term)
	}
}

// serverRequest makes a declined approval or unanswered user-input request
// visible, once: an agent_event and a failed tool_terminal
// (docs/design/contract-rules.md, rule 9); its approval_request and
// request_resolved came from its handler (requests.go). Host tool calls are
// reported by their handler.
func (t *Turn) serverRequest(e appserver.ServerRequestHandled) {
	var p struct {
		ItemID  string `json:"itemId"`
		Command string `json:"command"`
		Cwd     string `json:"cwd"`
		Reason  string `json:"reason"`
	}
	_ = json.Unmarshal(e.Params, &p)
	var stream string
	switch e.Kind {
	case appserver.KindToolCall:
		return
	case appserver.KindApproval, appserver.KindElicitation:
		stream = wire.StreamApproval
	case appserver.KindUserInput:
		stream = wire.StreamUserInput
	default:
		a := agentEvent(wire.StreamWarning, wire.PhaseRefused, p.ItemID, "")
		a.Agent.Text = fmt.Sprintf("refused the unsupported server request %s", e.Method)
		a.Agent.Data = e.Params
		t.emit(a)
		return
	}
	t.requestSeq++
	callID := p.ItemID
	if callID == "" {
		callID = fmt.Sprintf("%s#%d", e.Method, t.requestSeq)
	}
	if !e.Declined {
		return // approved or answered: the item reports the action
	}
	msg, report := t.declineReport(e)
	if !report {
		return
	}
	tool := requestTool(e.Method)
	a := agentEvent(stream, wire.PhaseDeclined, p.ItemID, "")
	a.Agent.Tool, a.Agent.CallID, a.Agent.Text, a.Agent.Data = tool, callID, msg, e.Params
	t.emit(a)
	if t.terminals[callID] {
		return
	}
	args := e.Params
	if p.Command != "" {
		args, _ = json.Marshal(map[string]string{"command": p.Command, "cwd": p.Cwd})
	}
	t.terminal(&wire.ToolTerminal{CallID: callID, Tool: tool, Arguments: args, ExecutionStarted: false,
		Outcome: wire.OutcomeFailure, Failure: &wire.ToolFailure{Reason: wire.FailureDeclined, Message: msg}})
}

// terminal emits a tool's one terminal outcome and maintains lastToolError;
// t.mu must be held.
func (t *Turn) terminal(term *wire.ToolTerminal) {
	if t.terminals[term.CallID] {
		return
	}
	t.terminals[term.CallID] = true
	t.emit(adapter.Event{Type: wire.EventToolTerminal, ToolTerminal: term})
	t.lastErr = nextToolError(t.lastErr, term)
}

func sameJSON(a, b json.RawMessage) bool { return canonicalJSON(a) == canonicalJSON(b) }

func contentText(items []appserver.ContentItem) string {
	var parts []string
	for _, c := range items {
		if c.Text != "" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// native describes a native tool item for tool events and the transcript.
type native struct {
	tool     string          // canonical tool name
	args     json.RawMessage // what reached the tool
	output   string          // result text for the transcript
	started  bool            // executionStarted
	failure  *wire.ToolFailure
	mutation *wire.NativeMutation // the protocol-owned mutation facts
	image    string               // a generated image, base64 (imageGeneration)
}

// describeNative maps a native tool item (commandExecution, fileChange,
// mcpToolCall, webSearch, imageView, imageGeneration) onto a canonical tool
// name and its outcome. Other item kinds are not tools.
func describeNative(it appserver.Item) (native, bool) {
	var raw struct {
		Cwd     string          `json:"cwd"`
		Changes json.RawMessage `json:"changes"`
		Server  string          `json:"server"`
		Query   string          `json:"query"`
		Path    string          `json:"path"`
		Result  json.RawMessage `json:"result"`
		Error   *struct {
			Message string `json:"message"`
		} `json:"error"`
		RevisedPrompt *string         `json:"revisedPrompt"`
		Failure       json.RawMessage `json:"failure"`
	}
	_ = json.Unmarshal(it.Raw, &raw)
	n := native{started: true}
	failed := func(msg string) {
		n.failure = &wire.ToolFailure{Reason: wire.FailureNative, Message: msg}
	}
	switch it.Type {
	case "commandExecution":
		n.tool = wire.NativeToolExec
		n.args, _ = json.Marshal(map[string]string{"command": it.Command, "cwd": raw.Cwd})
		if it.AggregatedOutput != nil {
			n.output = *it.AggregatedOutput
		}
		switch {
		case it.Status == "declined":
			n.started = false
			n.failure = &wire.ToolFailure{Reason: wire.FailureDeclined, Message: "the command was declined"}
		case it.Status == "failed":
			failed("the command failed")
		case it.ExitCode != nil && *it.ExitCode != 0:
			failed(fmt.Sprintf("the command exited with code %d", *it.ExitCode))
		}
		if n.failure != nil {
			n.failure.ExitCode = it.ExitCode
		}
	case "fileChange":
		n.tool = wire.NativeToolApplyPatch
		n.args, _ = json.Marshal(map[string]json.RawMessage{"changes": raw.Changes})
		n.output = it.Status
		switch it.Status {
		case "declined":
			n.started = false
			n.failure = &wire.ToolFailure{Reason: wire.FailureDeclined, Message: "the patch was declined"}
		case "failed":
			failed("the patch failed")
		}
	case "mcpToolCall":
		n.tool = raw.Server + "__" + it.Tool
		n.args = it.Arguments
		n.output = string(raw.Result)
		if it.Status == "failed" || raw.Error != nil {
			msg := "the MCP tool failed"
			if raw.Error != nil && raw.Error.Message != "" {
				msg = raw.Error.Message
			}
			failed(msg)
			n.output = msg
		}
	case "webSearch":
		n.tool = wire.NativeToolWebSearch
		n.args, _ = json.Marshal(map[string]string{"query": raw.Query})
		n.output = string(raw.Result)
	case "imageView":
		n.tool = wire.NativeToolViewImage
		n.args, _ = json.Marshal(map[string]string{"path": raw.Path})
	case "imageGeneration":
		n.tool = wire.NativeToolImageGenerate
		n.args, _ = json.Marshal(map[string]string{"prompt": deref(raw.RevisedPrompt)})
		switch {
		case it.Status == "failed" || len(raw.Failure) > 0 && string(raw.Failure) != "null":
			failed("image generation failed: " + string(raw.Failure))
		default:
			// The image itself, base64: the item's result (Codex also saves
			// it as savedPath on the app-server's filesystem, which no
			// gateway can fetch; doc.go "Usage and media").
			_ = json.Unmarshal(raw.Result, &n.image)
		}
	default:
		return native{}, false
	}
	key, changed := any(n.args), []string(nil)
	if it.Type == "fileChange" {
		// A patch is the same action as a later patch of the same files,
		// whatever its hunks: that one succeeding resolves the failure.
		changed = changedPaths(raw.Changes)
		key = changed
	}
	n.mutation = nativeMutation(it.Type, n.tool, n.started, key, changed)
	return n, true
}

// deliverImage decides the fate of a generated image (n.image): the media
// event that delivers it, named in the result's toolMediaUrls and
// hostOwnedToolMediaUrls (the runtime created and persisted it itself),
// or, when it cannot be delivered (nativeImage: none, not base64, over
// wire.NativeMediaMaxBytes, not an image), a warning agent_event saying
// why. Either way n.output, the tool result's transcript text, says what
// became of it. Nil for every other item.
func (t *Turn) deliverImage(callID string, n *native) *wire.NativeMedia {
	if n.tool != wire.NativeToolImageGenerate || n.failure != nil {
		return nil
	}
	media, err := nativeImage(callID, n.tool, n.image, wire.NativeMediaMaxBytes)
	if err != nil {
		n.output = "generated an image that was not delivered: " + err.Error()
		a := agentEvent(wire.StreamWarning, wire.PhaseRefused, callID, "")
		a.Agent.Tool, a.Agent.CallID, a.Agent.Text = n.tool, callID, "the generated image is not delivered: "+err.Error()
		t.emit(a)
		return nil
	}
	n.output = fmt.Sprintf("generated image %s (%s, %d bytes)", media.FileName, media.MimeType, media.Size)
	t.media = append(t.media, media.URL)
	t.hostMedia = append(t.hostMedia, media.URL)
	return media
}
