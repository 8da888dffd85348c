package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

const fullAttempt = `{
  "runId": "run-1",
  "agentId": "main",
  "sessionKey": "agent:main:demo",
  "sessionId": "s-1",
  "provider": "openai",
  "modelId": "gpt-5.5",
  "thinkLevel": "high",
  "agentHarnessId": "codex",
  "agentHarnessRuntimeOverride": "auto",
  "modelProvider": {
    "api": "openai-responses",
    "baseUrl": "https://api.openai.com/v1",
    "requestTransportOverrides": "none",
    "runtimePolicy": {"compatibleIds": ["codex"]},
    "preparedAuth": {"source": "profile", "mode": "oauth", "requirement": "subscription"}
  },
  "modelProviders": [
    {"api": "openai-chatgpt-responses", "baseUrl": "https://chatgpt.com/backend-api/codex", "requestTransportOverrides": "present", "endpointOverrides": "present"}
  ],
  "toolPolicy": {
    "profile": "coding",
    "alsoAllow": ["browser"],
    "layers": [{"name": "agent", "allow": ["*"], "deny": ["exec"]}, {"name": "group", "allow": []}]
  },
  "toolsAllow": [],
  "disableTools": false,
  "pluginHarnessToolPolicyRestricted": true
}`

func TestDecodeAttemptFull(t *testing.T) {
	a, err := DecodeAttempt(strings.NewReader(fullAttempt))
	if err != nil {
		t.Fatal(err)
	}
	want := &Attempt{
		RunID: "run-1", AgentID: "main", SessionKey: "agent:main:demo", SessionID: "s-1",
		Provider: "openai", ModelID: "gpt-5.5", ThinkLevel: "high",
		AgentHarnessID: "codex", AgentHarnessRuntimeOverride: "auto",
		ModelProvider: &ModelProvider{
			API: "openai-responses", BaseURL: "https://api.openai.com/v1", RequestTransportOverrides: TransportOverridesNone,
			RuntimePolicy: &RouteRuntimePolicy{CompatibleIDs: []string{"codex"}},
			PreparedAuth:  &PreparedAuth{Source: AuthSourceProfile, Mode: "oauth", Requirement: AuthRequirementSubscription},
		},
		ModelProviders: []ModelProvider{{API: "openai-chatgpt-responses", BaseURL: "https://chatgpt.com/backend-api/codex", RequestTransportOverrides: TransportOverridesPresent, EndpointOverrides: TransportOverridesPresent}},
		ToolPolicy: &ToolPolicy{
			Profile: "coding", AlsoAllow: []string{"browser"},
			Layers: []ToolPolicyLayer{{Name: "agent", Allow: ToolList{"*"}, Deny: []string{"exec"}}, {Name: "group", Allow: ToolList{}}},
		},
		ToolsAllow:                        ToolList{},
		PluginHarnessToolPolicyRestricted: true,
	}
	if !reflect.DeepEqual(a, want) {
		t.Fatalf("decoded\n%#v\nwant\n%#v", a, want)
	}
	// Round trip: what we encode decodes to the same attempt.
	out, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	b, err := DecodeAttempt(bytes.NewReader(out))
	if err != nil || !reflect.DeepEqual(a, b) {
		t.Fatalf("round trip: %v\n%s", err, out)
	}
}

// TestToolsAllowPresence checks that absent and [] differ for toolsAllow and
// layers[].allow, in both directions.
func TestToolsAllowPresence(t *testing.T) {
	absent, err := DecodeAttempt(strings.NewReader(`{"toolPolicy":{"layers":[{"deny":["x"]}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if absent.ToolsAllow != nil || absent.ToolPolicy.Layers[0].Allow != nil {
		t.Errorf("absent lists decoded non-nil: %#v", absent)
	}
	empty, err := DecodeAttempt(strings.NewReader(`{"toolsAllow":[],"toolPolicy":{"layers":[{"allow":[]}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if empty.ToolsAllow == nil || len(empty.ToolsAllow) != 0 || empty.ToolPolicy.Layers[0].Allow == nil {
		t.Errorf("[] decoded as absent: %#v", empty)
	}
	out, _ := json.Marshal(empty)
	if !strings.Contains(string(out), `"toolsAllow":[]`) || !strings.Contains(string(out), `"allow":[]`) {
		t.Errorf("[] not kept when encoding: %s", out)
	}
	out, _ = json.Marshal(absent)
	if strings.Contains(string(out), "toolsAllow") || strings.Contains(string(out), "allow") {
		t.Errorf("absent list encoded: %s", out)
	}
	var direct ToolList
	if err := json.Unmarshal([]byte(`null`), &direct); err == nil {
		t.Errorf("ToolList accepted null through encoding/json")
	}
}

func TestDecodeAttemptErrors(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"issue: unknown fields are an error", `{"runId":"r","prompt":"hi"}`, "prompt: unknown field"},
		{"issue: unknown nested fields name their path", `{"modelProvider":{"requestTransportOverrides":"none","headers":{}}}`, "modelProvider.headers: unknown field"},
		{"issue: unknown fields in a retry set name the index", `{"modelProviders":[{"requestTransportOverrides":"none"},{"requestTransportOverrides":"none","x":1}]}`, "modelProviders[1].x: unknown field"},
		{"issue: unknown fields in tool layers name the index", `{"toolPolicy":{"layers":[{"name":"a","except":[]}]}}`, "toolPolicy.layers[0].except: unknown field"},
		{"decision: field names match exactly, not case-insensitively", `{"RunId":"r"}`, "RunId: unknown field"},
		{"decision: duplicate fields are refused", `{"provider":"openai","provider":"anthropic"}`, "provider: duplicate field"},
		{"decision: duplicate nested fields are refused", `{"modelProvider":{"requestTransportOverrides":"none","requestTransportOverrides":"present"}}`, "modelProvider.requestTransportOverrides: duplicate field"},
		{"issue: trailing data is an error", `{"runId":"r"} {"runId":"s"}`, "unexpected data after the JSON object"},
		{"issue: trailing garbage is an error", `{"runId":"r"} x`, "unexpected data after the JSON object"},
		{"issue: requestTransportOverrides must be none or present", `{"modelProvider":{"requestTransportOverrides":"maybe"}}`, "modelProvider.requestTransportOverrides: must be none or present"},
		{"decision: requestTransportOverrides is required on a route", `{"modelProvider":{"api":"openai-responses"}}`, "modelProvider.requestTransportOverrides: must be none or present"},
		{"decision: endpointOverrides, when given, is none or present", `{"modelProvider":{"requestTransportOverrides":"none","endpointOverrides":"authored"}}`, "modelProvider.endpointOverrides: must be none or present"},
		{"issue: enum values are exact (None is not none)", `{"modelProviders":[{"requestTransportOverrides":"None"}]}`, "modelProviders[0].requestTransportOverrides: must be none or present"},
		{"issue: preparedAuth.source must be profile, direct, harness or none", `{"modelProvider":{"requestTransportOverrides":"none","preparedAuth":{"source":"vault"}}}`, "modelProvider.preparedAuth.source: must be profile, direct, harness or none"},
		{"decision: preparedAuth.source is required", `{"modelProvider":{"requestTransportOverrides":"none","preparedAuth":{"requirement":"api-key"}}}`, "modelProvider.preparedAuth.source: must be profile, direct, harness or none"},
		{"issue: preparedAuth.requirement must be api-key or subscription", `{"modelProvider":{"requestTransportOverrides":"none","preparedAuth":{"source":"profile","requirement":"apikey"}}}`, "modelProvider.preparedAuth.requirement: must be api-key or subscription"},
		{"decision: blank compatible ids are refused", `{"modelProvider":{"requestTransportOverrides":"none","runtimePolicy":{"compatibleIds":["codex"," "]}}}`, "modelProvider.runtimePolicy.compatibleIds[1]: must not be blank"},
		{"decision: toolsAllow null is refused because absent and [] differ", `{"toolsAllow":null}`, "toolsAllow: must be an array of tool names"},
		{"decision: layers[].allow null is refused", `{"toolPolicy":{"layers":[{"allow":null}]}}`, "toolPolicy.layers[0].allow: must be an array"},
		{"decision: null strings are refused", `{"provider":null}`, "provider: must not be null"},
		{"decision: null booleans are refused", `{"disableTools":null}`, "disableTools: must not be null"},
		{"decision: wrong types name the field", `{"disableTools":"yes"}`, "disableTools: must be true or false"},
		{"decision: numbers are not strings", `{"runId":1}`, "runId: must be a string"},
		{"decision: objects are not strings", `{"runId":{"a":[[[[1]]]]}}`, "runId: must be a string"},
		{"decision: arrays must be arrays", `{"toolsAllow":"exec"}`, "toolsAllow: must be an array"},
		{"decision: array items are typed", `{"toolsAllow":["exec",2]}`, "toolsAllow[1]: must be a string"},
		{"decision: objects must be objects", `{"modelProvider":[]}`, "modelProvider: must be an object"},
		{"decision: the attempt is a JSON object", `[]`, "must be a JSON object"},
		{"decision: null is not an attempt", `null`, "must be a JSON object"},
		{"decision: empty input is an error", ``, "invalid JSON: unexpected end of JSON input"},
		{"decision: truncated input names where it stopped", `{"modelProvider":{"api":"x"`, "modelProvider: invalid JSON: unexpected end of JSON input"},
		{"decision: syntax errors are reported", `{"runId" "r"}`, "runId: invalid JSON: invalid character"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeAttempt(strings.NewReader(tc.in))
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v (%T), want a *FieldError", err, err)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("err = %q, want prefix %q", err.Error(), tc.want)
			}
		})
	}
}

func TestDecodeAttemptAccepts(t *testing.T) {
	for _, in := range []string{
		`{}`,
		` {"runId":"r"} ` + "\n",
		`{"modelProvider":null,"modelProviders":null,"toolPolicy":null}`,
		`{"modelProvider":{"requestTransportOverrides":"present","runtimePolicy":{}}}`,
		`{"modelProvider":{"requestTransportOverrides":"none","preparedAuth":{"source":"none"}}}`,
	} {
		if _, err := DecodeAttempt(strings.NewReader(in)); err != nil {
			t.Errorf("%s: %v", in, err)
		}
	}
}

// turnRequest shows how a later issue embeds Attempt in a turn request: the
// JSON stays flat and DecodeStrict still names unknown fields.
type turnRequest struct {
	Attempt
	Prompt string `json:"prompt"`
}

func TestDecodeStrictEmbedsAttempt(t *testing.T) {
	var tr turnRequest
	if err := DecodeStrict(strings.NewReader(`{"runId":"r","prompt":"hi","modelProvider":{"requestTransportOverrides":"none"}}`), &tr); err != nil {
		t.Fatal(err)
	}
	if tr.RunID != "r" || tr.Prompt != "hi" || tr.ModelProvider == nil || tr.Validate() != nil {
		t.Fatalf("decoded %#v", tr)
	}
	err := DecodeStrict(strings.NewReader(`{"runId":"r","images":[]}`), &tr)
	if err == nil || err.Error() != "images: unknown field" {
		t.Fatalf("err = %v", err)
	}
	if err := DecodeStrict(strings.NewReader(`{}`), tr); err == nil {
		t.Fatalf("a non-pointer was accepted")
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

func TestDecodeAttemptReadError(t *testing.T) {
	_, err := DecodeAttempt(failingReader{})
	var fe *FieldError
	if err == nil || errors.As(err, &fe) || !strings.Contains(err.Error(), "connection reset") {
		t.Fatalf("err = %v: a read error is not a bad-input error", err)
	}
}

func FuzzDecodeAttempt(f *testing.F) {
	for _, seed := range []string{
		fullAttempt, `{}`, `{"toolsAllow":[]}`, `{"toolsAllow":null}`, `{"provider":"acme","modelId":"m1"}`,
		`{"modelId":"openai/gpt-4.1","agentHarnessRuntimeOverride":"PI"}`,
		`{"modelProviders":[{"requestTransportOverrides":"none","runtimePolicy":{"compatibleIds":["h1"]}},{"requestTransportOverrides":"present"}]}`,
		`{"a":1}`, `[`, `{"runId":"\ud800"}`, `{"runId":"r"}{}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := DecodeAttempt(bytes.NewReader(data))
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error is not a *FieldError: %v", err)
			}
			return
		}
		// Round trip: encoding a decoded attempt and decoding it again is lossless.
		out, err := json.Marshal(a)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		b, err := DecodeAttempt(bytes.NewReader(out))
		if err != nil {
			t.Fatalf("re-decode %s: %v", out, err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("round trip changed the attempt:\n%#v\n%#v", a, b)
		}
	})
}

// numbersAndRaw is a request shape with integers and free-form JSON, as the
// dispatcher's turn request has (timeouts, tool parameter schemas).
type numbersAndRaw struct {
	TimeoutMs int64           `json:"timeoutMs,omitempty"`
	Retries   uint32          `json:"retries,omitempty"`
	Schema    json.RawMessage `json:"schema,omitempty"`
	Name      string          `json:"name,omitempty"`
}

func TestDecodeStrictNumbersAndRawJSON(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		wantErr string
	}{
		{name: "whole numbers and any JSON value are accepted", body: `{"timeoutMs":120000,"retries":3,"schema":{"type":"object","properties":{"a":[1,{"b":null}]}},"name":"x"}`},
		{name: "a raw value may be a scalar or null", body: `{"schema":null,"name":"x"}`},
		{name: "fields after a nested raw value are still checked", body: `{"schema":{"a":{"b":[{}]}},"nme":"x"}`, wantErr: "nme: unknown field"},
		{name: "a fraction is not a whole number", body: `{"timeoutMs":1.5}`, wantErr: "timeoutMs: must be a whole number"},
		{name: "a string is not a number", body: `{"timeoutMs":"10"}`, wantErr: "timeoutMs: must be a whole number"},
		{name: "unsigned fields refuse negatives", body: `{"retries":-1}`, wantErr: "retries: must be a whole number from 0 to 4294967295"},
		{name: "numbers beyond exact float64 integers are refused", body: `{"timeoutMs":1e300}`, wantErr: "timeoutMs: must be a whole number from"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v numbersAndRaw
			err := DecodeStrict(strings.NewReader(tt.body), &v)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}
