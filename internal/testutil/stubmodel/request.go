package stubmodel

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// Outcome says how the stub's answer to a request ended.
type Outcome int

const (
	// OutcomePending: the answer is still being written (or stalled).
	OutcomePending Outcome = iota
	// OutcomeServed: the scripted answer was written completely.
	OutcomeServed
	// OutcomeClientGone: the client dropped the HTTP stream first.
	OutcomeClientGone
	// OutcomeServerClosed: the stub was closed while answering.
	OutcomeServerClosed
)

// String names the outcome.
func (o Outcome) String() string {
	switch o {
	case OutcomeServed:
		return "served"
	case OutcomeClientGone:
		return "client-gone"
	case OutcomeServerClosed:
		return "server-closed"
	default:
		return "pending"
	}
}

// Request is one recorded POST /v1/responses. Its fields must not be
// modified.
type Request struct {
	// Seq numbers requests from 1 in arrival order.
	Seq int
	// Header is the HTTP request header.
	Header http.Header
	// Body is the raw JSON body.
	Body json.RawMessage
	// Model is the body's model.
	Model string
	// Input holds the body's input items.
	Input []InputItem
	// Tools holds the body's tools; HasTools reports whether the field was
	// present at all (Codex leaves it out for its catalog models, which get
	// their tools as an additional_tools input item instead).
	Tools    []Tool
	HasTools bool

	done    chan struct{}
	outcome Outcome
}

// InputItem is one item of a request's input.
type InputItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Namespace string          `json:"namespace,omitempty"`
	Arguments string          `json:"arguments,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"`
	Tools     []Tool          `json:"tools,omitempty"`
	// Raw is the item's JSON.
	Raw json.RawMessage `json:"-"`
}

// Text is the concatenated text content of a message item.
func (it InputItem) Text() string {
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(it.Content, &parts) != nil {
		var s string
		if json.Unmarshal(it.Content, &s) == nil {
			return s
		}
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// OutputText is the output of a function_call_output item as text (a plain
// string output, or the concatenated text parts of a structured one).
func (it InputItem) OutputText() string {
	var s string
	if json.Unmarshal(it.Output, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(it.Output, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return string(it.Output)
}

// Tool is one tool offered to the model.
type Tool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	// Tools holds the members of a namespace tool.
	Tools []Tool `json:"tools,omitempty"`
}

// FunctionCallOutput is a function_call_output input item: what the model
// is told a tool returned.
type FunctionCallOutput struct {
	CallID string
	Output string
}

func parseRequest(body []byte) (*Request, error) {
	var raw struct {
		Model string            `json:"model"`
		Input []json.RawMessage `json:"input"`
		Tools *[]Tool           `json:"tools"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, fmt.Errorf("stubmodel: request body is not JSON: %w", err)
	}
	r := &Request{Body: append(json.RawMessage(nil), body...), Model: raw.Model}
	if raw.Tools != nil {
		r.HasTools = true
		r.Tools = *raw.Tools
	}
	for _, in := range raw.Input {
		var it InputItem
		if err := json.Unmarshal(in, &it); err != nil {
			return nil, fmt.Errorf("stubmodel: input item: %w", err)
		}
		it.Raw = in
		r.Input = append(r.Input, it)
	}
	return r, nil
}

// ToolNames lists the offered tools in order: a function or custom tool by
// its name, a namespace member as "<namespace>.<name>", any other tool by
// its type (e.g. "web_search").
func (r *Request) ToolNames() []string { return toolNames(r.Tools) }

func toolNames(tools []Tool) []string {
	var out []string
	for _, t := range tools {
		switch {
		case t.Type == "namespace":
			for _, m := range t.Tools {
				out = append(out, t.Name+"."+m.Name)
			}
		case t.Name != "":
			out = append(out, t.Name)
		default:
			out = append(out, t.Type)
		}
	}
	return out
}

// AdditionalTools lists the tools of the additional_tools input items (the
// way Codex offers tools to its catalog models), named as ToolNames does.
func (r *Request) AdditionalTools() []string {
	var out []string
	for _, it := range r.Input {
		if it.Type == "additional_tools" {
			out = append(out, toolNames(it.Tools)...)
		}
	}
	return out
}

var nestedToolRE = regexp.MustCompile("(?m)^### `([^`]+)`")

// CodeModeTools lists the tools that Codex's "code mode" exposes inside its
// exec tool to a catalog model: the "### `name`" headings in the description
// of every additional tool named exec.
func (r *Request) CodeModeTools() []string {
	var out []string
	var walk func([]Tool)
	walk = func(ts []Tool) {
		for _, t := range ts {
			if t.Name == "exec" {
				for _, m := range nestedToolRE.FindAllStringSubmatch(t.Description, -1) {
					out = append(out, m[1])
				}
			}
			walk(t.Tools)
		}
	}
	for _, it := range r.Input {
		if it.Type == "additional_tools" {
			walk(it.Tools)
		}
	}
	walk(r.Tools)
	return out
}

// LastUserText is the text of the latest user message in the input.
func (r *Request) LastUserText() string {
	for i := len(r.Input) - 1; i >= 0; i-- {
		it := r.Input[i]
		if it.Type == "message" && it.Role == "user" {
			return it.Text()
		}
	}
	return ""
}

// UserTexts lists the texts of all user messages in the input, in order.
func (r *Request) UserTexts() []string {
	var out []string
	for _, it := range r.Input {
		if it.Type == "message" && it.Role == "user" {
			out = append(out, it.Text())
		}
	}
	return out
}

// AssistantTexts lists the texts of all assistant messages in the input
// (earlier replies that Codex re-sends as history).
func (r *Request) AssistantTexts() []string {
	var out []string
	for _, it := range r.Input {
		if it.Type == "message" && it.Role == "assistant" {
			out = append(out, it.Text())
		}
	}
	return out
}

// FunctionCallOutputs lists the request's function_call_output items.
func (r *Request) FunctionCallOutputs() []FunctionCallOutput {
	var out []FunctionCallOutput
	for _, it := range r.Input {
		if it.Type == "function_call_output" {
			out = append(out, FunctionCallOutput{CallID: it.CallID, Output: it.OutputText()})
		}
	}
	return out
}

func (r *Request) lastFunctionCallOutput() (FunctionCallOutput, bool) {
	if n := len(r.Input); n > 0 && r.Input[n-1].Type == "function_call_output" {
		it := r.Input[n-1]
		return FunctionCallOutput{CallID: it.CallID, Output: it.OutputText()}, true
	}
	return FunctionCallOutput{}, false
}

// Wait waits until the stub has finished answering the request and reports
// how the answer ended. An answer that has ended is reported even when ctx
// has ended too, so Wait with a cancelled ctx tells whether it has ended yet.
func (r *Request) Wait(ctx context.Context) (Outcome, error) {
	select {
	case <-r.done:
		return r.outcome, nil
	default:
	}
	select {
	case <-r.done:
		return r.outcome, nil
	case <-ctx.Done():
		return OutcomePending, fmt.Errorf("stubmodel: waiting for request %d to end: %w", r.Seq, context.Cause(ctx))
	}
}
