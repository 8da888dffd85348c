package stubmodel_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

type sseEvent struct {
	Name string
	Data map[string]any
}

// post sends a Responses request and returns the HTTP status and the SSE
// events (or the raw body for non-SSE answers).
func post(t *testing.T, ctx context.Context, s *stubmodel.Server, body string) (int, []sseEvent, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.BaseURL()+"/responses", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer test-key")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, nil, string(b)
	}
	var events []sseEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var cur sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.Name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.Data); err != nil {
				t.Fatalf("bad data line %q: %v", line, err)
			}
		case line == "":
			if cur.Name != "" {
				if cur.Data["type"] != cur.Name {
					t.Errorf("event %q carries data type %v", cur.Name, cur.Data["type"])
				}
				events = append(events, cur)
			}
			cur = sseEvent{}
		}
	}
	return resp.StatusCode, events, ""
}

// deltaText joins the text deltas of a stream.
func deltaText(evs []sseEvent) string {
	var text string
	for _, e := range evs {
		if e.Name == "response.output_text.delta" {
			text += e.Data["delta"].(string)
		}
	}
	return text
}

func names(evs []sseEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Name)
	}
	return out
}

func userBody(text string, extra ...string) string {
	items := []string{
		`{"type":"message","role":"developer","content":[{"type":"input_text","text":"system"}]}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":` + mustJSON(text) + `}]}`,
	}
	items = append(items, extra...)
	return `{"model":"stub-model","stream":true,"input":[` + strings.Join(items, ",") + `],` +
		`"tools":[{"type":"function","name":"lookup_weather","parameters":{}},` +
		`{"type":"namespace","name":"kb","tools":[{"type":"function","name":"search"}]},` +
		`{"type":"web_search","external_web_access":false}]}`
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestListensOnLoopbackOnly(t *testing.T) {
	s := stubmodel.Start(t)
	host, _, err := net.SplitHostPort(s.Addr())
	if err != nil || host != "127.0.0.1" {
		t.Fatalf("Addr() = %q, want 127.0.0.1:<port>", s.Addr())
	}
	if !strings.HasPrefix(s.BaseURL(), "http://127.0.0.1:") || !strings.HasSuffix(s.BaseURL(), "/v1") {
		t.Fatalf("BaseURL() = %q", s.BaseURL())
	}
	resp, err := http.Get("http://" + s.Addr() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /v1/models = %d, want 404", resp.StatusCode)
	}
	if got := s.Unserved(); !reflect.DeepEqual(got, []string{"GET /v1/models"}) || len(s.Requests()) != 0 {
		t.Fatalf("Unserved() = %q, Requests() = %d, want the GET alone among the unserved", got, len(s.Requests()))
	}
}

func TestDefaultTextReplyStreamsDeltasAndRecords(t *testing.T) {
	t.Parallel()
	s := stubmodel.Start(t)
	status, evs, _ := post(t, ctxT(t), s, userBody("say hi"))
	if status != 200 {
		t.Fatalf("status %d", status)
	}
	want := []string{"response.created", "response.in_progress", "response.output_item.added",
		"response.content_part.added", "response.output_text.delta", "response.output_text.delta",
		"response.output_text.delta", "response.output_text.done", "response.content_part.done",
		"response.output_item.done", "response.completed"}
	if got := names(evs); !reflect.DeepEqual(got, want) {
		t.Fatalf("events:\n got %v\nwant %v", got, want)
	}
	deltas := deltaText(evs)
	if deltas != stubmodel.DefaultText {
		t.Fatalf("deltas join to %q", deltas)
	}
	done := evs[len(evs)-2].Data["item"].(map[string]any)
	if done["type"] != "message" || done["role"] != "assistant" {
		t.Fatalf("output_item.done item = %v", done)
	}
	completed := evs[len(evs)-1].Data["response"].(map[string]any)
	if completed["id"] == "" || completed["status"] != "completed" || completed["usage"] == nil {
		t.Fatalf("response.completed = %v", completed)
	}

	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests recorded", len(reqs))
	}
	r := reqs[0]
	if r.Seq != 1 || r.Model != "stub-model" || r.LastUserText() != "say hi" || !r.HasTools {
		t.Fatalf("recorded %+v (last user text %q)", r, r.LastUserText())
	}
	if got, want := r.ToolNames(), []string{"lookup_weather", "kb.search", "web_search"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("ToolNames = %v, want %v", got, want)
	}
	if r.Header.Get("Authorization") != "Bearer test-key" {
		t.Fatalf("header not recorded: %v", r.Header)
	}
	if out, _ := r.Wait(ctxT(t)); out != stubmodel.OutcomeServed {
		t.Fatalf("outcome %v", out)
	}
}

func TestScriptedRepliesByMarkerQueueAndToolOutput(t *testing.T) {
	t.Parallel()
	s := stubmodel.Start(t)
	s.When("CALL", stubmodel.Call(stubmodel.FunctionCall{Name: "search", Namespace: "kb", Arguments: `{"q":"x"}`, CallID: "call_1"}),
		stubmodel.Reasoning("thinking hard").And(stubmodel.Text("done", "do", "ne")))
	s.Enqueue(stubmodel.Text("queued"))
	ctx := ctxT(t)

	_, evs, _ := post(t, ctx, s, userBody("please CALL"))
	want := []string{"response.created", "response.in_progress", "response.output_item.added",
		"response.function_call_arguments.delta", "response.function_call_arguments.done",
		"response.output_item.done", "response.completed"}
	if got := names(evs); !reflect.DeepEqual(got, want) {
		t.Fatalf("call events:\n got %v\nwant %v", got, want)
	}
	item := evs[5].Data["item"].(map[string]any)
	if item["type"] != "function_call" || item["name"] != "search" || item["namespace"] != "kb" ||
		item["call_id"] != "call_1" || item["arguments"] != `{"q":"x"}` {
		t.Fatalf("function_call item = %v", item)
	}

	// The follow-up request of the same turn still has the marker as its
	// latest user text and gets the rule's second reply.
	_, evs, _ = post(t, ctx, s, userBody("please CALL",
		`{"type":"function_call","call_id":"call_1","name":"search","namespace":"kb","arguments":"{}"}`,
		`{"type":"function_call_output","call_id":"call_1","output":"found it"}`))
	got := names(evs)
	if got[2] != "response.output_item.added" || got[3] != "response.reasoning_summary_part.added" ||
		got[4] != "response.reasoning_summary_text.delta" {
		t.Fatalf("reasoning events missing: %v", got)
	}
	if text := deltaText(evs); text != "done" {
		t.Fatalf("text deltas %q", text)
	}

	// Rule used up: the queue answers next, then the default.
	_, evs, _ = post(t, ctx, s, userBody("please CALL"))
	if d := evs[len(evs)-2].Data["item"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"]; d != "queued" {
		t.Fatalf("queued reply = %v", d)
	}
	_, evs, _ = post(t, ctx, s, userBody("again",
		`{"type":"function_call_output","call_id":"call_9","output":"sunny"}`))
	if d := evs[len(evs)-2].Data["item"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"]; d != stubmodel.ToolOutputPrefix+"sunny" {
		t.Fatalf("default reply after tool output = %v", d)
	}

	outs := s.FunctionCallOutputs()
	wantOuts := []stubmodel.FunctionCallOutput{{CallID: "call_1", Output: "found it"}, {CallID: "call_9", Output: "sunny"}}
	if !reflect.DeepEqual(outs, wantOuts) {
		t.Fatalf("FunctionCallOutputs = %v, want %v", outs, wantOuts)
	}
	if n := len(s.RequestsContaining("CALL")); n != 3 {
		t.Fatalf("RequestsContaining(CALL) = %d, want 3", n)
	}
}

func TestHTTPErrorAndCut(t *testing.T) {
	t.Parallel()
	s := stubmodel.Start(t)
	s.When("FAIL", stubmodel.HTTPError(500, "boom"))
	s.When("CUT", stubmodel.Cut(stubmodel.Text("partial")))
	ctx := ctxT(t)

	status, _, body := post(t, ctx, s, userBody("FAIL now"))
	if status != 500 || !strings.Contains(body, `"message":"boom"`) {
		t.Fatalf("500 reply: %d %s", status, body)
	}
	status, evs, _ := post(t, ctx, s, userBody("CUT now"))
	if status != 200 {
		t.Fatalf("cut status %d", status)
	}
	got := names(evs)
	if got[len(got)-1] != "response.output_item.done" {
		t.Fatalf("cut stream should end after the item, got %v", got)
	}
	for _, n := range got {
		if n == "response.completed" {
			t.Fatalf("cut stream sent response.completed: %v", got)
		}
	}
}

// An outage answers every request with its reply, scripted or not, while
// it lasts; the scripted replies are still there after it.
func TestOutageAnswersEveryRequestUntilItEnds(t *testing.T) {
	t.Parallel()
	s := stubmodel.Start(t)
	s.When("SCRIPTED", stubmodel.Text("the scripted reply"))
	ctx := ctxT(t)

	end := s.Outage(stubmodel.HTTPError(503, "provider down"))
	for _, prompt := range []string{"SCRIPTED one", "anything"} {
		if status, _, body := post(t, ctx, s, userBody(prompt)); status != 503 || !strings.Contains(body, "provider down") {
			t.Fatalf("%q during the outage: %d %s, want the outage's 503", prompt, status, body)
		}
	}
	end()
	status, evs, _ := post(t, ctx, s, userBody("SCRIPTED two"))
	if status != 200 || !strings.Contains(deltaText(evs), "the scripted reply") {
		t.Fatalf("after the outage: %d %v, want the scripted reply", status, names(evs))
	}
}

func TestStallReleasedAndAbandoned(t *testing.T) {
	t.Parallel()
	s := stubmodel.Start(t)
	gate := stubmodel.NewGate()
	s.When("STALL", stubmodel.Stall(gate, stubmodel.Text("late")), stubmodel.Stall(stubmodel.NewGate(), stubmodel.Text("never")))
	ctx := ctxT(t)

	type result struct {
		evs []sseEvent
	}
	res := make(chan result, 1)
	go func() {
		_, evs, _ := post(t, ctx, s, userBody("STALL one"))
		res <- result{evs}
	}()
	r, err := s.WaitMarker(ctx, "STALL one")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-gate.Reached():
	case <-ctx.Done():
		t.Fatal("the request never reached its stall")
	}
	if out, err := r.Wait(canceled()); out != stubmodel.OutcomePending || err == nil {
		t.Fatalf("stalled request ended (%v) before release", out)
	}
	gate.Release()
	got := <-res
	if n := names(got.evs); n[len(n)-1] != "response.completed" {
		t.Fatalf("released stall: %v", n)
	}
	if out, _ := r.Wait(ctx); out != stubmodel.OutcomeServed {
		t.Fatalf("outcome %v", out)
	}

	// The second stall is never released: the client gives up.
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(cctx, http.MethodPost, s.BaseURL()+"/responses", strings.NewReader(userBody("STALL two")))
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			_ = resp.Body.Close()
		}
		errc <- err
	}()
	r2, err := s.WaitMarker(ctx, "STALL two")
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("cancelled client got a full answer")
	}
	if out, err := r2.Wait(ctx); err != nil || out != stubmodel.OutcomeClientGone {
		t.Fatalf("abandoned stall outcome = %v, %v; want client-gone", out, err)
	}
}

// canceled is a context that has ended: Request.Wait with it reports
// whether the answer has already ended, without waiting.
func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// HoldBefore pauses the stream between two deltas: the client has the
// deltas before the hold while the rest waits for the gate, and Reached says
// the stream got there.
func TestHoldBeforeDelta(t *testing.T) {
	t.Parallel()
	s := stubmodel.Start(t)
	first, second := stubmodel.NewGate(), stubmodel.NewGate()
	s.When("HOLD", stubmodel.Text("a b c d").HoldBefore(1, first).HoldBefore(3, second))
	ctx := ctxT(t)

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.BaseURL()+"/responses", strings.NewReader(userBody("HOLD")))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	br := bufio.NewReader(resp.Body)
	// readDeltas reads events up to and including the n-th text delta
	// from here and returns the deltas.
	readDeltas := func(n int) []string {
		t.Helper()
		var deltas []string
		for len(deltas) < n {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("stream ended after deltas %q: %v", deltas, err)
			}
			if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
				var ev struct {
					Type, Delta string
				}
				if err := json.Unmarshal([]byte(data), &ev); err != nil {
					t.Fatal(err)
				}
				if ev.Type == "response.output_text.delta" {
					deltas = append(deltas, ev.Delta)
				}
			}
		}
		return deltas
	}
	reached := func(g *stubmodel.Gate, what string) {
		t.Helper()
		select {
		case <-g.Reached():
		case <-ctx.Done():
			t.Fatalf("the stream never reached the %s hold", what)
		}
	}
	if got := readDeltas(1); !reflect.DeepEqual(got, []string{"a "}) {
		t.Fatalf("before the first hold: %q", got)
	}
	reached(first, "first")
	select {
	case <-second.Reached():
		t.Fatal("the stream passed the first hold before its release")
	default:
	}
	r := s.RequestsContaining("HOLD")[0]
	if out, _ := r.Wait(canceled()); out != stubmodel.OutcomePending {
		t.Fatalf("held request ended: %v", out)
	}
	first.Release()
	if got := readDeltas(2); !reflect.DeepEqual(got, []string{"b ", "c "}) {
		t.Fatalf("between the holds: %q", got)
	}
	reached(second, "second")
	second.Release()
	if got := readDeltas(1); !reflect.DeepEqual(got, []string{"d"}) {
		t.Fatalf("after the second hold: %q", got)
	}
	if _, err := io.Copy(io.Discard, br); err != nil {
		t.Fatal(err)
	}
	if out, err := r.Wait(ctx); err != nil || out != stubmodel.OutcomeServed {
		t.Fatalf("outcome %v %v", out, err)
	}
}

func TestCloseEndsStalledRequests(t *testing.T) {
	t.Parallel()
	s, err := stubmodel.New()
	if err != nil {
		t.Fatal(err)
	}
	s.Enqueue(stubmodel.Stall(stubmodel.NewGate(), stubmodel.Text("never")))
	go func() {
		resp, err := http.Post(s.BaseURL()+"/responses", "application/json", strings.NewReader(userBody("x")))
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
	}()
	r, err := s.WaitRequest(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	s.Close()
	s.Close() // idempotent
	if out, _ := r.Wait(ctxT(t)); out == stubmodel.OutcomePending || out == stubmodel.OutcomeServed {
		t.Fatalf("outcome after Close = %v", out)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Close took %v", d)
	}
}

// A message starting with the shell directive makes the model call Codex's
// shell tool with the rest as the command (make run lists a session's
// working directory with it).
func TestShellDirectiveCallsTheShellTool(t *testing.T) {
	t.Parallel()
	s := stubmodel.Start(t)
	_, evs, _ := post(t, ctxT(t), s, userBody(stubmodel.ShellDirective+" ls -A"))
	var call map[string]any
	for _, ev := range evs {
		if item, ok := ev.Data["item"].(map[string]any); ok && ev.Name == "response.output_item.done" {
			call = item
		}
	}
	if call["type"] != "function_call" || call["name"] != "exec_command" || call["arguments"] != `{"cmd":"ls -A"}` {
		t.Fatalf("reply to %q: %v, want an exec_command call of ls -A", stubmodel.ShellDirective+" ls -A", call)
	}
}

// A message starting with the tool directive makes the model call the named
// tool with the given arguments; `namespace.name` calls a namespaced tool.
func TestToolDirectiveCallsTheNamedTool(t *testing.T) {
	t.Parallel()
	s := stubmodel.Start(t)
	for _, c := range []struct{ msg, namespace, name, args string }{
		{stubmodel.ToolDirective + ` get_weather {"city":"Paris"}`, "", "get_weather", `{"city":"Paris"}`},
		{stubmodel.ToolDirective + " mcp__docs.lookup", "mcp__docs", "lookup", "{}"},
	} {
		_, evs, _ := post(t, ctxT(t), s, userBody(c.msg))
		var call map[string]any
		for _, ev := range evs {
			if item, ok := ev.Data["item"].(map[string]any); ok && ev.Name == "response.output_item.done" {
				call = item
			}
		}
		ns, _ := call["namespace"].(string)
		if call["type"] != "function_call" || call["name"] != c.name || ns != c.namespace || call["arguments"] != c.args {
			t.Errorf("reply to %q: %v, want a call of %s.%s with %s", c.msg, call, c.namespace, c.name, c.args)
		}
	}
}
