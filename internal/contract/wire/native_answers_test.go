package wire

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestUserInputAnswersAreNormalizedAgainstTheQuestions(t *testing.T) {
	req := UserInputRequest{RequestID: "call_1", Questions: []UserInputQuestion{
		{ID: "color", Options: []UserInputOption{{Label: "Red"}, {Label: "Blue"}}},
		{ID: "other", Options: []UserInputOption{{Label: "None"}}, AllowOther: true},
		{ID: "free"},
		{ID: "pin", Secret: true},
	}}
	cases := []struct {
		name    string
		answers map[string]UserInputValue
		want    map[string][]string
		field   string // the FieldError's field; empty: accepted
	}{
		{"a choice", map[string]UserInputValue{"color": {Choices: []string{"Red"}}}, map[string][]string{"color": {"Red"}}, ""},
		{"choices then text where other is allowed", map[string]UserInputValue{"other": {Choices: []string{"None"}, Text: "maybe"}},
			map[string][]string{"other": {"None", "maybe"}}, ""},
		{"free text without options", map[string]UserInputValue{"free": {Text: "Ada"}}, map[string][]string{"free": {"Ada"}}, ""},
		{"nothing answered", map[string]UserInputValue{}, map[string][]string{}, ""},
		{"a choice that is not an option", map[string]UserInputValue{"color": {Choices: []string{"Red", "Green"}}}, nil, "answers.color.choices[1]"},
		{"text where only options are allowed", map[string]UserInputValue{"color": {Text: "teal"}}, nil, "answers.color.text"},
		{"an unknown question", map[string]UserInputValue{"size": {Text: "L"}}, nil, "answers.size"},
		{"an empty answer", map[string]UserInputValue{"free": {}}, nil, "answers.free"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := req.Normalize(tc.answers)
			expectFieldError(t, err, tc.field)
			if tc.field == "" && err == nil && !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("normalized %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSecretAnswersAreRedacted(t *testing.T) {
	req := UserInputRequest{Questions: []UserInputQuestion{{ID: "pin", Secret: true}, {ID: "name"}}}
	got := req.Redacted(map[string]UserInputValue{"pin": {Text: "1234"}, "name": {Text: "Ada"}})
	if !reflect.DeepEqual(got, map[string]UserInputValue{"name": {Text: "Ada"}}) {
		t.Fatalf("redacted %v", got)
	}
}

func TestNativeActionModesAreValidated(t *testing.T) {
	for _, tc := range []struct {
		opts  NativeActionOptions
		field string
	}{
		{NativeActionOptions{}, ""},
		{NativeActionOptions{ApprovalMode: ApprovalModeUntrusted, CollaborationMode: CollaborationPlan}, ""},
		{NativeActionOptions{ApprovalMode: "always"}, "approvalMode"},
		{NativeActionOptions{CollaborationMode: "pair"}, "collaborationMode"},
	} {
		t.Run(fmt.Sprintf("%+v", tc.opts), func(t *testing.T) {
			expectFieldError(t, (&TurnRequest{NativeActionOptions: tc.opts}).Validate(), tc.field)
		})
	}
}

// The answers map is decoded strictly like the rest of a body: each refusal
// names the answer's path.
func TestUserInputAnswerDecodesStrictly(t *testing.T) {
	for body, field := range map[string]string{
		`{"requestId":"r","answers":{"q":{"choices":["A"],"text":"x"}}}`:  "",
		`{"requestId":"r","answers":{"q":{"choices":"A"}}}`:               "answers.q.choices",
		`{"requestId":"r","answers":{"q":{"text":"x"},"q":{"text":"y"}}}`: "answers.q",
		`{"requestId":"r","answers":{"q":{"label":"x"}}}`:                 "answers.q.label",
		`{"requestId":"r","answers":["q"]}`:                               "answers",
	} {
		t.Run(body, func(t *testing.T) {
			var a UserInputAnswer
			expectFieldError(t, DecodeStrict(strings.NewReader(body), &a), field)
		})
	}
}
