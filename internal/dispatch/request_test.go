package dispatch

import (
	"errors"
	"strings"
	"testing"

	"github.com/openclaw/harness-operator/internal/selection"
)

func TestDecodeTurnRequest(t *testing.T) {
	req, err := DecodeTurnRequest(strings.NewReader(`{"runId":"r1","agentId":"main","modelId":"openai/gpt-5.5",
		"prompt":"hi","images":[{"url":"data:image/png;base64,AA=="}],
		"tools":[{"name":"lookup","description":"d","parameters":{"type":"object"}}],
		"extraSystemPrompt":"be brief","timeoutMs":60000,"toolTimeoutMs":5000,
		"captureRuntimeArtifact":true,"expectedRuntimeArtifact":{"harnessId":"codex","id":"a","fingerprint":"f"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if req.RunID != "r1" || req.Prompt != "hi" || len(req.Tools) != 1 || req.ExpectedRuntimeArtifact.HarnessID != "codex" || req.TimeoutMs != 60000 {
		t.Fatalf("decoded %+v", req)
	}
	a, _ := req.digest()
	again, _ := DecodeTurnRequest(strings.NewReader(`{"prompt":"hi","runId":"r1","agentId":"main","modelId":"openai/gpt-5.5",
		"images":[{"url":"data:image/png;base64,AA=="}],"tools":[{"name":"lookup","description":"d","parameters":{"type": "object"}}],
		"extraSystemPrompt":"be brief","timeoutMs":60000,"toolTimeoutMs":5000,
		"captureRuntimeArtifact":true,"expectedRuntimeArtifact":{"harnessId":"codex","id":"a","fingerprint":"f"}}`))
	if b, _ := again.digest(); a != b {
		t.Fatal("field order or whitespace changed the digest")
	}

	for body, field := range map[string]string{
		`{"prompt":"x","bogus":1}`:                            "bogus",
		`{"prompt":1}`:                                        "prompt",
		`{"tools":[{"name":"a"},{"name":"a"}]}`:               "tools[1].name",
		`{"tools":[{"name":"a","parameters":[1]}]}`:           "tools[0].parameters",
		`{"images":[{"url":"data:x","path":"/p"}]}`:           "images[0]",
		`{"timeoutMs":-1}`:                                    "timeoutMs",
		`{"expectedRuntimeArtifact":{"harnessId":"c","x":1}}`: "expectedRuntimeArtifact.x",
		`{"runId":"` + strings.Repeat("r", 129) + `"}`:        "runId",
	} {
		_, err := DecodeTurnRequest(strings.NewReader(body))
		var fe *selection.FieldError
		if !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("%s: err = %v, want a FieldError for %s", body, err, field)
		}
	}
}
