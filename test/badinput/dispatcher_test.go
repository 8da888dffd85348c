package badinput_test

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/httpapi"
)

// apiCase is one bad request of testdata/dispatcher.yaml and the answer a
// gateway must get.
type apiCase struct {
	Name string `json:"name"`
	// Method is POST unless set.
	Method string `json:"method,omitempty"`
	// Path follows the session's URL (…/agentsessions/<session>), e.g.
	// /turns; {okRun} stands for the finished run of the suite. URL, when
	// set, is a path from the API's root instead.
	Path string `json:"path,omitempty"`
	URL  string `json:"url,omitempty"`
	// Session is the AgentSession addressed (the suite's session unless set).
	Session string `json:"session,omitempty"`
	// Token names the bearer token: gateway (the default), nobody,
	// apiAudience, otherAudience, none, or "raw:<text>" sent as it is.
	Token string `json:"token,omitempty"`
	// TurnToken is the X-Harness-Turn-Token: okRun's real one unless set;
	// none, or "raw:<text>".
	TurnToken string `json:"turnToken,omitempty"`
	// Headers are set on the request (an empty value removes the header).
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
	// Pad replaces "{pad}" in Body with that many "a": an oversize body.
	Pad int `json:"pad,omitempty"`
	// NoRun is a runId that must not be in the journal after the refusal.
	NoRun string  `json:"noRun,omitempty"`
	Want  apiWant `json:"want"`
}

type apiWant struct {
	Status int            `json:"status"`
	Code   wire.ErrorCode `json:"code"`
	// Field is the JSON field path the message must name ("<field>: …").
	Field string `json:"field,omitempty"`
	// Message lists substrings of the error message.
	Message []string `json:"message,omitempty"`
}

func loadAPICorpus(t *testing.T) []apiCase {
	t.Helper()
	b, err := os.ReadFile("testdata/dispatcher.yaml")
	must(t, err)
	var cases []apiCase
	if err := yaml.UnmarshalStrict(b, &cases); err != nil {
		t.Fatalf("testdata/dispatcher.yaml: %v", err)
	}
	seen := map[string]bool{}
	for _, c := range cases {
		if c.Name == "" || seen[c.Name] || c.Want.Status == 0 || c.Want.Code == "" {
			t.Fatalf("testdata/dispatcher.yaml: case %q: a unique name, want.status and want.code are required", c.Name)
		}
		if c.Want.Status == http.StatusBadRequest && c.Want.Field == "" && len(c.Want.Message) == 0 {
			t.Fatalf("testdata/dispatcher.yaml: case %q: a 400 must say what the message names (want.field or want.message)", c.Name)
		}
		seen[c.Name] = true
	}
	return cases
}

// runAPICorpus sends each case and checks its answer, then that the refusal
// left nothing behind: the model saw no request, the finished run the
// answers address is as it was, and the case's runId is not journaled.
func (f *fixture) runAPICorpus(t *testing.T) {
	cases := loadAPICorpus(t)
	t.Logf("%d dispatcher API cases", len(cases))
	okState := f.runState(t, okRun)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			before := len(f.stub.Requests())
			r := f.send(t, c)
			e := expectAPIError(t, r, c.Want)
			t.Logf("%d %s: %s", r.Status, e.Code, e.Message)
			if n := len(f.stub.Requests()); n != before {
				t.Errorf("the refused request reached the model (%d requests, was %d)", n, before)
			}
			if got := f.runState(t, okRun); got != okState {
				t.Errorf("run %s changed: %+v, was %+v", okRun, got, okState)
			}
			if c.NoRun != "" {
				r := f.call(t, http.MethodGet, f.sessionURL(session)+"/turns/"+c.NoRun, f.tokens["gateway"], "", nil)
				expectAPIError(t, r, apiWant{Status: http.StatusNotFound, Code: wire.CodeRunNotFound})
			}
		})
	}
}

func (f *fixture) send(t *testing.T, c apiCase) reply {
	t.Helper()
	method := c.Method
	if method == "" {
		method = http.MethodPost
	}
	name := c.Session
	if name == "" {
		name = session
	}
	url := f.sessionURL(name) + strings.ReplaceAll(c.Path, "{okRun}", okRun)
	if c.URL != "" {
		url = f.op.APIBase + c.URL
	}
	hdr := map[string]string{}
	if tok, ok := f.pick(t, c.TurnToken, f.turnToken); ok {
		hdr[wire.TurnTokenHeader] = tok
	}
	for k, v := range c.Headers {
		hdr[k] = v
	}
	token, _ := f.pick(t, c.Token, f.tokens["gateway"])
	body := strings.ReplaceAll(c.Body, "{pad}", strings.Repeat("a", c.Pad))
	return f.call(t, method, url, token, body, hdr)
}

// pick resolves a case's token name: def when empty, none for no token,
// raw:<text> as it is, else a token of the suite.
func (f *fixture) pick(t *testing.T, name, def string) (string, bool) {
	t.Helper()
	switch {
	case name == "":
		return def, true
	case name == "none":
		return "", false
	case strings.HasPrefix(name, "raw:"):
		return strings.TrimPrefix(name, "raw:"), true
	}
	tok, ok := f.tokens[name]
	if !ok {
		t.Fatalf("unknown token %q", name)
	}
	return tok, true
}

// runState is what GET …/turns/{runId} says of a run: its state and last
// event.
type runState struct {
	state string
	last  int64
}

func (f *fixture) runState(t *testing.T, runID string) runState {
	t.Helper()
	r := f.call(t, http.MethodGet, f.sessionURL(session)+"/turns/"+runID, f.tokens["gateway"], "", nil)
	var st httpapi.TurnState
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &st) != nil {
		t.Fatalf("GET run %s: %d %s", runID, r.Status, r.Body)
	}
	return runState{state: st.State, last: st.LastEventID}
}

// expectAPIError checks an error answer as a gateway reads it: the status,
// a JSON body of the error shape with the code, a message naming the field,
// WWW-Authenticate on 401.
func expectAPIError(t *testing.T, r reply, want apiWant) wire.Error {
	t.Helper()
	var raw map[string]json.RawMessage
	var e wire.Error
	if r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(r.Body, &raw) != nil || json.Unmarshal(r.Body, &e) != nil {
		t.Fatalf("answer %d (Content-Type %q) is not a JSON error: %s", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	for _, k := range []string{"code", "message", "scope", "retryable"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("the error lacks %q: %s", k, r.Body)
		}
	}
	if r.Status != want.Status || e.Code != want.Code {
		t.Fatalf("answer %d %s, want %d %s: %s", r.Status, e.Code, want.Status, want.Code, r.Body)
	}
	if want.Field != "" && !strings.Contains(e.Message, want.Field+": ") {
		t.Errorf("message %q does not name the field %q", e.Message, want.Field)
	}
	for _, m := range want.Message {
		if !strings.Contains(e.Message, m) {
			t.Errorf("message %q does not say %q", e.Message, m)
		}
	}
	if r.Status == http.StatusUnauthorized && !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer ") {
		t.Errorf("401 without WWW-Authenticate: Bearer (got %q)", r.Header.Get("WWW-Authenticate"))
	}
	return e
}
