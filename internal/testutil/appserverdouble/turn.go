package appserverdouble

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
)

// thread is a thread of the double: what thread/start set and a resume
// echoes, its last turn (thread/turns/list) and its token count.
type thread struct {
	id, model, provider, cwd string
	created                  int64 // unix seconds
	lastTurn                 map[string]any
	tokens                   int64 // total tokens over its turns
	items                    int   // items made, for agent message ids
}

// threadTable holds the threads of every connection; its lock guards the
// map and the threads in it.
type threadTable struct {
	mu   sync.Mutex
	byID map[string]*thread
}

// tokensPerTurn is the usage each turn reports (the stub model's, in the
// transcripts: 10 input and 5 output tokens).
const tokensPerTurn = 15

// threadParams are the fields of thread/start and thread/resume the double
// keeps or echoes.
type threadParams struct {
	ThreadID      string `json:"threadId"`
	Model         string `json:"model"`
	ModelProvider string `json:"modelProvider"`
	Cwd           string `json:"cwd"`
}

func (s *Server) startThread(params json.RawMessage) answer {
	var p threadParams
	if err := json.Unmarshal(params, &p); err != nil {
		return answer{err: &rpcError{Code: codeInvalidRequest, Message: "thread/start: " + err.Error()}}
	}
	th := &thread{id: uuid.Must(uuid.NewV7()).String(), model: p.Model, provider: p.ModelProvider, cwd: p.Cwd,
		created: time.Now().Unix()}
	if th.provider == "" {
		th.provider = "openai" // Codex's default provider
	}
	s.threads.mu.Lock()
	s.threads.byID[th.id] = th
	info := th.info()
	s.threads.mu.Unlock()
	return answer{result: info, after: []notification{{"thread/started", map[string]any{"thread": info["thread"]}}}}
}

// resumeThread answers thread/resume of a thread the double has, with this
// resume's working directory and model in effect; an unknown one is
// refused as Codex refuses a thread without a rollout.
func (s *Server) resumeThread(params json.RawMessage) answer {
	var p threadParams
	if err := json.Unmarshal(params, &p); err != nil {
		return answer{err: &rpcError{Code: codeInvalidRequest, Message: "thread/resume: " + err.Error()}}
	}
	s.threads.mu.Lock()
	defer s.threads.mu.Unlock()
	th := s.threads.byID[p.ThreadID]
	if th == nil {
		return answer{err: &rpcError{Code: codeInvalidRequest, Message: "no rollout found for thread id " + p.ThreadID}}
	}
	if p.Cwd != "" {
		th.cwd = p.Cwd
	}
	if p.Model != "" {
		th.model = p.Model
	}
	return answer{result: th.info()}
}

// info is thread/start's and thread/resume's result (the fields the
// client reads, in Codex's shape; the resume's turns are left out, as
// excludeTurns asks). th's table lock is held.
func (th *thread) info() map[string]any {
	return map[string]any{
		"thread": map[string]any{
			"id": th.id, "sessionId": th.id, "preview": "", "ephemeral": false, "modelProvider": th.provider,
			"model": th.model, "reasoningEffort": nil, "createdAt": th.created, "updatedAt": th.created,
			"status": map[string]string{"type": "idle"}, "path": nil, "cwd": th.cwd, "cliVersion": Version, "turns": []any{},
		},
		"model": th.model, "modelProvider": th.provider, "cwd": th.cwd, "approvalPolicy": "never",
		"sandbox": map[string]any{"type": "dangerFullAccess"}, "reasoningEffort": nil,
	}
}

// listTurns answers thread/turns/list with the thread's last turn.
func (s *Server) listTurns(params json.RawMessage) answer {
	var p threadParams
	_ = json.Unmarshal(params, &p)
	s.threads.mu.Lock()
	defer s.threads.mu.Unlock()
	th := s.threads.byID[p.ThreadID]
	if th == nil {
		return answer{err: &rpcError{Code: codeInvalidRequest, Message: "thread not found: " + p.ThreadID}}
	}
	data := []any{}
	if th.lastTurn != nil {
		data = append(data, th.lastTurn)
	}
	return answer{result: map[string]any{"data": data, "nextCursor": nil}}
}

// startTurn answers turn/start with the running turn and sends the
// notifications of the whole turn after it: the turn has completed with
// the reply once the client has read them.
func (s *Server) startTurn(params json.RawMessage) answer {
	var p struct {
		ThreadID string            `json:"threadId"`
		Input    []json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return answer{err: &rpcError{Code: codeInvalidRequest, Message: "turn/start: " + err.Error()}}
	}
	s.threads.mu.Lock()
	defer s.threads.mu.Unlock()
	th := s.threads.byID[p.ThreadID]
	if th == nil {
		return answer{err: &rpcError{Code: codeInvalidRequest, Message: "thread not found: " + p.ThreadID}}
	}
	s.turns.Add(1)
	now := time.Now()
	turnID := uuid.Must(uuid.NewV7()).String()
	th.items++
	msgID := fmt.Sprintf("msg_%d", th.items)
	th.tokens += tokensPerTurn
	turn := func(status string, items []any) map[string]any {
		return map[string]any{"id": turnID, "rootTurnId": turnID, "items": items, "status": status, "error": nil,
			"startedAt": now.Unix(), "completedAt": nil, "durationMs": nil}
	}
	user := map[string]any{"type": "userMessage", "id": uuid.Must(uuid.NewV7()).String(), "clientId": nil, "content": p.Input}
	agent := func(text string) map[string]any {
		return map[string]any{"type": "agentMessage", "id": msgID, "text": text, "phase": nil}
	}
	item := func(it map[string]any) map[string]any {
		return map[string]any{"item": it, "threadId": th.id, "turnId": turnID}
	}
	status := func(typ string) notification {
		return notification{"thread/status/changed", map[string]any{"threadId": th.id, "status": map[string]string{"type": typ}}}
	}
	last := map[string]int64{"totalTokens": tokensPerTurn, "inputTokens": 10, "outputTokens": 5}
	completed := turn("completed", []any{agent(s.opts.Reply)})
	completed["completedAt"], completed["durationMs"] = now.Unix(), 0
	th.lastTurn = completed
	return answer{
		result: map[string]any{"turn": turn("inProgress", []any{})},
		after: []notification{
			status("active"),
			{"turn/started", map[string]any{"threadId": th.id, "turn": turn("inProgress", []any{})}},
			{"item/started", item(user)},
			{"item/completed", item(user)},
			{"item/started", item(agent(""))},
			{"item/agentMessage/delta", map[string]any{"threadId": th.id, "turnId": turnID, "itemId": msgID, "delta": s.opts.Reply}},
			{"item/completed", item(agent(s.opts.Reply))},
			{"thread/tokenUsage/updated", map[string]any{"threadId": th.id, "turnId": turnID, "tokenUsage": map[string]any{
				"total": map[string]int64{"totalTokens": th.tokens, "inputTokens": th.tokens * 2 / 3, "outputTokens": th.tokens / 3},
				"last":  last, "modelContextWindow": 258400,
			}}},
			status("idle"),
			{"turn/completed", map[string]any{"threadId": th.id, "turn": completed}},
		},
	}
}
