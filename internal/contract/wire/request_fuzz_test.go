package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// FuzzDecodeTurnRequest: the dispatcher's turn body decoder never panics,
// refuses only with a *FieldError, and what it accepts survives
// encode → decode unchanged, so the journal's digest of a re-sent request
// is the digest it recorded.
func FuzzDecodeTurnRequest(f *testing.F) {
	for _, seed := range []string{
		`{}`, `[]`, `{"prompt":"hi"}{}`, `{"prompt":null}`,
		`{"runId":"r1","agentId":"main","modelId":"openai/gpt-5.5","prompt":"hi","images":[{"url":"data:image/png;base64,AA=="}],` +
			`"tools":[{"name":"lookup","description":"d","parameters":{"type":"object"}}],"extraSystemPrompt":"be brief",` +
			`"timeoutMs":60000,"toolTimeoutMs":5000,"captureRuntimeArtifact":true,` +
			`"expectedRuntimeArtifact":{"harnessId":"codex","id":"a","fingerprint":"f"}}`,
		`{"tools":[{"name":"a","parameters":null}]}`,
		`{"tools":[{"name":"a","parameters":[1]}]}`,
		`{"mcpServers":[{"name":"docs","url":"https://mcp.example/x","headers":[{"name":"Authorization","valueFrom":{"secretKeyRef":{"name":"s","key":"k"}}}],"enabledTools":["a"],"toolTimeoutMs":1000}]}`,
		`{"gatewayTranscript":{"afterRunId":"r0","messages":[{"role":"user","text":"a"}]}}`,
		`{"gatewayTranscript":{"messages":null}}`,
		`{"approvalMode":"on-request","collaborationMode":"plan","trigger":"cron","skillWorkshopProposalOnly":true}`,
		`{"authProfile":{"id":"openai:work","secretKeyRef":{"name":"s","key":"k"}}}`, `{"authProfile":{"id":"-"}}`,
		`{"modelProvider":{"requestTransportOverrides":"none","endpointOverrides":"present","preparedAuth":{"source":"profile","mode":"oauth","requirement":"subscription"}}}`,
		`{"toolPolicy":{"profile":"coding","alsoAllow":["exec"],"layers":[{"name":"g","allow":[],"deny":["group:fs"]}]},"toolsAllow":["read"]}`,
		`{"timeoutMs":1e300}`, `{"timeoutMs":-0}`, `{"runId":"\ud800"}`, "{\"prompt\":\"\xff\"}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := DecodeTurnRequest(bytes.NewReader(data))
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error is not a *FieldError: %v", err)
			}
			return
		}
		out, err := json.Marshal(req)
		if err != nil {
			t.Fatalf("marshal an accepted request: %v", err)
		}
		again, err := DecodeTurnRequest(bytes.NewReader(out))
		if err != nil {
			t.Fatalf("the encoding of an accepted request is refused: %v\n%s", err, out)
		}
		out2, err := json.Marshal(again)
		if err != nil {
			t.Fatalf("marshal the re-decoded request: %v", err)
		}
		if !bytes.Equal(out, out2) {
			t.Fatalf("encode → decode → encode changed the request:\n%s\n%s", out, out2)
		}
		d1, err1 := req.Digest()
		d2, err2 := again.Digest()
		if err1 != nil || err2 != nil || d1 != d2 {
			t.Fatalf("digest changed over a round trip (%v, %v)", err1, err2)
		}
	})
}
