package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// The turn printer's part of native requests: each request and its
// resolution get a line of their own on standard output, as tool calls do,
// and the answerer answers the request in between (the runtime waits for
// it, so the stream has nothing else to show meanwhile).

func (p *turnPrinter) approvalRequest(ctx context.Context, data []byte) {
	var req wire.ApprovalRequest
	if json.Unmarshal(data, &req) != nil || !p.native.seen(req.RequestID, "approval") {
		return
	}
	p.line("[approval] %s %s", visible(req.RequestID), describeApproval(req))
	p.spin.halt()
	d := p.native.approval(req)
	p.native.post(ctx, wire.RouteApprovals, req.RequestID, wire.ApprovalAnswer{RequestID: req.RequestID, Decision: d})
	p.spin.start()
}

func (p *turnPrinter) userInputRequest(ctx context.Context, data []byte) {
	var req wire.UserInputRequest
	if json.Unmarshal(data, &req) != nil || !p.native.seen(req.RequestID, "user input") {
		return
	}
	for _, q := range req.Questions {
		text := questionTitle(q)
		if len(q.Options) > 0 {
			labels := make([]string, len(q.Options))
			for i, o := range q.Options {
				labels[i] = visible(o.Label)
			}
			text += " [" + strings.Join(labels, " | ") + "]"
		}
		p.line("[user input] %s %s", visible(req.RequestID), text)
	}
	p.spin.halt()
	answers := p.native.userInput(req)
	p.native.post(ctx, wire.RouteUserInput, req.RequestID, wire.UserInputAnswer{RequestID: req.RequestID, Answers: answers})
	p.spin.start()
}

func (p *turnPrinter) requestResolved(data []byte) {
	var r wire.RequestResolved
	if json.Unmarshal(data, &r) != nil {
		return
	}
	what := p.native.what(r.RequestID)
	p.native.settle(r.RequestID)
	p.line("%s", describeResolution(what, r))
}

// describeResolution is the line of a request_resolved event.
func describeResolution(what string, r wire.RequestResolved) string {
	s := strings.ReplaceAll(string(r.Resolution), "_", " ")
	switch {
	case r.AutoApproved:
		what, s = "approval", "approved by an earlier approval for this turn"
	case r.Resolution == wire.ResolvedApprovedForTurn:
		s = "approved for this turn"
	case r.Resolution == wire.ResolvedTimedOut && what == "approval":
		s += " (denied)"
	case r.Resolution == wire.ResolvedTimedOut:
		s += " (no answers)"
	}
	line := fmt.Sprintf("[%s] %s %s", what, visible(r.RequestID), s)
	if len(r.Answers) > 0 {
		line += ": " + describeAnswers(r.Answers)
	}
	return line
}

func describeAnswers(answers map[string]wire.UserInputValue) string {
	ids := make([]string, 0, len(answers))
	for id := range answers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	parts := make([]string, 0, len(ids))
	for _, id := range ids {
		v := answers[id]
		vals := slices.DeleteFunc(append(slices.Clone(v.Choices), v.Text), func(s string) bool { return s == "" })
		for i := range vals {
			vals[i] = visible(vals[i])
		}
		parts = append(parts, visible(id)+" = "+strings.Join(vals, ", "))
	}
	return strings.Join(parts, "; ")
}
