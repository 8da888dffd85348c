package codex

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/policy/toolpolicy"
)

// Re-seeding a thread: continuing a conversation on a new native thread.
//
// Codex fixes a thread's dynamic tools at thread/start: thread/resume
// ignores dynamicTools, and so does thread/fork, whose fork keeps the
// source's tools (TestForkKeepsTheSourceThreadsTools). No other request sets
// them. What works (TestReseedContinuesTheConversationWithNewTools) is a
// new thread started with the new tools, into which thread/inject_items
// appends the earlier conversation as raw Responses API items before the
// first turn: the model's first request on the new thread carries Codex's
// own context for the new thread, then the injected history, then the
// prompt.
//
// The history is read with thread/items/list (public, paginated; the rollout
// file is Codex's private format and can outgrow one message) and converted:
// user messages (text; an image the user attached is listed without its
// data, so it becomes a "[image]" note), assistant messages, host (dynamic)
// tool calls and command executions as function_call/function_call_output
// pairs. Reasoning (encrypted for the model that wrote it), plans, web
// searches and other native items are not carried over; nor is a compaction
// summary (the items list shows the items compaction replaced, so they are
// carried instead).
//
// The same injection carries turns the session ran elsewhere: the messages
// the gateway's embedded runtime ran (the attempt's gatewayTranscript), as
// plain user and assistant messages. A resumed thread gets them appended
// (thread/inject_items works after turns too); a re-seeded one after the
// old thread's items, a new one alone (TestReseedCarriesTheGatewaysMessages).
//
// thread/items/list does not list injected items (TestInjectedItemsAreNotListed):
// a re-seed of a thread that was itself seeded, or had the gateway's
// messages appended, carries only the thread's own turns and loses what
// was injected.

// maxHistoryPages bounds thread/items/list paging (100 items a page).
const maxHistoryPages = 1000

// offeredTools are the host tools a turn offers as dynamicTools: none when
// tools are disabled, never a safe-denied one.
func offeredTools(in adapter.TurnInput) []appserver.DynamicTool {
	if in.DisableTools {
		return nil
	}
	denied := map[string]bool{}
	for _, id := range in.SafeDeniedTools {
		denied[toolpolicy.Normalize(id)] = true
	}
	var out []appserver.DynamicTool
	for _, tool := range in.Tools {
		if !denied[toolpolicy.Normalize(tool.Name)] {
			out = append(out, appserver.FunctionTool(tool.Name, tool.Description, tool.Parameters))
		}
	}
	return out
}

// HostToolsFingerprint identifies the host tool surface a thread started
// for in would offer: a sha256 over the offered tools' names, descriptions
// and parameter schemas (JSON with sorted keys), in name order, so a
// gateway listing the same tools in another order or with reformatted
// schemas gets the same fingerprint. A turn offering no host tools has a
// fingerprint too: "" is reserved for "unknown".
func HostToolsFingerprint(in adapter.TurnInput) string {
	type tool struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Parameters  any    `json:"parameters"`
	}
	tools := []tool{}
	for _, dt := range offeredTools(in) {
		var schema any
		_ = json.Unmarshal(dt.InputSchema, &schema) // Validate checked it is a JSON object
		tools = append(tools, tool{Name: dt.Name, Description: dt.Description, Parameters: schema})
	}
	slices.SortFunc(tools, func(a, b tool) int { return strings.Compare(a.Name, b.Name) })
	b, _ := json.Marshal(tools) // maps marshal with sorted keys
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Seed is what a turn's thread was given before the turn: a new thread's
// (Reseed), or the gateway's messages appended to the resumed thread.
type Seed struct {
	// From is the thread whose conversation it continues (the thread itself
	// when the messages were appended to it); empty for none.
	From string
	// ThreadItems counts the Responses API items copied from From.
	ThreadItems int
	// MirrorMessages counts the messages of the transcript mirror a new
	// thread started with (From empty: the session came from another
	// harness).
	MirrorMessages int
	// GatewayMessages counts the messages the gateway ran itself, injected
	// after them.
	GatewayMessages int
}

// Source is the thread a re-seed continues: its id (empty: none) and the
// resume config Codex needs to load it (a thread that authenticated with an
// auth profile needs its provider back; nil for others).
type Source struct {
	ThreadID string
	Config   map[string]any
	// Messages, when ThreadID is empty, are the conversation so far from the
	// dispatcher's transcript mirror (the session's thread is on another
	// harness).
	Messages []wire.GatewayMessage
}

// Reseed starts a new thread with p and continues on it the conversation of
// thread from (src.ThreadID, loaded with src.Config), followed by the messages the gateway ran itself (gateway):
// thread/start, then one thread/inject_items with from's history and the
// gateway's messages as user and assistant messages. from may be empty (the
// session has no thread on this server yet): the thread then carries only
// the gateway's messages. The new thread offers p's dynamic tools and
// nothing of from's.
//
// from is resumed first (and released again): Codex answers
// thread/items/list for a thread it has no rollout for with "not supported
// yet", while thread/resume says "no rollout found", which is
// ErrThreadNotFound as for a resumed turn (TestReseedFromAnUnknownThread);
// a stored thread that is not loaded is read from its rollout
// (TestReseedAfterServerRestart); and a from that
// still runs an orphaned turn is ErrThreadBusy (its turn is interrupted), so
// no history is copied from the middle of a turn. A failure after
// thread/start leaves the new thread unused (it is archived with the
// session's working directory).
func Reseed(ctx context.Context, c *appserver.Client, src Source, gateway []wire.GatewayMessage,
	p appserver.ThreadStartParams, opts appserver.ThreadOptions) (*appserver.Thread, Seed, error) {
	from := src.ThreadID
	seed := Seed{From: from, GatewayMessages: len(gateway)}
	var items []map[string]any
	if from != "" {
		history, err := sourceHistory(ctx, c, from, src.Config)
		if err != nil {
			return nil, seed, err
		}
		items, seed.ThreadItems = history, len(history)
	} else {
		for _, m := range src.Messages {
			items = append(items, messageItem(m.Role, m.Text))
		}
		seed.MirrorMessages = len(src.Messages)
	}
	for _, m := range gateway {
		items = append(items, messageItem(m.Role, m.Text))
	}
	th, err := c.StartThread(ctx, p, opts)
	if err != nil {
		return nil, seed, fmt.Errorf("codex: re-seed from thread %q: thread/start: %w", from, err)
	}
	if len(items) == 0 {
		return th, seed, nil
	}
	if err := c.Call(ctx, "thread/inject_items", map[string]any{"threadId": th.ID, "items": items}, nil); err != nil {
		th.Release()
		return nil, seed, fmt.Errorf("codex: re-seed from thread %q: thread/inject_items into %s: %w", from, th.ID, err)
	}
	return th, seed, nil
}

// reseedEvent is the lifecycle/reseeded agent_event of a turn whose thread
// was given what it lacked: the text says why (the host tools changed, or
// the gateway ran turns itself), names both threads (the same one when the
// gateway's messages were appended to the resumed thread), what was
// injected and the host tools a new thread offers; Data carries the same as
// {fromThreadId, threadId, hostTools, threadItems, gatewayMessages}. A
// fingerprint cannot name the tools the old thread offered, so the event
// lists the new surface, not a difference.
func (t *Turn) reseedEvent() adapter.Event {
	tools := []string{}
	for name := range t.offered {
		tools = append(tools, name)
	}
	slices.Sort(tools)
	offered := "no host tools"
	if len(tools) > 0 {
		offered = "host tools " + strings.Join(tools, ", ")
	}
	s := t.seed
	var text string
	switch {
	case s.From == t.threadID:
		text = fmt.Sprintf("the gateway ran turns itself since thread %s last ran: its %d messages were appended to the thread "+
			"before this turn", s.From, s.GatewayMessages)
	case s.MirrorMessages > 0:
		text = fmt.Sprintf("the session's conversation ran on another harness: it continues on new thread %s, seeded with "+
			"the last %d user and assistant messages of the dispatcher's transcript mirror (%d older ones left out; tool "+
			"calls and reasoning are not carried over) and %d messages the gateway ran itself; it offers %s",
			t.threadID, s.MirrorMessages, t.in.MirrorDropped, s.GatewayMessages, offered)
	case s.GatewayMessages == 0 && t.in.ReseedFromProvider != TurnProvider(t.in):
		text = fmt.Sprintf("%s and Codex fixes how a thread authenticates when it starts: the "+
			"conversation continues from thread %s on new thread %s, which offers %s", providerChange(t.in), s.From, t.threadID, offered)
	case s.GatewayMessages == 0:
		text = fmt.Sprintf("the host tools changed since thread %s started: the conversation continues on new thread %s, "+
			"which offers %s", s.From, t.threadID, offered)
	case s.From == "":
		text = fmt.Sprintf("the conversation continues on new thread %s, seeded with the %d messages the gateway ran itself; "+
			"it offers %s", t.threadID, s.GatewayMessages, offered)
	default:
		text = fmt.Sprintf("the gateway ran turns itself since thread %s last ran: the conversation continues on new thread %s, "+
			"seeded with %d items of thread %s and the %d messages the gateway ran; it offers %s",
			s.From, t.threadID, s.ThreadItems, s.From, s.GatewayMessages, offered)
	}
	data, _ := json.Marshal(map[string]any{"fromThreadId": s.From, "threadId": t.threadID, "hostTools": tools,
		"threadItems": s.ThreadItems, "mirrorMessages": s.MirrorMessages, "gatewayMessages": s.GatewayMessages})
	return adapter.Event{Type: wire.EventAgent, Agent: &wire.AgentEvent{Stream: wire.StreamLifecycle, Phase: wire.PhaseReseeded,
		Text: text, Data: data}}
}

// appendGatewayMessages appends the gateway's messages to the resumed
// thread id before the turn (thread/inject_items works on a thread that ran
// turns: TestReseedCarriesTheGatewaysMessages), so the conversation
// continues on the same thread, its reasoning intact.
func (t *Turn) appendGatewayMessages(ctx context.Context, c *appserver.Client, id string) error {
	if len(t.in.GatewayMessages) == 0 {
		return nil
	}
	items := make([]map[string]any, 0, len(t.in.GatewayMessages))
	for _, m := range t.in.GatewayMessages {
		items = append(items, messageItem(m.Role, m.Text))
	}
	if err := c.Call(ctx, "thread/inject_items", map[string]any{"threadId": id, "items": items}, nil); err != nil {
		return fmt.Errorf("codex: append the gateway's messages to thread %s: thread/inject_items: %w", id, err)
	}
	t.seed = &Seed{From: id, GatewayMessages: len(items)}
	return nil
}

// gatewayRecords are the transcript records of the gateway's messages a
// seeded thread carries, marked as the gateway's, so the transcript mirror
// stays the whole conversation.
func (t *Turn) gatewayRecords() []*wire.TranscriptRecord {
	var out []*wire.TranscriptRecord
	for _, m := range t.in.GatewayMessages {
		out = append(out, &wire.TranscriptRecord{Type: wire.RecordMessage, Role: m.Role, Text: m.Text,
			Gateway: true, ThreadID: t.threadID})
	}
	return out
}

// sourceHistory loads thread id (thread/resume, keeping its config), refuses
// it while a turn runs on it, and reads its history.
func sourceHistory(ctx context.Context, c *appserver.Client, id string, cfg map[string]any) ([]map[string]any, error) {
	_ = c.Call(ctx, "thread/unsubscribe", map[string]any{"threadId": id}, nil)
	th, err := c.ResumeThread(ctx, appserver.ThreadResumeParams{ThreadID: id, Config: cfg, ExcludeTurns: true}, appserver.ThreadOptions{})
	if err != nil {
		return nil, resumeLost(err, "re-seed: thread/resume "+id)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		_ = c.Call(cctx, "thread/unsubscribe", map[string]any{"threadId": id}, nil)
		th.Release()
	}()
	if err := interruptOrphan(ctx, c, th.Info); err != nil {
		return nil, err
	}
	return threadHistory(ctx, c, id)
}

// threadHistory reads thread id's items (thread/items/list, oldest first)
// as Responses API input items.
func threadHistory(ctx context.Context, c *appserver.Client, id string) ([]map[string]any, error) {
	var out []map[string]any
	params := map[string]any{"threadId": id, "limit": threadListPage}
	for range maxHistoryPages {
		var res struct {
			Data []struct {
				Item historyItem `json:"item"`
			} `json:"data"`
			NextCursor *string `json:"nextCursor"`
		}
		if err := c.Call(ctx, "thread/items/list", params, &res); err != nil {
			return nil, fmt.Errorf("codex: re-seed: thread/items/list %s: %w", id, err)
		}
		for _, d := range res.Data {
			out = append(out, d.Item.responseItems()...)
		}
		if res.NextCursor == nil || *res.NextCursor == "" || len(res.Data) == 0 {
			return out, nil
		}
		params["cursor"] = *res.NextCursor
	}
	return nil, fmt.Errorf("codex: re-seed: thread %s has more than %d pages of items", id, maxHistoryPages)
}

// historyItem is the part of a ThreadItem (thread/items/list) a re-seed
// carries over.
type historyItem struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"` // userMessage
	Text string `json:"text"` // agentMessage
	// dynamicToolCall
	Tool         string          `json:"tool"`
	Arguments    json.RawMessage `json:"arguments"`
	ContentItems []struct {
		Text string `json:"text"`
	} `json:"contentItems"`
	// commandExecution
	Command          string  `json:"command"`
	Cwd              string  `json:"cwd"`
	AggregatedOutput *string `json:"aggregatedOutput"`
	ExitCode         *int    `json:"exitCode"`
	Status           string  `json:"status"`
}

// responseItems converts one thread item to Responses API input items.
func (it historyItem) responseItems() []map[string]any {
	switch it.Type {
	case "userMessage":
		var parts []map[string]any
		for _, c := range it.Content {
			text := c.Text
			if c.Type == "image" || c.Type == "localImage" {
				text = "[image]"
			}
			if text != "" {
				parts = append(parts, map[string]any{"type": "input_text", "text": text})
			}
		}
		if len(parts) == 0 {
			return nil
		}
		return []map[string]any{{"type": "message", "role": "user", "content": parts}}
	case "agentMessage":
		if it.Text == "" {
			return nil
		}
		return []map[string]any{messageItem(wire.RoleAssistant, it.Text)}
	case "dynamicToolCall":
		if it.Status == "inProgress" {
			return nil
		}
		var out []string
		for _, c := range it.ContentItems {
			out = append(out, c.Text)
		}
		return functionCall(it.ID, it.Tool, string(orEmptyObject(it.Arguments)), strings.Join(out, "\n"))
	case "commandExecution":
		if it.Status == "inProgress" {
			return nil
		}
		args, _ := json.Marshal(map[string]string{"cmd": it.Command, "workdir": it.Cwd})
		out := deref(it.AggregatedOutput)
		if it.ExitCode != nil {
			out = fmt.Sprintf("Exit code: %d\nOutput:\n%s", *it.ExitCode, out)
		}
		return functionCall(it.ID, "exec_command", string(args), out)
	}
	return nil
}

// messageItem is a user (input_text) or assistant (output_text) message.
func messageItem(role, text string) map[string]any {
	part := "input_text"
	if role == wire.RoleAssistant {
		part = "output_text"
	}
	return map[string]any{"type": "message", "role": role, "content": []map[string]any{{"type": part, "text": text}}}
}

func functionCall(callID, name, args, output string) []map[string]any {
	return []map[string]any{
		{"type": "function_call", "call_id": callID, "name": name, "arguments": args},
		{"type": "function_call_output", "call_id": callID, "output": output},
	}
}

func orEmptyObject(b json.RawMessage) json.RawMessage {
	if len(b) == 0 || string(b) == "null" {
		return json.RawMessage("{}")
	}
	return b
}
