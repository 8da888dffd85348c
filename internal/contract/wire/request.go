package wire

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// MaxRunIDLength is the longest runId a turn accepts (the AgentSession
// status fields that carry it allow 128 characters).
const MaxRunIDLength = 128

// MaxTurnTimeout and MaxToolTimeout are the largest timeoutMs and
// toolTimeoutMs a turn may ask for; larger values are refused (400 naming the
// field) rather than clamped, so a gateway never believes a bound it did not
// get. A day bounds any interactive turn; an hour any single host tool call.
const (
	MaxTurnTimeout = 24 * time.Hour
	MaxToolTimeout = time.Hour
)

// TurnRequest is the body of a prepared turn: the selection attempt
// (embedded, so the JSON stays flat) plus the turn-only fields. Decide
// ignores the turn-only fields.
type TurnRequest struct {
	Attempt
	PassThrough
	MCPTurnFields
	NativeActionOptions
	GatewayTranscriptFields
	AuthProfileTurnFields

	// Prompt is the user's text.
	Prompt string `json:"prompt,omitempty"`
	// Images are attached to the prompt (exactly one of url and path each).
	Images []Image `json:"images,omitzero"`
	// Tools are the host tools offered in this turn; the client answers
	// their calls (the API's …/tool-results).
	Tools []HostTool `json:"tools,omitzero"`
	// ExtraSystemPrompt becomes the thread's developer instructions.
	ExtraSystemPrompt string `json:"extraSystemPrompt,omitempty"`
	// TimeoutMs bounds the turn (the dispatcher's default when zero).
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
	// ToolTimeoutMs bounds each host tool call (the adapter's default when
	// zero).
	ToolTimeoutMs int64 `json:"toolTimeoutMs,omitempty"`
	// CaptureRuntimeArtifact asks for the attested runtime artifact in the
	// result.
	CaptureRuntimeArtifact bool `json:"captureRuntimeArtifact,omitempty"`
	// ExpectedRuntimeArtifact is the artifact a verified-inference turn
	// requires; the exact server chosen must be attested and match it.
	ExpectedRuntimeArtifact *ExpectedRuntimeArtifact `json:"expectedRuntimeArtifact,omitempty"`
}

// Image is an image attached to the prompt: exactly one of URL and Path.
type Image struct {
	// URL is a data: URL (data:image/png;base64,…) or an http(s) URL the
	// model fetches itself.
	URL string `json:"url,omitempty"`
	// Path is an absolute path on the runtime's filesystem (the app-server
	// pod's, not the dispatcher's) of a file inside the session's working
	// directory; the runtime reads the file.
	Path string `json:"path,omitempty"`
	// Detail is the optional image detail: auto, low, high or original.
	Detail string `json:"detail,omitempty"`
}

// HostTool is a tool the client (the gateway) implements and offers in this
// turn.
type HostTool struct {
	// Name is the tool name the model calls.
	Name string `json:"name"`
	// Description tells the model what the tool does.
	Description string `json:"description,omitempty"`
	// Parameters is the JSON schema of the arguments (an object schema);
	// nil means no arguments.
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// ExpectedRuntimeArtifact is the runtime artifact a turn requires.
type ExpectedRuntimeArtifact struct {
	// HarnessID is the harness that must be selected.
	HarnessID string `json:"harnessId,omitempty"`
	// ID is the artifact id (AgentHarness status.runtimeArtifact.id).
	ID string `json:"id,omitempty"`
	// Fingerprint is the artifact fingerprint.
	Fingerprint string `json:"fingerprint,omitempty"`
}

// DecodeTurnRequest decodes one turn request strictly (DecodeStrict:
// unknown and duplicate fields, wrong types and trailing data are refused)
// and validates it. Errors are *FieldError values naming the JSON
// field path. It reads r to the end; bound r when it comes from a client.
func DecodeTurnRequest(r io.Reader) (*TurnRequest, error) {
	req := &TurnRequest{}
	if err := DecodeStrict(r, req); err != nil {
		return nil, err
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	return req, nil
}

// Validate checks the attempt's routes and the turn-only fields; the error
// is a *FieldError.
func (r *TurnRequest) Validate() error {
	if err := r.Attempt.Validate(); err != nil {
		return err
	}
	if err := r.PassThrough.Validate(); err != nil {
		return err
	}
	bad := func(field, msg string) error { return &FieldError{Field: field, Message: msg} }
	if len(r.RunID) > MaxRunIDLength {
		return bad("runId", "must be at most "+strconv.Itoa(MaxRunIDLength)+" bytes")
	}
	if strings.ContainsFunc(r.RunID, unicode.IsControl) {
		// The runId goes back in the X-Harness-Run-Id header of the stream.
		return bad("runId", "must not contain control characters")
	}
	if err := validTimeout("timeoutMs", r.TimeoutMs, MaxTurnTimeout); err != nil {
		return err
	}
	if err := validTimeout("toolTimeoutMs", r.ToolTimeoutMs, MaxToolTimeout); err != nil {
		return err
	}
	if err := r.NativeActionOptions.Validate(); err != nil {
		return err
	}
	if err := ValidateImages(r.Images); err != nil {
		return err
	}
	if err := r.MCPTurnFields.Validate(); err != nil {
		return err
	}
	if err := r.GatewayTranscriptFields.Validate(); err != nil {
		return err
	}
	if err := r.AuthProfileTurnFields.Validate(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, t := range r.Tools {
		field := "tools[" + strconv.Itoa(i) + "]"
		if t.Name == "" {
			return bad(field+".name", "must not be empty")
		}
		if seen[t.Name] {
			return bad(field+".name", fmt.Sprintf("duplicate tool name %q", t.Name))
		}
		seen[t.Name] = true
		if len(t.Parameters) > 0 {
			var schema map[string]any
			if err := json.Unmarshal(t.Parameters, &schema); err != nil {
				return bad(field+".parameters", "must be a JSON object schema")
			}
		}
	}
	return nil
}

// validTimeout checks a timeout in milliseconds: 0 (the default) up to max.
func validTimeout(field string, ms int64, max time.Duration) error {
	switch {
	case ms < 0:
		return &FieldError{Field: field, Message: "must not be negative"}
	case ms > max.Milliseconds():
		return &FieldError{Field: field, Message: fmt.Sprintf("must be at most %d (%s)", max.Milliseconds(), max)}
	}
	return nil
}

// Digest is the journal's request digest: sha256 of the request marshalled
// in struct order, so equal requests give equal digests whatever their JSON
// formatting or field order was. An inline auth profile key is left out
// (AuthProfileTurnFields.withoutKey): the journal keeps nothing derived
// from it, and a retry with a rotated key is the same request.
func (r *TurnRequest) Digest() ([32]byte, error) {
	c := *r
	c.AuthProfileTurnFields = r.withoutKey()
	b, err := json.Marshal(&c)
	if err != nil {
		return [32]byte{}, fmt.Errorf("wire: canonical request: %w", err)
	}
	return sha256.Sum256(b), nil
}
