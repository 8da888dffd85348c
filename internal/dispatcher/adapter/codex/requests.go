package codex

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

// Approval and user-input requests: Codex asks before a native action runs
// (in the approval modes) or asks the user (plan mode); the adapter relays
// the request to the client as an approval_request or user_input_request
// event, waits for the answer through Hooks.AnswerApproval or
// Hooks.AnswerUserInput until the tool timeout, emits the one
// request_resolved, and only then answers Codex — so the engine's journal
// holds the resolution before Codex acts on it.

// itemWait bounds how long an approval waits for the item/started of its
// file change (Codex sends it before the request; the relay may not have
// read it yet).
const itemWait = 5 * time.Second

// nativeRequests is what a turn remembers about its requests; Turn.mu
// guards it.
type nativeRequests struct {
	byID    map[string]*nativeRequest // by requestId, across connections
	forTurn map[string]bool           // actions approved for the turn (approvalKey)
	items   map[string]appserver.Item // fileChange items seen started
	noted   chan struct{}             // closed and replaced when an item is noted
	seq     int                       // for requests without an item id
}

// nativeRequest is one request, shared by every delivery of it (Codex
// re-sends a pending request to the connection that resumes the thread).
type nativeRequest struct {
	done       chan struct{} // closed once resolved
	resolution wire.Resolution
	decision   appserver.ApprovalDecision
	answers    map[string][]string // nil: no answers
	reported   bool                // a decline was reported (agent event, terminal)
	refusal    string              // why it was denied without asking; empty: it was not
}

func newNativeRequests() nativeRequests {
	return nativeRequests{byID: map[string]*nativeRequest{}, forTurn: map[string]bool{},
		items: map[string]appserver.Item{}, noted: make(chan struct{})}
}

// serverHandlers are the turn's answers to Codex's server requests.
func (t *Turn) serverHandlers() *appserver.Handlers {
	return &appserver.Handlers{ToolCall: t.onToolCall, Approval: t.onApproval, UserInput: t.onUserInput}
}

// approvalPolicy maps the attempt's approvalMode onto Codex's policy (the
// names are Codex's); empty is never.
func approvalPolicy(m wire.ApprovalMode) appserver.ApprovalPolicy {
	switch m {
	case wire.ApprovalModeUntrusted:
		return appserver.ApprovalUntrusted
	case wire.ApprovalModeOnRequest:
		return appserver.ApprovalOnRequest
	default:
		return appserver.ApprovalNever
	}
}

// collaborationMode is turn/start's collaborationMode: plan mode with the
// turn's model and effort and Codex's built-in plan instructions (null).
// Codex keeps a turn's mode for the thread's later turns (its resume echo
// says so; TestPlanModeEndsWithItsTurn), so a turn in the default mode on a
// thread left in plan mode sends the default mode back; otherwise nil (a
// default-mode thread's developer instructions stay as they are).
func (t *Turn) collaborationMode() map[string]any {
	mode := "plan"
	if t.in.CollaborationMode != wire.CollaborationPlan {
		var current struct {
			Mode string `json:"mode"`
		}
		if t.th == nil || json.Unmarshal(t.th.Info.CollaborationMode, &current) != nil || current.Mode != "plan" {
			return nil
		}
		mode = "default"
	}
	var effort any
	if t.effort != "" {
		effort = t.effort
	}
	return map[string]any{"mode": mode, "settings": map[string]any{
		"model": t.in.Model, "reasoning_effort": effort, "developer_instructions": nil}}
}

// noteItem remembers a file change's item/started for its approval; t.mu
// must be held.
func (t *Turn) noteItem(it appserver.Item) {
	if it.Type != "fileChange" {
		return
	}
	t.native.items[it.ID] = it
	close(t.native.noted)
	t.native.noted = make(chan struct{})
}

// startedItem waits (bounded by itemWait) until the relay noted the item.
func (t *Turn) startedItem(id string) (appserver.Item, bool) {
	timer := time.NewTimer(itemWait)
	defer timer.Stop()
	for {
		t.mu.Lock()
		it, ok := t.native.items[id]
		noted := t.native.noted
		t.mu.Unlock()
		if ok {
			return it, true
		}
		select {
		case <-noted:
		case <-timer.C:
			return appserver.Item{}, false
		case <-t.turnCtx.Done():
			return appserver.Item{}, false
		}
	}
}

// approvalParams are the fields of Codex's approval requests the facts use.
type approvalParams struct {
	ItemID     string  `json:"itemId"`
	ApprovalID *string `json:"approvalId"`
	Command    *string `json:"command"`
	Cwd        *string `json:"cwd"`
	Reason     *string `json:"reason"`
	ServerName string  `json:"serverName"`
	Message    string  `json:"message"`
	// Permissions is a permissions request's grant: appserver accepts it
	// by sending this object back as is.
	Permissions json.RawMessage `json:"permissions"`
	// AdditionalPermissions is what a command asks for beyond the sandbox.
	AdditionalPermissions json.RawMessage `json:"additionalPermissions"`
}

// requestID names a request in the run: the item id (plus Codex's
// approvalId when it has one), which a re-delivery keeps.
func requestID(p approvalParams) string {
	if p.ApprovalID != nil && *p.ApprovalID != "" {
		return p.ItemID + "/" + *p.ApprovalID
	}
	return p.ItemID
}

// requestTool is the canonical tool a native request is about, in its
// approval_request and in the report of its decline.
func requestTool(method string) string {
	switch method {
	case appserver.MethodCommandApproval, appserver.MethodExecCommandApproval:
		return wire.NativeToolExec
	case appserver.MethodFileApproval, appserver.MethodApplyPatchApproval:
		return wire.NativeToolApplyPatch
	case appserver.MethodElicitation:
		return "mcp"
	case appserver.MethodUserInput:
		return "ask_user"
	}
	return "permissions"
}

// approvalFacts describes an approval request for the client. refusal is
// set when the request must be denied without asking: its grant cannot be
// shown as it is.
func (t *Turn) approvalFacts(req appserver.ApprovalRequest) (f wire.ApprovalRequest, refusal string) {
	var p approvalParams
	_ = json.Unmarshal(req.Params, &p)
	f = wire.ApprovalRequest{RequestID: requestID(p), CallID: p.ItemID, Command: deref(p.Command),
		Cwd: deref(p.Cwd), Reason: deref(p.Reason), Data: req.Params,
		Decisions: []wire.ApprovalDecision{wire.ApproveOnce, wire.ApproveForTurn, wire.Deny}}
	f.Tool = requestTool(req.Method)
	var err error
	switch req.Method {
	case appserver.MethodCommandApproval, appserver.MethodExecCommandApproval:
		f.Kind = wire.ApprovalCommand
		if f.Permissions, err = grantObject(p.AdditionalPermissions); err != nil {
			refusal = "its additionalPermissions object " + err.Error()
		}
	case appserver.MethodFileApproval, appserver.MethodApplyPatchApproval:
		f.Kind = wire.ApprovalFileChange
		if it, ok := t.startedItem(p.ItemID); ok {
			var change struct {
				Changes json.RawMessage `json:"changes"`
			}
			_ = json.Unmarshal(it.Raw, &change)
			f.ChangedPaths = changedPaths(change.Changes)
		}
	case appserver.MethodElicitation:
		f.Kind = wire.ApprovalMCPElicitation
		f.Reason = strings.TrimSpace(p.ServerName + ": " + p.Message)
	default:
		f.Kind = wire.ApprovalPermissions
		// Approving sends this object back as the grant: the client must
		// see all of it, so a request without one is not asked either.
		f.Permissions, err = grantObject(p.Permissions)
		switch {
		case err != nil:
			refusal = "its permissions object " + err.Error()
		case f.Permissions == nil:
			refusal = "it names no permissions object"
		}
	}
	if t.approvalKey(req, f) == "" {
		f.Decisions = []wire.ApprovalDecision{wire.ApproveOnce, wire.Deny}
	}
	return f, refusal
}

// approvalKey is the turn's approvalKey of a request with facts f.
func (t *Turn) approvalKey(req appserver.ApprovalRequest, f wire.ApprovalRequest) string {
	escalationUnseen := t.in.ApprovalMode == wire.ApprovalModeUntrusted &&
		appserver.SandboxMode(t.in.Sandbox) != appserver.SandboxDangerFullAccess
	return approvalKey(req.Method, f, req.Params, escalationUnseen)
}

// grantObject checks a grant before it is shown: absent (nil), or a JSON
// object of at most wire.MaxApprovalPermissionsBytes, compacted. The error
// says what is wrong with it, for the decline's message.
func grantObject(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil || raw[0] != '{' {
		return nil, errors.New("is not a JSON object")
	}
	if compact.Len() > wire.MaxApprovalPermissionsBytes {
		return nil, fmt.Errorf("is %d bytes, more than the %d an approval request shows", compact.Len(), wire.MaxApprovalPermissionsBytes)
	}
	return compact.Bytes(), nil
}

// requestIdentity are the fields of Codex's approval requests that name or
// time a request but do not change what approving it grants; approvalKey
// leaves out only these, so a field it does not know (a new escalation,
// say) makes requests differ rather than match.
var requestIdentity = []string{"threadId", "turnId", "itemId", "approvalId", "callId", "conversationId", "startedAtMs"}

// approvalKey identifies an action for approve_for_turn: the whole request
// but its ids, plus the facts the client saw (the changed paths of a file
// change come from its item, not the request). A later request matches
// only if every field that says what it may do — command, cwd, sandbox
// escalation, additional permissions, network context, reason — is the
// same. A file change is compared by its paths, not its content: the
// client is shown the paths. Empty: not comparable (only commands and
// file changes are).
//
// escalationUnseen says that a command's request does not show whether it
// runs in the sandbox: in approval mode untrusted under a sandbox that
// restricts, Codex 0.169.0 asks both for a sandboxed run and for one the
// model asks to run outside the sandbox (sandbox_permissions
// require_escalated), with the same request when the model gives no
// justification (TestApproveForTurnDoesNotCoverAnEscalatedCommand). A
// command is then not comparable: each run is asked for. In on-request
// mode every command asked for is an escalation, and under
// danger-full-access there is no sandbox to leave.
func approvalKey(method string, f wire.ApprovalRequest, params json.RawMessage, escalationUnseen bool) string {
	switch {
	case f.Kind == wire.ApprovalCommand && f.Command != "" && !escalationUnseen:
	case f.Kind == wire.ApprovalFileChange && len(f.ChangedPaths) > 0:
	default:
		return ""
	}
	var request map[string]any
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.UseNumber() // numbers compare by their text, not as float64
	if dec.Decode(&request) != nil || request == nil {
		return ""
	}
	for _, k := range requestIdentity {
		delete(request, k)
	}
	// json.Marshal sorts map keys: equal requests give equal keys.
	key, err := json.Marshal(struct {
		Method       string            `json:"method"`
		Kind         wire.ApprovalKind `json:"kind"`
		Command      string            `json:"command"`
		Cwd          string            `json:"cwd"`
		ChangedPaths []string          `json:"changedPaths"`
		Permissions  json.RawMessage   `json:"permissions"`
		Request      map[string]any    `json:"request"`
	}{method, f.Kind, f.Command, f.Cwd, slices.Sorted(slices.Values(f.ChangedPaths)), f.Permissions, request})
	if err != nil {
		return ""
	}
	return string(key)
}

// claim returns the request id's shared state, and whether this delivery
// owns it (the first); t.mu must be held.
func (t *Turn) claim(id, method string) (*nativeRequest, bool) {
	if id == "" {
		t.native.seq++
		id = fmt.Sprintf("%s#%d", method, t.native.seq)
	}
	if nr := t.native.byID[id]; nr != nil {
		return nr, false
	}
	nr := &nativeRequest{done: make(chan struct{})}
	t.native.byID[id] = nr
	return nr, true
}

// onApproval answers an approval request: at once when an approve_for_turn
// covers the action or the turn is ending, else with the client's decision
// (deny at the tool timeout). A re-delivered request gets the first
// delivery's answer, never a second question.
func (t *Turn) onApproval(_ context.Context, req appserver.ApprovalRequest) appserver.ApprovalDecision {
	<-t.promptSent
	f, refusal := t.approvalFacts(req)
	t.mu.Lock()
	nr, first := t.claim(f.RequestID, req.Method)
	if !first {
		t.mu.Unlock()
		<-nr.done
		return nr.decision
	}
	defer close(nr.done)
	key := t.approvalKey(req, f)
	switch {
	case refusal != "":
		nr.refusal = refusal
		defer t.mu.Unlock()
		return t.resolveApproval(nr, f, wire.ResolvedDenied, false)
	case key != "" && t.native.forTurn[key]:
		defer t.mu.Unlock()
		return t.resolveApproval(nr, f, wire.ResolvedApprovedForTurn, true)
	case t.result != nil || t.closing:
		defer t.mu.Unlock()
		return t.resolveApproval(nr, f, wire.ResolvedCancelled, false)
	}
	timeout := t.in.EffectiveToolTimeout()
	f.ExpiresAt = time.Now().Add(timeout).UTC()
	t.emit(adapter.Event{Type: wire.EventApprovalRequest, ApprovalRequest: &f})
	if t.hooks.AnswerApproval == nil {
		defer t.mu.Unlock()
		return t.resolveApproval(nr, f, wire.ResolvedDenied, false)
	}
	d, missing, answered := awaitClient(t, timeout, func(ctx context.Context) (wire.ApprovalDecision, error) {
		return t.hooks.AnswerApproval(ctx, f)
	})
	defer t.mu.Unlock()
	res := wire.ResolvedDenied
	switch {
	case !answered:
		res = missing
	case d == wire.ApproveOnce:
		res = wire.ResolvedApprovedOnce
	case d == wire.ApproveForTurn:
		res = wire.ResolvedApprovedForTurn
		if key != "" {
			t.native.forTurn[key] = true
		}
	}
	return t.resolveApproval(nr, f, res, false)
}

// awaitClient asks the client with t.mu released, bounded by the request's
// timeout and the turn's life; t.mu is held on entry and again on return.
// Without an answer, missing says why the wait ended: the request's own
// deadline (timed out) or the turn's end (cancelled).
func awaitClient[T any](t *Turn, timeout time.Duration, ask func(context.Context) (T, error)) (v T, missing wire.Resolution, answered bool) {
	t.handlers.Add(1)
	defer t.handlers.Done()
	turnCtx := t.turnCtx
	t.mu.Unlock()
	ctx, cancel := context.WithTimeout(turnCtx, timeout)
	v, err := ask(ctx)
	expired := ctx.Err()
	cancel()
	t.mu.Lock()
	switch {
	case err == nil:
		return v, "", true
	case errors.Is(expired, context.DeadlineExceeded) && turnCtx.Err() == nil:
		return v, wire.ResolvedTimedOut, false
	}
	return v, wire.ResolvedCancelled, false
}

// resolveApproval records and emits an approval's resolution and returns
// Codex's answer: accept for an approval, decline otherwise; t.mu must be
// held.
func (t *Turn) resolveApproval(nr *nativeRequest, f wire.ApprovalRequest, res wire.Resolution, auto bool) appserver.ApprovalDecision {
	nr.resolution, nr.decision = res, appserver.ApprovalDecline
	if res == wire.ResolvedApprovedOnce || res == wire.ResolvedApprovedForTurn {
		nr.decision = appserver.ApprovalAccept
	}
	t.emit(adapter.Event{Type: wire.EventRequestResolved, RequestResolved: &wire.RequestResolved{
		RequestID: f.RequestID, CallID: f.CallID, Resolution: res, AutoApproved: auto}})
	return nr.decision
}

// declineReport says why a declined approval or unanswered user-input
// request was declined, and whether to report it (once per request: a
// re-delivery is not reported again); t.mu must be held.
func (t *Turn) declineReport(e appserver.ServerRequestHandled) (string, bool) {
	var p approvalParams
	_ = json.Unmarshal(e.Params, &p)
	nr := t.native.byID[requestID(p)]
	if nr == nil {
		return fmt.Sprintf("%s request declined", e.Method), true
	}
	if nr.reported {
		return "", false
	}
	nr.reported = true
	if nr.refusal != "" {
		return fmt.Sprintf("%s request declined without asking: %s", e.Method, nr.refusal), true
	}
	switch nr.resolution {
	case wire.ResolvedDenied:
		return fmt.Sprintf("%s request denied by the gateway", e.Method), true
	case wire.ResolvedTimedOut:
		return fmt.Sprintf("%s request declined: no answer within the tool timeout", e.Method), true
	default:
		return fmt.Sprintf("%s request declined: the turn ended before an answer", e.Method), true
	}
}
