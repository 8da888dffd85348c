package wire

import (
	"fmt"
	"slices"
	"strings"
)

// Validate checks the enums of the native-action fields; the error is a
// *FieldError naming the field.
func (o NativeActionOptions) Validate() error {
	switch o.ApprovalMode {
	case "", ApprovalModeNever, ApprovalModeUntrusted, ApprovalModeOnRequest:
	default:
		return &FieldError{Field: "approvalMode", Message: fmt.Sprintf("%q is not never, untrusted or on-request", o.ApprovalMode)}
	}
	switch o.CollaborationMode {
	case "", CollaborationDefault, CollaborationPlan:
	default:
		return &FieldError{Field: "collaborationMode", Message: fmt.Sprintf("%q is not default or plan", o.CollaborationMode)}
	}
	return nil
}

// Validate checks an approval answer's shape; the error is a *FieldError.
func (a ApprovalAnswer) Validate() error {
	if a.RequestID == "" {
		return &FieldError{Field: "requestId", Message: "must not be empty"}
	}
	switch a.Decision {
	case ApproveOnce, ApproveForTurn, Deny:
	default:
		return &FieldError{Field: "decision", Message: fmt.Sprintf("%q is not approve_once, approve_for_turn or deny", a.Decision)}
	}
	return nil
}

// Normalize checks the answers against the request's questions and returns
// them as the runtime takes them: per question id, the chosen labels
// followed by the free-form text. A choice must be one of the question's
// option labels; free-form text is accepted only where the question allows
// it (allowOther, or no options). Errors are *FieldError values naming
// the answer's field (answers.<id>.choices[i], answers.<id>.text).
func (r UserInputRequest) Normalize(answers map[string]UserInputValue) (map[string][]string, error) {
	out := make(map[string][]string, len(answers))
	for id, v := range answers {
		i := slices.IndexFunc(r.Questions, func(q UserInputQuestion) bool { return q.ID == id })
		if i < 0 {
			return nil, &FieldError{Field: "answers." + id, Message: "is not a question of request " + r.RequestID}
		}
		q := r.Questions[i]
		vals := make([]string, 0, len(v.Choices)+1)
		for j, c := range v.Choices {
			if !slices.ContainsFunc(q.Options, func(o UserInputOption) bool { return o.Label == c }) {
				return nil, &FieldError{Field: fmt.Sprintf("answers.%s.choices[%d]", id, j),
					Message: fmt.Sprintf("%q is not an option label of question %q", c, id)}
			}
			vals = append(vals, c)
		}
		if strings.TrimSpace(v.Text) != "" {
			if len(q.Options) > 0 && !q.AllowOther {
				return nil, &FieldError{Field: "answers." + id + ".text",
					Message: fmt.Sprintf("question %q takes one of its options, not free-form text", id)}
			}
			vals = append(vals, v.Text)
		}
		if len(vals) == 0 {
			return nil, &FieldError{Field: "answers." + id, Message: "has neither choices nor text"}
		}
		out[id] = vals
	}
	return out, nil
}

// Redacted is the answers without those of secret questions, for the
// journal and logs.
func (r UserInputRequest) Redacted(answers map[string]UserInputValue) map[string]UserInputValue {
	out := make(map[string]UserInputValue, len(answers))
	for id, v := range answers {
		if !slices.ContainsFunc(r.Questions, func(q UserInputQuestion) bool { return q.ID == id && q.Secret }) {
			out[id] = v
		}
	}
	return out
}
