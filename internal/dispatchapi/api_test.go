package dispatchapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/controllers/agentharness"
	"github.com/openclaw/harness-operator/internal/adapter"
	"github.com/openclaw/harness-operator/internal/codextest"
	"github.com/openclaw/harness-operator/internal/dispatch"
	"github.com/openclaw/harness-operator/internal/journal"
	"github.com/openclaw/harness-operator/internal/selection"
	"github.com/openclaw/harness-operator/internal/sse"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/test/stubmodel"
)

// The suite drives the Handler over HTTP (httptest.NewServer, a plain
// http.Client) in front of the real engine: envtest's kube-apiserver (real
// TokenReview, SubjectAccessReview and RBAC, ServiceAccount tokens from the
// TokenRequest API), the real agentharness controller making an external
// AgentHarness `codex` Ready, a real `codex app-server` behind it and the
// stub model.

const (
	serverToken = "dispatchapi-capability-token-7c1e"
	testModel   = "openai/stub-model"
	audience    = "harness-dispatcher"
)

type suite struct {
	t         *testing.T
	ctx       context.Context
	k8s       client.Client
	cs        kubernetes.Interface
	stub      *stubmodel.Server
	codex     *codextest.Server
	srv       *httptest.Server
	handler   *Handler
	gateway   string // token of a ServiceAccount with the gateway role
	audToken  string // the same ServiceAccount, audience-bound to the dispatcher
	nobody    string // token of a ServiceAccount without any grant
	gatewayNS string
}

func TestDispatcherAPI(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" || os.Getenv(codextest.EnvBin) == "" {
		t.Fatal("KUBEBUILDER_ASSETS and CODEX_BIN must be set: KUBEBUILDER_ASSETS=... CODEX_BIN=$(hack/setup-codex.sh) go test ./internal/dispatchapi/")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &suite{t: t, ctx: ctx}

	stub, err := stubmodel.New()
	must(t, err)
	defer stub.Close()
	s.stub = stub
	s.codex, err = codextest.StartErr(t, codextest.Options{
		ProviderURL: stub.BaseURL(), Transport: codextest.WebSocket, WSToken: serverToken,
	})
	must(t, err)

	env, err := testutil.StartEnv()
	must(t, err)
	defer func() { _ = env.Stop() }()
	s.k8s = env.Client
	s.cs, err = kubernetes.NewForConfig(env.Config)
	must(t, err)

	must(t, s.k8s.Create(ctx, &v1alpha1.RuntimePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "codex-only"},
		Spec: v1alpha1.RuntimePolicySpec{
			Providers:        []v1alpha1.ProviderRuntimePolicy{{Provider: "openai", Runtime: "codex"}},
			SessionOverrides: v1alpha1.SessionOverridesDeny,
		},
	}))
	jrnl, err := journal.Open(t.TempDir(), journal.Options{})
	must(t, err)
	defer func() { _ = jrnl.Close() }()
	eng := dispatch.New(s.k8s, s.k8s, jrnl, dispatch.Options{ReattachTimeout: 3 * time.Second})
	defer eng.Close()
	mgr, err := testutil.StartManager(ctx, env, func(m ctrl.Manager) error {
		return (&agentharness.Reconciler{Client: m.GetClient(), MaxConcurrentReconciles: 4}).SetupWithManager(m)
	})
	must(t, err)
	defer func() { _ = mgr.Stop() }()

	s.handler, err = NewHandler(Config{
		Engine: eng, Journal: jrnl, Sessions: s.k8s,
		Authorizer: NewKubeAuthorizer(s.cs, audience),
	})
	must(t, err)
	s.srv = httptest.NewServer(s.handler)
	defer s.srv.Close()

	// The gateway role, bound in each namespace the suite uses.
	must(t, s.k8s.Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "harness-gateway-test"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{APIGroup}, Resources: []string{"agentsessions/turns"}, Verbs: []string{"create", "get"}}},
	}))
	ns := s.namespace("api")
	s.gateway = s.serviceAccountToken(ns, "gateway", nil)
	s.audToken = s.serviceAccountToken(ns, "gateway", []string{audience})
	s.nobody = s.serviceAccountToken(ns, "nobody", nil)
	s.registerCodex(ns, s.codex.URL, true)

	t.Run("streamed text turn; decide equals selected; GET turn and transcript", func(t *testing.T) { s.textTurn(t, ns) })
	t.Run("host tool call answered through tool-results; a wrong turn token is 403", func(t *testing.T) { s.toolTurn(t, ns) })
	t.Run("reconnect with Last-Event-ID receives the rest; one model request", func(t *testing.T) { s.reconnect(t, ns) })
	t.Run("interrupt: wrong token 403, right token interrupts", func(t *testing.T) { s.interruptTurn(t, ns) })
	t.Run("401 without or with a bad token", func(t *testing.T) { s.unauthorized(t, ns) })
	t.Run("403 without the RBAC grant", func(t *testing.T) { s.forbidden(t, ns) })
	t.Run("audience-bound token accepted; another audience refused", func(t *testing.T) { s.audienceBound(t, ns) })
	t.Run("400 malformed bodies", func(t *testing.T) { s.malformed(t, ns) })
	t.Run("404 unknown session and run", func(t *testing.T) { s.notFound(t, ns) })
	t.Run("409 RunIdConflict and EmbeddedRuntimeSelected", func(t *testing.T) { s.conflicts(t, ns) })
	t.Run("422 SessionMismatch and HarnessNotRegistered", func(t *testing.T) { s.unprocessable(t, ns) })
	t.Run("503 HarnessUnavailable with Retry-After", func(t *testing.T) { s.unavailable(t) })
}

// --- specs ---

func (s *suite) textTurn(t *testing.T, ns string) {
	s.newSession(ns, "text", testModel)
	s.stub.When("alpha-1", stubmodel.Text("The answer is forty-two.", "The answer ", "is forty-two."))
	body := `{"runId":"run-a1","prompt":"alpha-1: what is the answer?"}`
	// The decision before the turn (which pins the session): turn-only
	// fields are ignored, nothing runs.
	before := len(s.stub.Requests())
	dresp := s.post(t, s.sessionURL(ns, "text")+"/decide", s.gateway, `{"runId":"run-a1","prompt":"ignored","tools":[{"name":"x"}],"timeoutMs":5}`, nil)
	var decided map[string]any
	decodeJSON(t, dresp, http.StatusOK, &decided)
	if len(s.stub.Requests()) != before {
		t.Fatal("decide reached the model")
	}
	expectError(t, s.get(t, s.sessionURL(ns, "text")+"/turns/run-a1", s.gateway), http.StatusNotFound, CodeRunNotFound)

	resp := s.post(t, s.sessionURL(ns, "text")+"/turns", s.gateway, body, nil)
	evs := readSSE(t, resp)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	if resp.Header.Get(RunIDHeader) != "run-a1" {
		t.Fatalf("%s = %q", RunIDHeader, resp.Header.Get(RunIDHeader))
	}
	checkIDs(t, evs, 0)
	if evs[0].Type != dispatch.EventSelected || evs[len(evs)-1].Type != dispatch.EventResult {
		t.Fatalf("want selected … result, got %v", typesOf(evs))
	}
	var partial strings.Builder
	for _, e := range evs {
		if e.Type == string(adapter.EventPartial) {
			var p adapter.Partial
			must(t, json.Unmarshal(e.Data, &p))
			partial.WriteString(p.Delta)
		}
	}
	if partial.String() != "The answer is forty-two." {
		t.Fatalf("partials %q (events %v)", partial.String(), typesOf(evs))
	}
	var res dispatch.ResultEvent
	must(t, json.Unmarshal(evs[len(evs)-1].Data, &res))
	if !reflect.DeepEqual(res.AssistantTexts, []string{"The answer is forty-two."}) || res.RunID != "run-a1" || res.AgentHarnessID != "codex" {
		t.Fatalf("result %+v", res)
	}

	// selected carries runId and the turn token; the rest is the decision,
	// which …/decide gives for the same body.
	var sel map[string]any
	must(t, json.Unmarshal(evs[0].Data, &sel))
	if sel["runId"] != "run-a1" || sel["turnToken"] != s.handler.TurnToken(ns, "text", "run-a1") || len(sel["turnToken"].(string)) < 40 {
		t.Fatalf("selected %v", sel)
	}
	delete(sel, "runId")
	delete(sel, "turnToken")
	if !reflect.DeepEqual(sel, decided) {
		t.Fatalf("decide %v\n!= selected %v", decided, sel)
	}
	if decided["runtime"] != "codex" {
		t.Fatalf("decision %v", decided)
	}

	var st TurnState
	decodeJSON(t, s.get(t, s.sessionURL(ns, "text")+"/turns/run-a1", s.gateway), http.StatusOK, &st)
	if st.State != "finished" || st.LastEventID != evs[len(evs)-1].ID || len(st.Result) == 0 || st.FinishedAt == nil {
		t.Fatalf("turn state %+v", st)
	}
	tr := s.get(t, s.sessionURL(ns, "text")+"/transcript", s.gateway)
	b := tr.Body
	if tr.Status != http.StatusOK || tr.Header.Get("Content-Type") != "application/x-ndjson" || !strings.Contains(string(b), "forty-two") {
		t.Fatalf("transcript %d %q", tr.Status, b)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if !json.Valid([]byte(line)) {
			t.Fatalf("transcript line is not JSON: %q", line)
		}
	}
}

func (s *suite) toolTurn(t *testing.T, ns string) {
	s.newSession(ns, "tools", testModel)
	s.stub.When("tool-1", stubmodel.CallJSON("lookup_weather", map[string]any{"city": "Oslo"}))
	body := `{"runId":"run-t1","prompt":"tool-1: weather in Oslo?","tools":[{"name":"lookup_weather","description":"Weather by city",` +
		`"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]}`
	resp := s.open(t, s.sessionURL(ns, "tools")+"/turns", s.gateway, body, nil)
	defer func() { _ = resp.Body.Close() }()
	var token string
	answered := false
	evs := liveSSE(t, resp.Body, func(e sseEvent) {
		switch e.Type {
		case dispatch.EventSelected:
			var sel struct{ TurnToken string }
			must(t, json.Unmarshal(e.Data, &sel))
			token = sel.TurnToken
		case string(adapter.EventToolCall):
			var call adapter.ToolCall
			must(t, json.Unmarshal(e.Data, &call))
			url := s.sessionURL(ns, "tools") + "/turns/run-t1/tool-results"
			answer := fmt.Sprintf(`{"callId":%q,"content":[{"type":"text","text":"sunny, 21C"}]}`, call.CallID)
			for _, bad := range []string{"", "not-the-token", s.handler.TurnToken(ns, "tools", "run-other")} {
				r := s.post(t, url, s.gateway, answer, map[string]string{TurnTokenHeader: bad})
				expectError(t, r, http.StatusForbidden, CodeTurnTokenInvalid)
			}
			r := s.post(t, url, s.gateway, answer, map[string]string{TurnTokenHeader: token})
			var ok map[string]any
			decodeJSON(t, r, http.StatusAccepted, &ok)
			// Answered already: nothing pending any more.
			r = s.post(t, url, s.gateway, answer, map[string]string{TurnTokenHeader: token})
			if r.Status != http.StatusConflict {
				t.Errorf("second answer: %d", r.Status)
			}
			answered = true
		}
	})
	checkIDs(t, evs, 0)
	if !answered {
		t.Fatalf("no tool_call in %v", typesOf(evs))
	}
	var res dispatch.ResultEvent
	must(t, json.Unmarshal(evs[len(evs)-1].Data, &res))
	if !reflect.DeepEqual(res.AssistantTexts, []string{stubmodel.ToolOutputPrefix + "sunny, 21C"}) {
		t.Fatalf("result %+v (events %v)", res, typesOf(evs))
	}
	var term adapter.ToolTerminal
	for _, e := range evs {
		if e.Type == string(adapter.EventToolTerminal) {
			must(t, json.Unmarshal(e.Data, &term))
		}
	}
	if term.Outcome != adapter.OutcomeSuccess {
		t.Fatalf("tool terminal %+v", term)
	}
}

func (s *suite) reconnect(t *testing.T, ns string) {
	s.newSession(ns, "resume", testModel)
	gate := stubmodel.NewGate()
	defer gate.Release()
	s.stub.When("lambda-1", stubmodel.Stall(gate, stubmodel.Text("all of the answer arrives", "all of ", "the answer ", "arrives")))
	body := `{"runId":"run-l1","prompt":"lambda-1 go"}`
	url := s.sessionURL(ns, "resume") + "/turns"

	resp := s.open(t, url, s.gateway, body, nil)
	defer func() { _ = resp.Body.Close() }()
	// Read the first event, then drop the connection mid-turn.
	sc := newScanner(resp.Body)
	first, ok := nextEvent(sc)
	if !ok || first.Type != dispatch.EventSelected || first.ID != 1 {
		t.Fatalf("first event %+v", first)
	}
	_ = resp.Body.Close()
	if _, err := s.stub.WaitMarker(s.ctx, "lambda-1"); err != nil {
		t.Fatal(err)
	}
	gate.Release()

	evs := readSSE(t, s.post(t, url, s.gateway, body, map[string]string{"Last-Event-ID": strconv.FormatInt(first.ID, 10)}))
	checkIDs(t, evs, first.ID)
	if evs[len(evs)-1].Type != dispatch.EventResult {
		t.Fatalf("events after reconnect %v", typesOf(evs))
	}
	for _, e := range evs {
		if e.Type == dispatch.EventSelected {
			t.Fatalf("selected replayed after Last-Event-ID %d: %v", first.ID, typesOf(evs))
		}
	}
	var partial strings.Builder
	for _, e := range evs {
		if e.Type == string(adapter.EventPartial) {
			var p adapter.Partial
			must(t, json.Unmarshal(e.Data, &p))
			partial.WriteString(p.Delta)
		}
	}
	if partial.String() != "all of the answer arrives" {
		t.Fatalf("partials after reconnect %q", partial.String())
	}
	if n := len(s.stub.RequestsContaining("lambda-1")); n != 1 {
		t.Fatalf("the model saw %d requests, want 1", n)
	}

	// Resuming a finished run from the start replays it all; a Last-Event-ID
	// for a run the journal does not know runs nothing.
	all := readSSE(t, s.post(t, url, s.gateway, body, map[string]string{"Last-Event-ID": "0"}))
	checkIDs(t, all, 0)
	if all[len(all)-1].ID != evs[len(evs)-1].ID {
		t.Fatalf("replay ends at %d, the stream at %d", all[len(all)-1].ID, evs[len(evs)-1].ID)
	}
	r := s.post(t, url, s.gateway, `{"runId":"run-l-unknown","prompt":"lambda-1 go"}`, map[string]string{"Last-Event-ID": "3"})
	expectError(t, r, http.StatusNotFound, CodeRunNotFound)
	if n := len(s.stub.RequestsContaining("lambda-1")); n != 1 {
		t.Fatalf("the model saw %d requests, want 1", n)
	}
}

func (s *suite) interruptTurn(t *testing.T, ns string) {
	s.newSession(ns, "stop", testModel)
	gate := stubmodel.NewGate()
	defer gate.Release()
	s.stub.When("kappa-1", stubmodel.Stall(gate, stubmodel.Text("never delivered")))
	resp := s.open(t, s.sessionURL(ns, "stop")+"/turns", s.gateway, `{"runId":"run-k1","prompt":"kappa-1 go"}`, nil)
	defer func() { _ = resp.Body.Close() }()
	sc := newScanner(resp.Body)
	first, _ := nextEvent(sc)
	var sel struct{ TurnToken string }
	must(t, json.Unmarshal(first.Data, &sel))
	if _, err := s.stub.WaitMarker(s.ctx, "kappa-1"); err != nil {
		t.Fatal(err)
	}
	url := s.sessionURL(ns, "stop") + "/turns/run-k1/interrupt"
	expectError(t, s.post(t, url, s.gateway, "", map[string]string{TurnTokenHeader: "wrong"}), http.StatusForbidden, CodeTurnTokenInvalid)
	expectError(t, s.post(t, url, s.nobody, "", map[string]string{TurnTokenHeader: sel.TurnToken}), http.StatusForbidden, CodeForbidden)
	var out map[string]any
	decodeJSON(t, s.post(t, url, s.gateway, "", map[string]string{TurnTokenHeader: sel.TurnToken}), http.StatusAccepted, &out)
	var rest []sseEvent
	for {
		e, ok := nextEvent(sc)
		if !ok {
			break
		}
		rest = append(rest, e)
	}
	_ = resp.Body.Close()
	if len(rest) == 0 || rest[len(rest)-1].Type != dispatch.EventResult {
		t.Fatalf("after interrupt %v", typesOf(rest))
	}
	var res dispatch.ResultEvent
	must(t, json.Unmarshal(rest[len(rest)-1].Data, &res))
	if res.Terminal.Kind != adapter.TerminalAborted {
		t.Fatalf("terminal %+v", res.Terminal)
	}
	// Ended: not running any more.
	expectError(t, s.post(t, url, s.gateway, "{}", map[string]string{TurnTokenHeader: sel.TurnToken}), http.StatusConflict, CodeTurnNotRunning)
}

func (s *suite) unauthorized(t *testing.T, ns string) {
	url := s.sessionURL(ns, "text") + "/decide"
	e := expectError(t, s.post(t, url, "", `{}`, nil), http.StatusUnauthorized, CodeUnauthorized)
	if !strings.Contains(e.Message, "bearer token is required") {
		t.Fatalf("message %q", e.Message)
	}
	e = expectError(t, s.post(t, url, "not-a-kubernetes-token", `{}`, nil), http.StatusUnauthorized, CodeUnauthorized)
	if !strings.Contains(e.Message, "not accepted") {
		t.Fatalf("message %q", e.Message)
	}
	expectError(t, s.get(t, s.sessionURL(ns, "text")+"/transcript", ""), http.StatusUnauthorized, CodeUnauthorized)
}

func (s *suite) forbidden(t *testing.T, ns string) {
	before := len(s.stub.Requests())
	for _, path := range []string{"/turns", "/decide"} {
		e := expectError(t, s.post(t, s.sessionURL(ns, "text")+path, s.nobody, `{"prompt":"alpha-1"}`, nil), http.StatusForbidden, CodeForbidden)
		if !strings.Contains(e.Message, "system:serviceaccount:"+ns+":nobody") || !strings.Contains(e.Message, "create agentsessions/turns") {
			t.Fatalf("message %q", e.Message)
		}
	}
	expectError(t, s.get(t, s.sessionURL(ns, "text")+"/turns/run-a1", s.nobody), http.StatusForbidden, CodeForbidden)
	// The grant is per namespace: the gateway may not run turns elsewhere.
	expectError(t, s.post(t, s.sessionURL("default", "text")+"/turns", s.gateway, `{}`, nil), http.StatusForbidden, CodeForbidden)
	if len(s.stub.Requests()) != before {
		t.Fatal("a refused request reached the model")
	}
}

func (s *suite) audienceBound(t *testing.T, ns string) {
	var d selection.Decision
	decodeJSON(t, s.post(t, s.sessionURL(ns, "text")+"/decide", s.audToken, `{}`, nil), http.StatusOK, &d)
	if d.Runtime != "codex" {
		t.Fatalf("decision %+v", d)
	}
	// A token bound to another audience is not accepted.
	other := s.serviceAccountToken(s.gatewayNS, "gateway", []string{"someone-else"})
	expectError(t, s.post(t, s.sessionURL(ns, "text")+"/decide", other, `{}`, nil), http.StatusUnauthorized, CodeUnauthorized)
}

func (s *suite) malformed(t *testing.T, ns string) {
	url := s.sessionURL(ns, "text") + "/turns"
	e := expectError(t, s.post(t, url, s.gateway, `{"prompt":"x","bogus":1}`, nil), http.StatusBadRequest, CodeBadRequest)
	if !strings.Contains(e.Message, "bogus") {
		t.Fatalf("message %q", e.Message)
	}
	e = expectError(t, s.post(t, url, s.gateway, `{"tools":[{"name":""}]}`, nil), http.StatusBadRequest, CodeBadRequest)
	if !strings.Contains(e.Message, "tools[0].name") {
		t.Fatalf("message %q", e.Message)
	}
	expectError(t, s.post(t, url, s.gateway, `not json`, nil), http.StatusBadRequest, CodeBadRequest)
	big := `{"prompt":"` + strings.Repeat("a", DefaultMaxBodyBytes) + `"}`
	expectError(t, s.post(t, url, s.gateway, big, nil), http.StatusRequestEntityTooLarge, CodeRequestTooLarge)
	expectError(t, s.post(t, url, s.gateway, `{}`, map[string]string{"Last-Event-ID": "x"}), http.StatusBadRequest, CodeBadRequest)
	expectError(t, s.get(t, s.sessionURL(ns, "text")+"/decide", s.gateway), http.StatusMethodNotAllowed, CodeMethodNotAllowed)
}

func (s *suite) notFound(t *testing.T, ns string) {
	for _, path := range []string{"/turns", "/decide"} {
		expectError(t, s.post(t, s.sessionURL(ns, "missing")+path, s.gateway, `{"prompt":"x"}`, nil), http.StatusNotFound, CodeSessionNotFound)
	}
	expectError(t, s.get(t, s.sessionURL(ns, "missing")+"/transcript", s.gateway), http.StatusNotFound, CodeSessionNotFound)
	expectError(t, s.get(t, s.sessionURL(ns, "text")+"/turns/run-nope", s.gateway), http.StatusNotFound, CodeRunNotFound)
	expectError(t, s.get(t, s.srv.URL+"/v1/nothing", s.gateway), http.StatusNotFound, CodeNotFound)
}

func (s *suite) conflicts(t *testing.T, ns string) {
	before := len(s.stub.Requests())
	e := expectError(t, s.post(t, s.sessionURL(ns, "text")+"/turns", s.gateway, `{"runId":"run-a1","prompt":"something else"}`, nil),
		http.StatusConflict, string(selection.CodeRunIDConflict))
	if e.Retryable {
		t.Fatalf("%+v", e)
	}
	s.newSession(ns, "embedded", "anthropic/claude-x")
	e = expectError(t, s.post(t, s.sessionURL(ns, "embedded")+"/turns", s.gateway, `{"runId":"run-e1","prompt":"hello"}`, nil),
		http.StatusConflict, string(selection.CodeEmbeddedRuntimeSelected))
	if e.Scope != string(selection.ScopeHarness) || e.ReplaySafe != nil {
		t.Fatalf("%+v", e)
	}
	if len(s.stub.Requests()) != before {
		t.Fatal("a refused turn reached the model")
	}
}

func (s *suite) unprocessable(t *testing.T, ns string) {
	e := expectError(t, s.post(t, s.sessionURL(ns, "text")+"/turns", s.gateway, `{"agentId":"someone-else","prompt":"x"}`, nil),
		http.StatusUnprocessableEntity, string(selection.CodeSessionMismatch))
	if e.Retryable {
		t.Fatalf("%+v", e)
	}
	empty := s.namespace("api-noharness")
	s.newSession(empty, "s", testModel)
	e = expectError(t, s.post(t, s.sessionURL(empty, "s")+"/turns", s.gateway, `{"prompt":"x"}`, nil),
		http.StatusUnprocessableEntity, string(selection.CodeHarnessNotRegistered))
	if e.Retryable {
		t.Fatalf("%+v", e)
	}
}

func (s *suite) unavailable(t *testing.T) {
	ns := s.namespace("api-down")
	s.registerCodex(ns, "ws://127.0.0.1:1", false)
	s.newSession(ns, "s", testModel)
	resp := s.post(t, s.sessionURL(ns, "s")+"/turns", s.gateway, `{"runId":"run-u1","prompt":"x"}`, nil)
	if ra := resp.Header.Get("Retry-After"); ra == "" {
		t.Fatalf("no Retry-After on %d", resp.Status)
	}
	e := expectError(t, resp, http.StatusServiceUnavailable, string(selection.CodeHarnessUnavailable))
	if !e.Retryable || e.Scope != string(selection.ScopeHarness) {
		t.Fatalf("%+v", e)
	}
	// Nothing was journaled: the same runId may be retried.
	expectError(t, s.get(t, s.sessionURL(ns, "s")+"/turns/run-u1", s.gateway), http.StatusNotFound, CodeRunNotFound)
}

// --- fixtures ---

func (s *suite) namespace(prefix string) string {
	s.t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	must(s.t, s.k8s.Create(s.ctx, ns))
	must(s.t, s.k8s.Create(s.ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "gateway"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "harness-gateway-test"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: s.firstNS(ns.Name), Name: "gateway"}},
	}))
	return ns.Name
}

// firstNS is the namespace of the suite's ServiceAccounts (the first one
// created).
func (s *suite) firstNS(created string) string {
	if s.gatewayNS == "" {
		s.gatewayNS = created
	}
	return s.gatewayNS
}

func (s *suite) serviceAccountToken(ns, name string, audiences []string) string {
	s.t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := s.k8s.Create(s.ctx, sa); err != nil && !strings.Contains(err.Error(), "already exists") {
		s.t.Fatal(err)
	}
	tr, err := s.cs.CoreV1().ServiceAccounts(ns).CreateToken(s.ctx, name, &authnv1.TokenRequest{
		Spec: authnv1.TokenRequestSpec{Audiences: audiences, ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	must(s.t, err)
	return tr.Status.Token
}

func (s *suite) registerCodex(ns, url string, ready bool) {
	s.t.Helper()
	must(s.t, s.k8s.Create(s.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "codex-token"},
		Data:       map[string][]byte{"token": []byte(serverToken)},
	}))
	h := &v1alpha1.AgentHarness{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "codex"},
		Spec: v1alpha1.AgentHarnessSpec{
			HarnessID: "codex", Label: "Codex", Adapter: v1alpha1.AdapterCodexAppServer,
			External: &v1alpha1.ExternalServer{URL: url, TokenSecretRef: v1alpha1.SecretKeyReference{Name: "codex-token", Key: "token"}},
		},
	}
	must(s.t, s.k8s.Create(s.ctx, h))
	typ, want := v1alpha1.HarnessConditionReady, metav1.ConditionTrue
	if !ready {
		typ, want = v1alpha1.HarnessConditionWorkloadReady, metav1.ConditionFalse
	}
	deadline := time.Now().Add(40 * time.Second)
	for {
		must(s.t, s.k8s.Get(s.ctx, client.ObjectKeyFromObject(h), h))
		c := meta.FindStatusCondition(h.Status.Conditions, typ)
		if h.Status.ObservedGeneration == h.Generation && c != nil && c.Status == want && c.ObservedGeneration == h.Generation {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("AgentHarness %s/codex: condition %s is not %s: %+v", ns, typ, want, h.Status.Conditions)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *suite) newSession(ns, name, model string) {
	s.t.Helper()
	must(s.t, s.k8s.Create(s.ctx, &v1alpha1.AgentSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.AgentSessionSpec{AgentID: "main", SessionKey: "agent:main:" + name, SessionID: name + "-id", Model: model},
	}))
}

func (s *suite) sessionURL(ns, name string) string {
	return s.srv.URL + "/v1/namespaces/" + ns + "/agentsessions/" + name
}

// reply is a whole (non-streamed or ended) answer.
type reply struct {
	Status int
	Header http.Header
	Body   []byte
}

func (s *suite) request(t *testing.T, method, url, token, body string, hdr map[string]string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(s.ctx, method, url, strings.NewReader(body))
	must(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return req
}

// open starts a POST whose answer the caller reads (and closes) as it
// streams.
func (s *suite) open(t *testing.T, url, token, body string, hdr map[string]string) *http.Response {
	t.Helper()
	resp, err := http.DefaultClient.Do(s.request(t, http.MethodPost, url, token, body, hdr))
	must(t, err)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	return resp
}

func (s *suite) call(t *testing.T, method, url, token, body string, hdr map[string]string) reply {
	t.Helper()
	resp, err := http.DefaultClient.Do(s.request(t, method, url, token, body, hdr))
	must(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	return reply{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

func (s *suite) post(t *testing.T, url, token, body string, hdr map[string]string) reply {
	t.Helper()
	return s.call(t, http.MethodPost, url, token, body, hdr)
}

func (s *suite) get(t *testing.T, url, token string) reply {
	t.Helper()
	return s.call(t, http.MethodGet, url, token, "", nil)
}

// --- HTTP and SSE helpers ---

type sseEvent struct {
	ID   int64
	Type string
	Data json.RawMessage
}

func newScanner(r io.Reader) *sse.Scanner { return sse.NewScanner(r) }

// nextEvent reads one event with its id as a number.
func nextEvent(sc *sse.Scanner) (sseEvent, bool) {
	if !sc.Next() {
		return sseEvent{}, false
	}
	ev := sc.Event()
	id, _ := strconv.ParseInt(ev.ID, 10, 64)
	return sseEvent{ID: id, Type: ev.Type, Data: ev.Data}, true
}

// readSSE parses an ended 200 event stream.
func readSSE(t *testing.T, rep reply) []sseEvent {
	t.Helper()
	if rep.Status != http.StatusOK {
		t.Fatalf("status %d: %s", rep.Status, rep.Body)
	}
	return scanSSE(t, bytes.NewReader(rep.Body), nil)
}

// liveSSE reads an event stream to its end; onEvent sees each event as it
// arrives.
func liveSSE(t *testing.T, r io.Reader, onEvent func(sseEvent)) []sseEvent {
	t.Helper()
	return scanSSE(t, r, onEvent)
}

func scanSSE(t *testing.T, r io.Reader, onEvent func(sseEvent)) []sseEvent {
	t.Helper()
	sc := newScanner(r)
	var evs []sseEvent
	for {
		e, ok := nextEvent(sc)
		if !ok {
			break
		}
		if !json.Valid(e.Data) {
			t.Fatalf("event %d %s: data is not JSON: %q", e.ID, e.Type, e.Data)
		}
		evs = append(evs, e)
		if onEvent != nil {
			onEvent(e)
		}
	}
	if len(evs) == 0 {
		t.Fatal("empty event stream")
	}
	return evs
}

// checkIDs checks the ids run after, after+1, … without a gap.
func checkIDs(t *testing.T, evs []sseEvent, after int64) {
	t.Helper()
	for i, e := range evs {
		if e.ID != after+int64(i)+1 {
			t.Fatalf("event %d (%s) has id %d, want %d: %v", i, e.Type, e.ID, after+int64(i)+1, typesOf(evs))
		}
	}
}

func typesOf(evs []sseEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

func decodeJSON(t *testing.T, rep reply, status int, v any) {
	t.Helper()
	if rep.Status != status {
		t.Fatalf("status %d, want %d: %s", rep.Status, status, rep.Body)
	}
	if ct := rep.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	must(t, json.Unmarshal(rep.Body, v))
}

// expectError checks an error answer's status and code and that its body
// has every field of the error shape.
func expectError(t *testing.T, resp reply, status int, code string) Error {
	t.Helper()
	var raw map[string]json.RawMessage
	decodeJSON(t, resp, status, &raw)
	for _, k := range []string{"code", "message", "scope", "retryable"} {
		if _, ok := raw[k]; !ok {
			t.Fatalf("error body without %q: %v", k, raw)
		}
	}
	b, _ := json.Marshal(raw)
	var e Error
	must(t, json.Unmarshal(b, &e))
	if e.Code != code || e.Message == "" {
		t.Fatalf("error %+v, want code %s", e, code)
	}
	if status == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
		t.Fatal("503 without Retry-After")
	}
	return e
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
