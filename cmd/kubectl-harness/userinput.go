package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// userInput collects the answers to a user-input request. Only mode ask
// asks: with --approve=always or never (a script, by default) the answers
// are empty at once, so the turn goes on instead of waiting for the
// request's deadline. The end of input leaves the remaining questions
// unanswered.
func (a *answerer) userInput(req wire.UserInputRequest) map[string]wire.UserInputValue {
	answers := map[string]wire.UserInputValue{}
	if a.mode != approveAsk {
		_, _ = fmt.Fprintf(a.prompt, "answering %s with no answers (--approve=%s; questions are asked only with ask)\n", visible(req.RequestID), a.mode)
		return answers
	}
	for _, q := range req.Questions {
		v, ok := a.askQuestion(q)
		if !ok {
			_, _ = fmt.Fprintln(a.prompt, "\nno answer (end of input): the remaining questions are unanswered")
			break
		}
		answers[q.ID] = v
	}
	return answers
}

// askQuestion asks one question until it gets a valid answer; false at the
// end of input.
func (a *answerer) askQuestion(q wire.UserInputQuestion) (wire.UserInputValue, bool) {
	_, _ = fmt.Fprintln(a.prompt, questionTitle(q))
	for i, o := range q.Options {
		line := fmt.Sprintf("  %d) %s", i+1, visible(o.Label))
		if o.Description != "" {
			line += " - " + visible(o.Description)
		}
		_, _ = fmt.Fprintln(a.prompt, line)
	}
	for {
		_, _ = fmt.Fprintf(a.prompt, "%s: ", answerHint(q))
		var line string
		var err error
		if q.Secret && a.readSecret != nil {
			line, err = a.readSecret()
		} else {
			line, err = a.readLine()
		}
		if err != nil {
			return wire.UserInputValue{}, false
		}
		v, problem := parseAnswer(q, line)
		if problem == "" {
			return v, true
		}
		_, _ = fmt.Fprintln(a.prompt, problem)
	}
}

// questionTitle is a question's header and text, escaped (visible).
func questionTitle(q wire.UserInputQuestion) string {
	if q.Header != "" {
		return visible(q.Header) + ": " + visible(q.Question)
	}
	return visible(q.Question)
}

func answerHint(q wire.UserInputQuestion) string {
	var hint string
	switch {
	case len(q.Options) == 0:
		hint = "answer"
	case q.AllowOther:
		hint = fmt.Sprintf("choice (1-%d) or your own answer", len(q.Options))
	default:
		hint = fmt.Sprintf("choice (1-%d)", len(q.Options))
	}
	if q.Secret {
		hint += " (not shown)"
	}
	return hint
}

// parseAnswer reads one typed answer: an option's number chooses it; other
// text is a free-form answer where the question takes one (no options, or
// allowOther). problem says why the answer is not taken (asked again).
func parseAnswer(q wire.UserInputQuestion, line string) (wire.UserInputValue, string) {
	s := strings.TrimSpace(line)
	if s == "" {
		return wire.UserInputValue{}, "an answer is required (end the input to leave it unanswered)"
	}
	if n, err := strconv.Atoi(s); err == nil && n >= 1 && n <= len(q.Options) {
		return wire.UserInputValue{Choices: []string{q.Options[n-1].Label}}, ""
	}
	if len(q.Options) == 0 || q.AllowOther {
		return wire.UserInputValue{Text: s}, ""
	}
	return wire.UserInputValue{}, fmt.Sprintf("want a number from 1 to %d", len(q.Options))
}
