package stubmodel

import (
	"encoding/json"
	"strings"
	"sync"
	"time"
)

// Reply is the scripted answer to one model request. Build it with Text,
// Call, Reasoning, HTTPError, Cut or Stall, and join parts with And.
type Reply struct {
	parts      []part
	status     int
	errMessage string
	cut        bool
	stall      *stall
	holds      map[int]*Gate // text delta index → gate to wait for before it
}

type partKind int

const (
	partText partKind = iota
	partCall
	partReasoning
)

type part struct {
	kind       partKind
	text       string
	deltas     []string
	deltaDelay time.Duration
	call       FunctionCall
}

type stall struct {
	gate *Gate
	then Reply
}

// FunctionCall is a function_call output item the stub sends.
type FunctionCall struct {
	// Name of the tool; for a tool in a dynamic namespace, the bare name.
	Name string
	// Namespace of a namespaced dynamic tool, if any.
	Namespace string
	// Arguments is the JSON text of the arguments ("{}" when empty).
	Arguments string
	// CallID is the call_id; a unique one is generated when empty.
	CallID string
}

// Text is an assistant message. The text is streamed as the given deltas
// (response.output_text.delta events), or word by word when none are given.
func Text(text string, deltas ...string) Reply {
	if len(deltas) == 0 {
		deltas = splitWords(text)
	}
	return Reply{parts: []part{{kind: partText, text: text, deltas: deltas}}}
}

// SlowText is Text with a pause before every delta.
func SlowText(text string, perDelta time.Duration, deltas ...string) Reply {
	r := Text(text, deltas...)
	r.parts[0].deltaDelay = perDelta
	return r
}

// Reasoning is a reasoning item whose summary text is streamed as the given
// deltas (response.reasoning_summary_text.delta), or word by word.
func Reasoning(summary string, deltas ...string) Reply {
	if len(deltas) == 0 {
		deltas = splitWords(summary)
	}
	return Reply{parts: []part{{kind: partReasoning, text: summary, deltas: deltas}}}
}

// Call is one or more function_call items (the model calling tools).
func Call(calls ...FunctionCall) Reply {
	r := Reply{}
	for _, c := range calls {
		r.parts = append(r.parts, part{kind: partCall, call: c})
	}
	return r
}

// CallJSON is Call for a single tool whose arguments are marshalled from args.
func CallJSON(name string, args any) Reply {
	b, err := json.Marshal(args)
	if err != nil {
		panic("stubmodel: marshal arguments: " + err.Error())
	}
	return Call(FunctionCall{Name: name, Arguments: string(b)})
}

// HTTPError answers with the HTTP status and an OpenAI-style error body
// instead of a stream.
func HTTPError(status int, message string) Reply {
	return Reply{status: status, errMessage: message}
}

// Cut sends r's items and then ends the stream without response.completed.
func Cut(r Reply) Reply {
	r.cut = true
	return r
}

// Stall holds the request until gate is released, then answers with then.
// When the client goes away first (e.g. the turn was interrupted), the
// request ends with OutcomeClientGone.
func Stall(gate *Gate, then Reply) Reply {
	return Reply{stall: &stall{gate: gate, then: then}}
}

// And appends the output items of next to r (e.g. Reasoning(...).And(Text(...))).
// Only the items are taken from next.
func (r Reply) And(next Reply) Reply {
	out := r
	out.parts = append(append([]part(nil), r.parts...), next.parts...)
	return out
}

// HoldBefore pauses r's stream before its text delta number delta (counted
// from 0 over the reply's text deltas, response.output_text.delta) until gate
// is released: the deltas before it have been written and flushed to the
// client, the rest wait. gate.Reached is closed when the stream pauses there,
// so a test knows exactly which deltas the client can have received. When
// the client goes away first, the request ends with OutcomeClientGone.
func (r Reply) HoldBefore(delta int, gate *Gate) Reply {
	out := r
	out.holds = make(map[int]*Gate, len(r.holds)+1)
	for k, v := range r.holds {
		out.holds[k] = v
	}
	out.holds[delta] = gate
	return out
}

func splitWords(s string) []string {
	if s == "" {
		return nil
	}
	var out []string
	for len(s) > 0 {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// Gate releases stalled (Stall) and held (HoldBefore) requests. The zero
// value is not usable; use NewGate.
type Gate struct {
	once        sync.Once
	ch          chan struct{}
	reachedOnce sync.Once
	reached     chan struct{}
}

// NewGate returns a closed-until-released gate.
func NewGate() *Gate { return &Gate{ch: make(chan struct{}), reached: make(chan struct{})} }

// Release lets every request stalled on the gate continue. It is idempotent.
func (g *Gate) Release() { g.once.Do(func() { close(g.ch) }) }

// C is closed when the gate is released.
func (g *Gate) C() <-chan struct{} { return g.ch }

// Reached is closed when a request first arrives at the gate (a Stall, or a
// HoldBefore point of its stream), whether or not the gate was released.
func (g *Gate) Reached() <-chan struct{} { return g.reached }

func (g *Gate) reach() { g.reachedOnce.Do(func() { close(g.reached) }) }
