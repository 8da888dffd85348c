package main

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/openclaw/harness-operator/internal/wire"
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
	p.line("[approval] %s %s", req.RequestID, describeApproval(req))
	p.spin.halt()
	d := p.native.approval(req)
	p.native.post(ctx, "approvals", req.RequestID, wire.ApprovalAnswer{RequestID: req.RequestID, Decision: d})
	p.spin.start()
}

func (p *turnPrinter) userInputRequest(ctx context.Context, data []byte) {
	var req wire.UserInputRequest
	if json.Unmarshal(data, &req) != nil || !p.native.seen(req.RequestID, "user input") {
		return
	}
	for _, q := range req.Questions {
		text := q.Question
		if q.Header != "" {
			text = q.Header + ": " + text
		}
		if len(q.Options) > 0 {
			labels := make([]string, len(q.Options))
			for i, o := range q.Options {
				labels[i] = o.Label
			}
			text += " [" + strings.Join(labels, " | ") + "]"
		}
		p.line("[user input] %s %s", req.RequestID, text)
	}
	p.spin.halt()
	answers := p.native.userInput(req)
	p.native.post(ctx, "user-input", req.RequestID, wire.UserInputAnswer{RequestID: req.RequestID, Answers: answers})
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
