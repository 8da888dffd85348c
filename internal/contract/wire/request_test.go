package wire

import (
	"strings"
	"testing"
)

func TestDecodeTurnRequest(t *testing.T) {
	const body = `{"runId":"r1","agentId":"main","modelId":"openai/gpt-5.5",
		"prompt":"hi","images":[{"url":"data:image/png;base64,AA=="}],
		"tools":[{"name":"lookup","description":"d","parameters":{"type":"object"}}],
		"extraSystemPrompt":"be brief","timeoutMs":60000,"toolTimeoutMs":5000,
		"captureRuntimeArtifact":true,"expectedRuntimeArtifact":{"harnessId":"codex","id":"a","fingerprint":"f"}}`
	req, err := DecodeTurnRequest(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if req.RunID != "r1" || req.Prompt != "hi" || len(req.Tools) != 1 || req.ExpectedRuntimeArtifact.HarnessID != "codex" || req.TimeoutMs != 60000 {
		t.Fatalf("decoded %+v", req)
	}
	digest := func(body string) [32]byte {
		t.Helper()
		req, err := DecodeTurnRequest(strings.NewReader(body))
		if err != nil {
			t.Fatalf("decode %s: %v", body, err)
		}
		d, err := req.Digest()
		if err != nil {
			t.Fatalf("digest of %s: %v", body, err)
		}
		return d
	}
	a := digest(body)
	if a == ([32]byte{}) {
		t.Fatal("the digest is zero")
	}
	if b := digest(`{"prompt":"hi","runId":"r1","agentId":"main","modelId":"openai/gpt-5.5",
		"images":[{"url":"data:image/png;base64,AA=="}],"tools":[{"name":"lookup","description":"d","parameters":{"type": "object"}}],
		"extraSystemPrompt":"be brief","timeoutMs":60000,"toolTimeoutMs":5000,
		"captureRuntimeArtifact":true,"expectedRuntimeArtifact":{"harnessId":"codex","id":"a","fingerprint":"f"}}`); a != b {
		t.Fatal("field order or whitespace changed the digest")
	}
	// A request that differs in any field is another request: the journal
	// must not take it for the one it recorded under the same runId.
	for _, change := range [][2]string{
		{`"runId":"r1"`, `"runId":"r2"`},
		{`"agentId":"main"`, `"agentId":"ops"`},
		{`"modelId":"openai/gpt-5.5"`, `"modelId":"openai/gpt-5.4"`},
		{`"prompt":"hi"`, `"prompt":"hi!"`},
		{`"url":"data:image/png;base64,AA=="`, `"url":"data:image/png;base64,AB=="`},
		{`"description":"d"`, `"description":"e"`},
		{`"parameters":{"type":"object"}`, `"parameters":{"type":"object","required":["q"]}`},
		{`"extraSystemPrompt":"be brief"`, `"extraSystemPrompt":"be terse"`},
		{`"timeoutMs":60000`, `"timeoutMs":60001`},
		{`"toolTimeoutMs":5000`, `"toolTimeoutMs":5001`},
		{`"captureRuntimeArtifact":true`, `"captureRuntimeArtifact":false`},
		{`"fingerprint":"f"`, `"fingerprint":"g"`},
	} {
		changed := strings.Replace(body, change[0], change[1], 1)
		if changed == body {
			t.Fatalf("%s is not in the body", change[0])
		}
		if digest(changed) == a {
			t.Errorf("%s instead of %s left the digest unchanged", change[1], change[0])
		}
	}

	for _, body := range []string{`{"timeoutMs":86400000,"toolTimeoutMs":3600000}`, `{"timeoutMs":0}`} {
		if _, err := DecodeTurnRequest(strings.NewReader(body)); err != nil {
			t.Errorf("%s (the documented maximum, the default) refused: %v", body, err)
		}
	}
	for body, field := range map[string]string{
		`{"prompt":"x","bogus":1}`:                            "bogus",
		`{"prompt":1}`:                                        "prompt",
		`{"tools":[{"name":"a"},{"name":"a"}]}`:               "tools[1].name",
		`{"tools":[{"name":"a","parameters":[1]}]}`:           "tools[0].parameters",
		`{"images":[{"url":"data:x","path":"/p"}]}`:           "images[0]",
		`{"timeoutMs":-1}`:                                    "timeoutMs",
		`{"timeoutMs":86400001}`:                              "timeoutMs",
		`{"timeoutMs":9223372036854775807}`:                   "timeoutMs",
		`{"timeoutMs":9223372036854775808}`:                   "timeoutMs",
		`{"toolTimeoutMs":-5}`:                                "toolTimeoutMs",
		`{"toolTimeoutMs":3600001}`:                           "toolTimeoutMs",
		`{"toolTimeoutMs":1e300}`:                             "toolTimeoutMs",
		`{"expectedRuntimeArtifact":{"harnessId":"c","x":1}}`: "expectedRuntimeArtifact.x",
		`{"runId":"` + strings.Repeat("r", 129) + `"}`:        "runId",
	} {
		t.Run(body, func(t *testing.T) {
			_, err := DecodeTurnRequest(strings.NewReader(body))
			expectFieldError(t, err, field)
		})
	}
}
