package wire

import (
	"strings"
	"testing"
)

// TestTurnInputIsRefusedNamingTheField pins the checks of what a turn hands
// its runtime, each refusal a *FieldError naming the field; the accepted
// bodies show what stays allowed.
func TestTurnInputIsRefusedNamingTheField(t *testing.T) {
	cases := []struct {
		name, body, field string // field "": accepted
	}{
		{"a prompt", `{"prompt":"hi"}`, ""},
		{"an image alone", `{"images":[{"url":"data:image/png;base64,AA=="}]}`, ""},
		{"every think level, any case", `{"prompt":"hi","thinkLevel":" XHigh "}`, ""},
		{"an http image with a detail", `{"prompt":"hi","images":[{"url":"https://example.com/a.png","detail":"original"}]}`, ""},
		{"an absolute image path", `{"prompt":"hi","images":[{"path":"/work/a.png"}]}`, ""},
		{"a tool name of the model API's alphabet", `{"prompt":"hi","tools":[{"name":"look_up-2"}]}`, ""},
		{"nothing to say", `{"prompt":"  "}`, "prompt"},
		{"an unknown think level", `{"prompt":"hi","thinkLevel":"max"}`, "thinkLevel"},
		{"a tool name with a space", `{"prompt":"hi","tools":[{"name":"ok"},{"name":"look up"}]}`, "tools[1].name"},
		{"a tool name over 64 characters", `{"prompt":"hi","tools":[{"name":"` + strings.Repeat("a", 65) + `"}]}`, "tools[0].name"},
		{"an image url of another scheme", `{"prompt":"hi","images":[{"url":"file:///etc/passwd"}]}`, "images[0].url"},
		{"a relative image path", `{"prompt":"hi","images":[{"path":"../a.png"}]}`, "images[0].path"},
		{"an unknown image detail", `{"prompt":"hi","images":[{"url":"data:image/png;base64,AA==","detail":"ultra"}]}`, "images[0].detail"},
		{"a runId with a control character", `{"prompt":"hi","runId":"r\n1"}`, "runId"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := DecodeTurnRequest(strings.NewReader(c.body))
			if err == nil {
				err = req.ValidateInput()
			}
			expectFieldError(t, err, c.field)
		})
	}
}

// TestToolAnswerPartsAreTextOrImage: a part the runtime cannot take is
// refused naming it, never dropped.
func TestToolAnswerPartsAreTextOrImage(t *testing.T) {
	cases := []struct {
		name   string
		answer ToolAnswer
		field  string
	}{
		{"text and image", ToolAnswer{Content: []ToolContent{{Type: "text", Text: "x"}, {Type: "image", ImageURL: "data:image/png;base64,AA=="}}}, ""},
		{"no content, an error message", ErrorAnswer("failed"), ""},
		{"an unknown type", ToolAnswer{Content: []ToolContent{{Type: "text", Text: "x"}, {Type: "video", Text: "y"}}}, "content[1].type"},
		{"no type", ToolAnswer{Content: []ToolContent{{Text: "x"}}}, "content[0].type"},
		{"an image without its url", ToolAnswer{Content: []ToolContent{{Type: "image", Text: "a chart"}}}, "content[0].imageUrl"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.answer.Validate()
			expectFieldError(t, err, c.field)
		})
	}
}
