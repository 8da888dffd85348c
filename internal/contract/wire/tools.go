package wire

import (
	"fmt"
	"strconv"
)

// ToolResultRequest is the body of …/tool-results: the answer to one host
// tool call.
type ToolResultRequest struct {
	// CallID is the tool_call event's callId.
	CallID string `json:"callId"`
	ToolAnswer
}

// ToolAnswer is the client's result of a host tool call.
type ToolAnswer struct {
	// Content is what the model is told the tool returned.
	Content []ToolContent `json:"content"`
	// IsError marks a failed tool; Content (or ErrorMessage) explains it.
	IsError bool `json:"isError,omitempty"`
	// ErrorMessage is the structured failure detail of a failed tool, for
	// tool_terminal and lastToolError; it is also told to the model when
	// Content is empty.
	ErrorMessage string `json:"errorMessage,omitempty"`
	// MediaURLs are media the tool produced for delivery to the channel
	// (they end up in TurnResult.ToolMediaURLs, never in
	// HostOwnedToolMediaURLs).
	MediaURLs []string `json:"mediaUrls,omitempty"`
}

// ToolContent is one part of a tool result: text, or an image URL.
type ToolContent struct {
	// Type is "text" or "image".
	Type string `json:"type"`
	// Text of a text part.
	Text string `json:"text,omitempty"`
	// ImageURL of an image part: a data: or http(s) URL.
	ImageURL string `json:"imageUrl,omitempty"`
}

// TextAnswer is a ToolAnswer with one text part.
func TextAnswer(text string) ToolAnswer {
	return ToolAnswer{Content: []ToolContent{{Type: "text", Text: text}}}
}

// ErrorAnswer is a failed ToolAnswer whose message is told to the model.
func ErrorAnswer(message string) ToolAnswer {
	return ToolAnswer{Content: []ToolContent{{Type: "text", Text: message}}, IsError: true, ErrorMessage: message}
}

// Validate checks the answer's content parts: each is a text part or an
// image part with its imageUrl. The error is a *FieldError naming the part
// (content[i].type, content[i].imageUrl): a part the runtime cannot take
// would otherwise be dropped, and the model told the tool returned less
// than the gateway sent.
func (a ToolAnswer) Validate() error {
	for i, c := range a.Content {
		field := "content[" + strconv.Itoa(i) + "]"
		switch {
		case c.Type != "text" && c.Type != "image":
			return &FieldError{Field: field + ".type", Message: fmt.Sprintf("%q is not text or image", c.Type)}
		case c.Type == "image" && c.ImageURL == "":
			return &FieldError{Field: field + ".imageUrl", Message: "is required for an image part"}
		}
	}
	return nil
}
