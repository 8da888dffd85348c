package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/openclaw/harness-operator/internal/contract/sse"
	"github.com/openclaw/harness-operator/internal/contract/wire"
)

func TestSessionName(t *testing.T) {
	long := strings.Repeat("a", 60) + "-" + strings.Repeat("b", 20)
	tests := []struct {
		id, want string
	}{
		{"3f6d2a9e-5b1c-4e8a-9d07-2c41b8e6f5a0", "3f6d2a9e-5b1c-4e8a-9d07-2c41b8e6f5a0"},
		{"Demo", "demo"},
		{"agent:main:main", "agent-main-main"},
		{"a.b_c", "a-b-c"},
		{"x.", "x"},
		{"__", "session-" + shortHash("__")},
		{strings.Repeat("z", 63), strings.Repeat("z", 63)},
		{strings.Repeat("z", 64), strings.Repeat("z", 54) + "-" + shortHash(strings.Repeat("z", 64))},
		// The cut ends in '-': trimmed before the suffix.
		{strings.Repeat("a", 53) + "--" + strings.Repeat("c", 20), strings.Repeat("a", 53) + "-" + shortHash(strings.Repeat("a", 53)+"--"+strings.Repeat("c", 20))},
		{long, strings.Repeat("a", 54) + "-" + shortHash(long)},
	}
	for _, tt := range tests {
		got := sessionName(tt.id)
		if got != tt.want {
			t.Errorf("sessionName(%q) = %q, want %q", tt.id, got, tt.want)
		}
		if len(got) > 63 || strings.HasPrefix(got, "-") || strings.HasSuffix(got, "-") || strings.ToLower(got) != got {
			t.Errorf("sessionName(%q) = %q is not a DNS label", tt.id, got)
		}
	}
	// Long ids sharing a 54-character prefix stay apart.
	a, b := sessionName(strings.Repeat("q", 70)+"1"), sessionName(strings.Repeat("q", 70)+"2")
	if a == b {
		t.Fatalf("long ids collide: %q", a)
	}
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:8]
}

func TestReadSSE(t *testing.T) {
	in := ": comment\nid: 1\nevent: selected\ndata: {\"a\":1}\n\nid: 2\nevent: partial\ndata: line1\ndata: line2\n\nevent: error\ndata: {}\n\nid: 9\nevent: partial\ndata: incomplete"
	var got []sse.Event
	if err := sse.Read(strings.NewReader(in), func(ev sse.Event) bool { got = append(got, ev); return true }); err != nil {
		t.Fatal(err)
	}
	want := []sse.Event{
		{ID: "1", Type: "selected", Data: []byte(`{"a":1}`)},
		{ID: "2", Type: "partial", Data: []byte("line1\nline2")},
		{Type: "error", Data: []byte("{}")},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events\n%v\nwant\n%v", got, want)
	}
}

// sseServer serves canned turn streams: each request gets the next script;
// a script ending in "CUT" aborts the connection mid-stream.
type sseServer struct {
	mu      sync.Mutex
	scripts []string
	status  int
	reqs    []*http.Request
	bodies  []string
}

func (s *sseServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.reqs = append(s.reqs, r)
	s.bodies = append(s.bodies, string(b))
	n := len(s.reqs) - 1
	s.mu.Unlock()
	if s.status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(s.status)
		_, _ = io.WriteString(w, s.scripts[0])
		return
	}
	if n >= len(s.scripts) {
		http.Error(w, "no more scripts", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	script, cut := strings.CutSuffix(s.scripts[n], "CUT")
	_, _ = io.WriteString(w, script)
	w.(http.Flusher).Flush()
	if cut {
		panic(http.ErrAbortHandler)
	}
}

func sseFrame(id, typ string, data any) string {
	b, _ := json.Marshal(data)
	if id != "" {
		id = "id: " + id + "\n"
	}
	return id + "event: " + typ + "\ndata: " + string(b) + "\n\n"
}

func runStream(t *testing.T, srv *sseServer) (string, string, error) {
	t.Helper()
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	base, _ := url.Parse(hs.URL)
	dc := &dispatcherClient{base: base, http: hs.Client(), token: "tok-1"}
	var out, errOut bytes.Buffer
	turns := dc.sessionURL("agents", "demo", wire.RouteTurns, "")
	p := &turnPrinter{out: &out, errOut: &errOut, atLineStart: true, native: newAnswerer(approveNever, strings.NewReader(""), &out, &errOut, dc, "agents", "demo")}
	err := streamTurn(t.Context(), dc, turns, []byte(`{"runId":"run-1","prompt":"hi"}`), p, &errOut)
	return out.String(), errOut.String(), err
}

// exitCode is the exit code the CLI gives for err.
func exitCode(err error) int { return report(err, io.Discard) }

var (
	selected = sseFrame("0", "selected", map[string]any{"runtime": "codex", "harnessId": "codex", "reason": "auto_plugin", "runId": "run-1", "turnToken": "t"})
	okResult = map[string]any{"runId": "run-1", "threadId": "th", "assistantTexts": []string{"Hello world"}, "terminal": map[string]any{"kind": "ok"}, "usage": map[string]any{}, "agentHarnessId": "codex"}
)

func TestStreamTurnReconnectsWithLastEventID(t *testing.T) {
	srv := &sseServer{scripts: []string{
		selected + sseFrame("1", "partial", map[string]string{"itemId": "i", "delta": "Hello "}) + "id: 2\nevent: partial\nCUT",
		sseFrame("2", "partial", map[string]string{"itemId": "i", "delta": "world"}) +
			sseFrame("3", "agent_event", map[string]string{"stream": "tool", "phase": "start", "tool": "exec"}) +
			sseFrame("4", "tool_terminal", map[string]any{"callId": "c", "tool": "exec", "executionStarted": true, "outcome": "failure", "failure": map[string]string{"reason": "native_failed", "message": "exit 1"}}) +
			sseFrame("5", "transcript", map[string]string{"type": "message"}) +
			sseFrame("6", "result", okResult),
	}}
	out, errOut, err := runStream(t, srv)
	if err != nil {
		t.Fatalf("err %v; stderr %s", err, errOut)
	}
	if want := "Hello world\n[tool] exec started\n[tool] exec failed (native_failed): exit 1\n"; out != want {
		t.Fatalf("stdout %q, want %q", out, want)
	}
	if len(srv.reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(srv.reqs))
	}
	if h := srv.reqs[0].Header.Get("Last-Event-ID"); h != "" {
		t.Fatalf("first request has Last-Event-ID %q", h)
	}
	if h := srv.reqs[1].Header.Get("Last-Event-ID"); h != "1" {
		t.Fatalf("reconnect Last-Event-ID %q, want 1 (the last complete event)", h)
	}
	if srv.bodies[1] != srv.bodies[0] || srv.reqs[1].Header.Get("Authorization") != "Bearer tok-1" {
		t.Fatalf("reconnect body %q / auth %q", srv.bodies[1], srv.reqs[1].Header.Get("Authorization"))
	}
	if srv.reqs[1].URL.Path != "/v1/namespaces/agents/agentsessions/demo/turns" {
		t.Fatalf("path %s", srv.reqs[1].URL.Path)
	}
	if !strings.Contains(errOut, "run run-1: runtime codex, harness codex (auto_plugin)") || !strings.Contains(errOut, "reconnecting after event \"1\"") {
		t.Fatalf("stderr %q", errOut)
	}
}

// TestStreamTurnOutcomes runs turns against canned dispatcher answers and
// checks what the user gets: the exit code, stdout and the whole of stderr,
// including the "error: …" line the CLI prints for the error streamTurn
// returns (report, as run does).
func TestStreamTurnOutcomes(t *testing.T) {
	aborted := map[string]any{"runId": "run-1", "threadId": "th", "assistantTexts": []string{}, "terminal": map[string]any{"kind": "aborted", "message": "interrupted"}, "usage": map[string]any{}}
	const selectedLine = "run run-1: runtime codex, harness codex (auto_plugin)\n"
	tests := []struct {
		name       string
		srv        *sseServer
		wantExit   int
		wantOut    string
		wantErrOut string
	}{
		{"result texts when nothing was streamed", &sseServer{scripts: []string{selected + sseFrame("1", "result", okResult)}}, exitOK, "Hello world\n",
			selectedLine},
		{"aborted terminal", &sseServer{scripts: []string{selected + sseFrame("1", "result", aborted)}}, exitFailClosed, "",
			selectedLine + "turn aborted: interrupted\n"},
		{"error event", &sseServer{scripts: []string{selected + sseFrame("1", "error", map[string]any{"code": "HarnessUnavailable", "message": "gone", "scope": "harness", "retryable": true})}}, exitFailClosed, "",
			selectedLine + "error: HarnessUnavailable: gone (retryable true)\n"},
		{"error event of a turn that may have had effects", &sseServer{scripts: []string{selected + sseFrame("1", "error", map[string]any{"code": "HarnessUnavailable", "message": "went away", "scope": "", "retryable": false, "replaySafe": false})}}, exitFailClosed, "",
			selectedLine + "error: HarnessUnavailable: went away (retryable false, replaySafe false)\n"},
		{"fail-closed answer", &sseServer{status: http.StatusUnprocessableEntity, scripts: []string{`{"code":"OverrideDenied","message":"denied","scope":"","retryable":false}`}}, exitFailClosed, "",
			"error: OverrideDenied: denied (HTTP 422, retryable false)\n"},
		{"unknown session", &sseServer{status: http.StatusNotFound, scripts: []string{`{"code":"SessionNotFound","message":"nope","scope":"","retryable":false}`}}, exitBadInput, "",
			"error: SessionNotFound: nope\n"},
		{"forbidden", &sseServer{status: http.StatusForbidden, scripts: []string{`{"code":"Forbidden","message":"no","scope":"","retryable":false}`}}, exitFailure, "",
			"error: dispatcher answered 403 Forbidden: no\n"},
		{"broken twice", &sseServer{scripts: []string{selected + "CUT", sseFrame("1", "partial", map[string]string{"delta": "x"}) + "CUT"}}, exitFailure, "x\n",
			selectedLine + "stream interrupted (unexpected EOF); reconnecting after event \"0\"\n" +
				"error: the turn's stream broke again after a reconnect (last event id \"1\"): unexpected EOF\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, err := runStream(t, tt.srv)
			var reported strings.Builder
			code := report(err, &reported)
			errOut += reported.String()
			if code != tt.wantExit {
				t.Fatalf("exit %d (%v), want %d; stderr %s", code, err, tt.wantExit, errOut)
			}
			if out != tt.wantOut || errOut != tt.wantErrOut {
				t.Fatalf("stdout %q stderr %q; want stdout %q, stderr %q", out, errOut, tt.wantOut, tt.wantErrOut)
			}
		})
	}
}

func TestDispatcherDiscovery(t *testing.T) {
	t.Setenv(envDispatcherURL, "")
	// Without a URL the CLI goes through the API server's proxy, where a
	// --dispatcher-ca cannot apply: refused, naming the ways to give a URL.
	_, err := (&dispatcherFlags{ca: "ca.pem"}).dispatcher(t.Context(), nil, io.Discard)
	if exitCode(err) != exitBadInput || !strings.Contains(err.Error(), "--dispatcher") || !strings.Contains(err.Error(), envDispatcherURL) {
		t.Fatalf("no dispatcher: %v", err)
	}
	if _, err := dispatcherTLS(t.TempDir() + "/missing.pem"); exitCode(err) != exitBadInput {
		t.Fatalf("missing CA: %v", err)
	}
}

// TestDispatcherURLMustBeHTTPS: the CLI sends a bearer token to the
// dispatcher, so a URL that would carry it in cleartext is refused before any
// token is requested (no kubeconfig is needed to see the refusal), naming
// where the URL came from.
func TestDispatcherURLMustBeHTTPS(t *testing.T) {
	tests := []struct {
		name, flag, env string
		wantInMessage   []string
	}{
		{"http flag", "http://dispatcher.example:8443", "", []string{"--dispatcher", `"http://dispatcher.example:8443"`, "plain http:// is refused", "over TLS"}},
		{"http environment", "", "http://127.0.0.1:9444", []string{"$" + envDispatcherURL, "plain http:// is refused"}},
		{"upper-case HTTP", "HTTP://dispatcher.example", "", []string{"--dispatcher", "plain http:// is refused"}},
		{"other scheme", "ftp://x", "", []string{"--dispatcher", "want https://"}},
		{"no host", "https://", "", []string{"--dispatcher", "want https://"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(envDispatcherURL, tt.env)
			var stderr strings.Builder
			_, err := (&dispatcherFlags{url: tt.flag, serviceAccount: defaultServiceAccount, audience: defaultAudience}).dispatcher(t.Context(), nil, &stderr)
			if exitCode(err) != exitBadInput {
				t.Fatalf("exit %d (%v), want %d", exitCode(err), err, exitBadInput)
			}
			for _, w := range tt.wantInMessage {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if stderr.Len() != 0 {
				t.Errorf("a token was requested before the refusal: %q", stderr.String())
			}
		})
	}
}

// TestStreamShowsModelTextEscaped: the answer keeps its lines, but a
// terminal control in it (ESC[8m would hide every later line, OSC 52 would
// write the clipboard) is shown escaped, as are the model's tool calls,
// runtime warnings and a failed tool's message; ordinary text is shown as
// it is.
func TestStreamShowsModelTextEscaped(t *testing.T) {
	script := selected +
		sseFrame("1", "partial", map[string]string{"itemId": "i", "delta": "Done.\nNext:\tnothing\x1b[8m\x1b]52;c;cm0gLXJmIH4=\x07\n"}) +
		sseFrame("2", "tool_call", map[string]any{"callId": "c1", "tool": "lookup\u202e", "arguments": map[string]string{"q": "a\rb"}}) +
		sseFrame("3", "agent_event", map[string]string{"stream": "warning", "text": "careful\x1b[2K\rall fine"}) +
		sseFrame("4", "tool_terminal", map[string]any{"callId": "c2", "tool": "exec", "executionStarted": true, "outcome": "failure",
			"failure": map[string]string{"reason": "native_failed", "message": "exit 1\x1b[1A"}}) +
		sseFrame("5", "result", map[string]any{"runId": "run-1", "threadId": "th", "assistantTexts": []string{}, "terminal": map[string]any{"kind": "failed", "message": "boom\r"}, "usage": map[string]any{}})
	out, errOut, _ := runStream(t, &sseServer{scripts: []string{script}})
	wantOut := "Done.\nNext:\tnothing\\x1b[8m\\x1b]52;c;cm0gLXJmIH4=\\a\n" +
		`[tool call] lookup\u202e {"q":"a\rb"} (the CLI offers no host tools)` + "\n" +
		`[warning] careful\x1b[2K\rall fine` + "\n" +
		`[tool] exec failed (native_failed): exit 1\x1b[1A` + "\n"
	if out != wantOut {
		t.Fatalf("stdout %q, want %q", out, wantOut)
	}
	if !strings.HasSuffix(errOut, "turn failed: boom\\r\n") {
		t.Fatalf("stderr %q", errOut)
	}
	for _, raw := range []string{"\x1b", "\r", "\u202e"} {
		if strings.Contains(out+errOut, raw) {
			t.Fatalf("%q reached the terminal raw: stdout %q stderr %q", raw, out, errOut)
		}
	}
}
