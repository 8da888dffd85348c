package codex

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// These tests pin what Codex 0.169.0 does with a model provider defined per
// thread, as docs/design/model-gateway.md ("What Codex 0.169.0 does with a
// model provider") relies on: an upgrade that changes it fails here. They
// speak the app-server protocol directly, not through the adapter, so they
// pin Codex and not our use of it.

// gatewayID is the provider id the model gateway's threads use.
const gatewayID = "harness-gateway"

// gatewayRig is a server set up as the design's managed app-server: its
// default provider is harness-gateway, defined on the command line without
// a credential and pointed at the stub; config.toml's `stub` provider (with
// its env_key) stays defined, as a harness's provider from before the
// gateway.
func gatewayRig(t *testing.T) (*rig, codextest.Options) {
	t.Helper()
	codextest.Bin(t)
	stub := stubmodel.Start(t)
	opts := codextest.Options{ProviderURL: stub.BaseURL(), ExtraArgs: []string{
		"-c", `model_provider="` + gatewayID + `"`,
		"-c", fmt.Sprintf(`model_providers.%s={name="gateway",base_url=%q,wire_api="responses",`+
			`request_max_retries=0,stream_max_retries=0}`, gatewayID, stub.BaseURL()),
	}}
	r := &rig{stub: stub, srv: codextest.Start(t, opts)}
	r.c = r.connect(t)
	opts.Dir = r.srv.Dir
	return r, opts
}

// providerDef is a full definition of provider id pointing at the stub, with
// a bearer token and extra headers when they are set.
func providerDef(r *rig, token string, headers map[string]string) map[string]any {
	def := map[string]any{"name": "gateway", "base_url": r.stub.BaseURL(), "wire_api": "responses",
		"request_max_retries": 0, "stream_max_retries": 0}
	if token != "" {
		def["experimental_bearer_token"] = token
	}
	if headers != nil {
		def["http_headers"] = headers
	}
	return def
}

// onProvider is a thread config selecting provider id with definition def.
func onProvider(id string, def map[string]any) map[string]any {
	return map[string]any{"model_provider": id, "model_providers." + id: def}
}

func startThread(t *testing.T, r *rig, cfg map[string]any) *appserver.Thread {
	t.Helper()
	th, err := r.c.StartThread(testCtx(t, 30*time.Second), appserver.ThreadStartParams{
		Model: codextest.StubModel, Cwd: r.srv.Workdir, Config: cfg}, appserver.ThreadOptions{})
	if err != nil {
		t.Fatalf("thread/start: %v", err)
	}
	return th
}

// resumeThread sends thread/resume for id after dropping this connection's
// subscription (Codex applies a resume's config only to a thread nobody is
// subscribed to, as the adapter does). p.ThreadID is set from id.
func resumeThread(t *testing.T, r *rig, id string, p appserver.ThreadResumeParams) (*appserver.Thread, error) {
	t.Helper()
	ctx := testCtx(t, 30*time.Second)
	if err := r.c.Call(ctx, "thread/unsubscribe", map[string]any{"threadId": id}, nil); err != nil {
		t.Fatalf("thread/unsubscribe %s: %v", id, err)
	}
	p.ThreadID, p.ExcludeTurns = id, true
	return r.c.ResumeThread(ctx, p, appserver.ThreadOptions{})
}

// modelTurn runs a turn with the text marker on th and returns the one model
// request it made.
func modelTurn(t *testing.T, r *rig, th *appserver.Thread, marker string) *stubmodel.Request {
	t.Helper()
	ctx := testCtx(t, 60*time.Second)
	turn, err := th.StartTurn(ctx, appserver.TurnStartParams{Input: []appserver.InputItem{appserver.TextInput(marker)}})
	if err != nil {
		t.Fatalf("turn/start %s: %v", marker, err)
	}
	res, err := turn.Wait(ctx)
	if err != nil || res.Status != appserver.TurnCompleted {
		t.Fatalf("turn %s: %v %+v", marker, err, res)
	}
	reqs := r.stub.RequestsContaining(marker)
	if len(reqs) != 1 {
		t.Fatalf("turn %s made %d model requests, want 1", marker, len(reqs))
	}
	return reqs[0]
}

// baseConfig is a resume config that names no provider (as the adapter's
// resumeBaseConfig).
func baseConfig() map[string]any { return map[string]any{"check_for_update_on_startup": false} }

// rpcRefusal is the JSON-RPC error of a refused request.
func rpcRefusal(t *testing.T, what string, err error) *appserver.RPCError {
	t.Helper()
	var rpcErr *appserver.RPCError
	if !errors.As(err, &rpcErr) {
		t.Fatalf("%s: %v, want a JSON-RPC error", what, err)
	}
	return rpcErr
}

// errorType is the `type` and `modelProvider` of a JSON-RPC error's data
// (empty without data).
func errorType(e *appserver.RPCError) (typ, provider string) {
	var d struct {
		Type          string `json:"type"`
		ModelProvider string `json:"modelProvider"`
	}
	_ = json.Unmarshal(e.Data, &d)
	return d.Type, d.ModelProvider
}

// turnMetadata is the x-codex-turn-metadata header of a model request.
func turnMetadata(t *testing.T, req *stubmodel.Request) map[string]any {
	t.Helper()
	var md map[string]any
	if err := json.Unmarshal([]byte(req.Header.Get("X-Codex-Turn-Metadata")), &md); err != nil {
		t.Fatalf("x-codex-turn-metadata %q: %v", req.Header.Get("X-Codex-Turn-Metadata"), err)
	}
	return md
}

// The provider and its credential are fixed per thread id at thread/start,
// and every resume may re-send its definition with a new credential; a
// change of provider id is refused; a thread whose provider left the config
// is refused when loaded and readable when cold. Findings 1-7 of the
// design's "When the provider is read, and the refusals on resume", one
// server (restarted once for the cold threads).
func TestModelProviderPerThread(t *testing.T) {
	t.Parallel()
	r, opts := gatewayRig(t)
	probe := "X-Harness-Probe"
	// Every credential and header value sent in this test, grepped for
	// under the server's directories at the end.
	var secrets []string
	secret := func(s string) string { secrets = append(secrets, s); return s }
	cred1, hdr1, cred2, hdr2 := secret("CRED-1-7c41"), secret("HDR-1-9e02"), secret("CRED-2-a5d3"), secret("HDR-2-44b8")
	tokenOnly, oldKey, cred3 := secret("TOKEN-ONLY-1f6e"), secret("OLD-KEY-b390"), secret("CRED-3-0d7a")

	// Finding 1, "A resume re-reads the provider", and "Which setting can
	// carry a per-thread credential": experimental_bearer_token and
	// http_headers in the thread's config are sent.
	gw := startThread(t, r, onProvider(gatewayID, providerDef(r, cred1, map[string]string{probe: hdr1})))
	if gw.Info.ModelProvider != gatewayID {
		t.Errorf("thread/start answered modelProvider %q, want %q", gw.Info.ModelProvider, gatewayID)
	}
	first := modelTurn(t, r, gw, "GW-ONE")
	if got := first.Header.Get("Authorization"); got != "Bearer "+cred1 || first.Header.Get(probe) != hdr1 {
		t.Errorf("the thread's first request: Authorization %q, %s %q; want its config's token and header", got, probe, first.Header.Get(probe))
	}
	resumed, err := resumeThread(t, r, gw.ID, appserver.ThreadResumeParams{
		Config: onProvider(gatewayID, providerDef(r, cred2, map[string]string{probe: hdr2}))})
	if err != nil {
		t.Fatalf("resume with a new credential: %v", err)
	}
	if resumed.ID != gw.ID || resumed.Info.ModelProvider != gatewayID {
		t.Errorf("resume answered thread %s on %q, want %s on %q", resumed.ID, resumed.Info.ModelProvider, gw.ID, gatewayID)
	}
	second := modelTurn(t, r, resumed, "GW-TWO")
	if got := second.Header.Get("Authorization"); got != "Bearer "+cred2 || second.Header.Get(probe) != hdr2 {
		t.Errorf("after a resume with a new credential: Authorization %q, %s %q; want the new ones", got, probe, second.Header.Get(probe))
	}
	if !slices.Contains(second.UserTexts(), "GW-ONE") {
		t.Errorf("the resumed thread lost its first turn: %q", second.UserTexts())
	}

	// Finding 2, "A resume without config keeps the loaded thread's
	// credential" (not the server's credential-less definition).
	bare, err := resumeThread(t, r, gw.ID, appserver.ThreadResumeParams{})
	if err != nil {
		t.Fatalf("resume without config: %v", err)
	}
	if got := modelTurn(t, r, bare, "GW-THREE").Header.Get("Authorization"); got != "Bearer "+cred2 {
		t.Errorf("after a resume without config: Authorization %q, want the loaded thread's %q", got, "Bearer "+cred2)
	}

	// Finding 3, "A provider without env_key takes the token alone".
	tok := startThread(t, r, map[string]any{"model_providers." + gatewayID + ".experimental_bearer_token": tokenOnly})
	if got := modelTurn(t, r, tok, "TOKEN-ONLY").Header.Get("Authorization"); got != "Bearer "+tokenOnly {
		t.Errorf("a thread whose config sets only the token: Authorization %q, want that token", got)
	}

	// Finding 4, "A thread on a credential-less server provider sends no
	// Authorization".
	none := startThread(t, r, nil)
	if got, ok := modelTurn(t, r, none, "NO-CRED").Header["Authorization"]; ok {
		t.Errorf("a thread on the server's credential-less provider sent Authorization %q", got)
	}

	// Finding 5, "Another provider on resume is refused" (loaded thread):
	// a thread of the server's older provider cannot move to the gateway,
	// through the config or the modelProvider field.
	old := startThread(t, r, map[string]any{"model_provider": "stub"})
	if got := modelTurn(t, r, old, "OLD-STUB").Header.Get("Authorization"); got != "Bearer "+codextest.StubAPIKey {
		t.Fatalf("the stub provider's thread: Authorization %q", got)
	}
	assertProviderChangeRefused := func(what string, p appserver.ThreadResumeParams) {
		t.Helper()
		_, err := resumeThread(t, r, old.ID, p)
		e := rpcRefusal(t, what, err)
		msg := strings.ToLower(e.Message)
		if e.Code != -32600 || !strings.Contains(msg, "model provider") || !strings.Contains(msg, "`stub`") || !strings.Contains(msg, "`"+gatewayID+"`") {
			t.Errorf("%s: error %d %q, want -32600 naming the change from `stub` to `%s`", what, e.Code, e.Message, gatewayID)
		}
	}
	assertProviderChangeRefused("loaded thread, config.model_provider", appserver.ThreadResumeParams{
		Config: onProvider(gatewayID, providerDef(r, cred1, nil))})
	assertProviderChangeRefused("loaded thread, modelProvider field", appserver.ThreadResumeParams{
		ModelProvider: gatewayID, Config: baseConfig()})

	// Finding 6, "A loaded thread whose provider left the config is
	// refused": the thread's provider was defined only in its own config.
	direct := startThread(t, r, onProvider("old-direct", providerDef(r, oldKey, nil)))
	modelTurn(t, r, direct, "OLD-DIRECT")
	_, err = resumeThread(t, r, direct.ID, appserver.ThreadResumeParams{Config: baseConfig()})
	e := rpcRefusal(t, "loaded thread whose provider left the config", err)
	if typ, prov := errorType(e); e.Code != -32600 || typ != "modelProviderNotConfigured" || prov != "old-direct" {
		t.Errorf("loaded thread whose provider left the config: error %d %q data %s, want -32600 modelProviderNotConfigured naming old-direct",
			e.Code, e.Message, e.Data)
	}
	_, err = resumeThread(t, r, direct.ID, appserver.ThreadResumeParams{Config: onProvider(gatewayID, providerDef(r, cred1, nil))})
	e = rpcRefusal(t, "loaded thread whose provider left the config, resumed onto the gateway", err)
	if typ, prov := errorType(e); e.Code != -32600 || typ != "modelProviderNotConfigured" || prov != "old-direct" {
		t.Errorf("loaded thread whose provider left the config, resumed onto the gateway: error %d %q data %s, "+
			"want -32600 modelProviderNotConfigured naming old-direct", e.Code, e.Message, e.Data)
	}
	// "Moving existing sessions": the re-seed reads such a thread by giving
	// its old id a placeholder definition without a credential.
	placeholder := map[string]any{"check_for_update_on_startup": false, "model_providers.old-direct": providerDef(r, "", nil)}
	if th, err := resumeThread(t, r, direct.ID, appserver.ThreadResumeParams{Config: placeholder}); err != nil || th.Info.ModelProvider != "old-direct" {
		t.Errorf("loaded thread with a placeholder definition of its provider: %v", err)
	} else if items := threadItems(t, r, direct.ID); !strings.Contains(items, "OLD-DIRECT") {
		t.Errorf("thread/items/list of the placeholder-resumed thread lacks its turn: %s", items)
	}

	// Finding 7's note: thread/list without modelProviders lists only the
	// threads of the server's default provider; an empty modelProviders
	// lists every provider's (what a cleanup that must find a session's
	// older threads needs).
	all := []string{gw.ID, tok.ID, none.ID, old.ID, direct.ID}
	if got, want := threadsOfProviders(t, r, nil), []string{gw.ID, tok.ID, none.ID}; !sameIDs(got, want) {
		t.Errorf("thread/list without modelProviders: %q, want the default provider's threads %q", got, want)
	}
	if got := threadsOfProviders(t, r, []string{}); !sameIDs(got, all) {
		t.Errorf("thread/list with empty modelProviders: %q, want every thread %q", got, all)
	}

	// "The wire Codex speaks to a custom provider": one POST
	// <base_url>/responses per turn, streamed, and nothing else: no model
	// discovery, compaction, images or requests outside a turn.
	if got := r.stub.Unserved(); len(got) != 0 {
		t.Errorf("Codex called routes other than the Responses API: %q", got)
	}
	if n := len(r.stub.ImageRequests()); n != 0 {
		t.Errorf("%d image requests", n)
	}
	if n := len(r.stub.Requests()); n != 7 {
		t.Errorf("%d model requests for 7 turns", n)
	}
	assertWire(t, first, gw.ID, "new", probe)

	// After a restart every thread is cold.
	if err := r.srv.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	r.srv = codextest.Start(t, opts)
	r.c = r.connect(t)

	// Finding 5 for a cold thread.
	assertProviderChangeRefused("cold thread, config.model_provider", appserver.ThreadResumeParams{
		Config: onProvider(gatewayID, providerDef(r, cred1, nil))})

	// Finding 7, "A cold thread whose provider left the config loads for
	// reading", holds for a provider still defined but no longer the
	// default: the resume answers with the old provider id, and the items
	// are listed.
	cold, err := resumeThread(t, r, old.ID, appserver.ThreadResumeParams{Config: baseConfig()})
	if err != nil {
		t.Fatalf("cold thread of a provider that is no longer the default: %v", err)
	}
	if cold.Info.ModelProvider != "stub" {
		t.Errorf("cold thread resumed without provider config answered modelProvider %q, want stub", cold.Info.ModelProvider)
	}
	if items := threadItems(t, r, old.ID); !strings.Contains(items, "OLD-STUB") {
		t.Errorf("thread/items/list of the cold thread lacks its turn: %s", items)
	}
	// A cold thread whose provider is defined nowhere is refused as a
	// loaded one is (finding 6), and loads with a placeholder definition.
	_, err = resumeThread(t, r, direct.ID, appserver.ThreadResumeParams{Config: baseConfig()})
	e = rpcRefusal(t, "cold thread whose provider is defined nowhere", err)
	if typ, prov := errorType(e); e.Code != -32600 || typ != "modelProviderNotConfigured" || prov != "old-direct" {
		t.Errorf("cold thread whose provider is defined nowhere: error %d %q data %s, want -32600 modelProviderNotConfigured naming old-direct",
			e.Code, e.Message, e.Data)
	}
	if th, err := resumeThread(t, r, direct.ID, appserver.ThreadResumeParams{Config: placeholder}); err != nil || th.Info.ModelProvider != "old-direct" {
		t.Errorf("cold thread with a placeholder definition of its provider: %v", err)
	} else if items := threadItems(t, r, direct.ID); !strings.Contains(items, "OLD-DIRECT") {
		t.Errorf("thread/items/list of the placeholder-resumed cold thread lacks its turn: %s", items)
	}

	// Finding 1 across a restart, as every turn on a new pod: the thread
	// config is gone, and the resume's credential is used.
	again, err := resumeThread(t, r, gw.ID, appserver.ThreadResumeParams{Config: onProvider(gatewayID, providerDef(r, cred3, nil))})
	if err != nil {
		t.Fatalf("cold resume with a new credential: %v", err)
	}
	afterRestart := modelTurn(t, r, again, "GW-COLD")
	if got := afterRestart.Header.Get("Authorization"); got != "Bearer "+cred3 {
		t.Errorf("after a restart and a resume with a new credential: Authorization %q", got)
	}
	if got := afterRestart.Header.Get(probe); got != "" {
		t.Errorf("after a restart the thread still sends the old %s %q", probe, got)
	}
	assertWire(t, afterRestart, gw.ID, "cold_resume", "")

	// "Which setting can carry a per-thread credential": neither tokens nor
	// headers are written under CODEX_HOME (rollouts, state and log
	// databases), while the turns' own text is (the control).
	if found := filesContaining(t, r.srv.Dir, "GW-ONE"); len(found) == 0 {
		t.Fatalf("the control: the first turn's text is in no file under %s", r.srv.Dir)
	}
	for _, s := range secrets {
		if found := filesContaining(t, r.srv.Dir, s); len(found) > 0 {
			t.Errorf("%s was written to %v", s, found)
		}
	}
}

// threadsOfProviders lists the unarchived threads of the server's work directory
// (thread/list), with modelProviders when it is not nil.
func threadsOfProviders(t *testing.T, r *rig, providers []string) []string {
	t.Helper()
	params := map[string]any{"cwd": r.srv.Workdir, "archived": false, "limit": 100}
	if providers != nil {
		params["modelProviders"] = providers
	}
	var res struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := r.c.Call(testCtx(t, 30*time.Second), "thread/list", params, &res); err != nil {
		t.Fatalf("thread/list: %v", err)
	}
	var ids []string
	for _, d := range res.Data {
		ids = append(ids, d.ID)
	}
	return ids
}

func sameIDs(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// threadItems is the raw answer of thread/items/list for id.
func threadItems(t *testing.T, r *rig, id string) string {
	t.Helper()
	var res json.RawMessage
	if err := r.c.Call(testCtx(t, 30*time.Second), "thread/items/list", map[string]any{"threadId": id}, &res); err != nil {
		t.Fatalf("thread/items/list %s: %v", id, err)
	}
	return string(res)
}

// assertWire checks one model request against "The wire Codex speaks to a
// custom provider": its headers (with extra, the provider's http_headers,
// when set) and body keys, a streamed request, and the turn metadata naming
// thread and history initialization.
func assertWire(t *testing.T, req *stubmodel.Request, threadID, history, extra string) {
	t.Helper()
	want := []string{"Accept", "Authorization", "Content-Type", "Originator", "Session-Id", "Thread-Id", "User-Agent",
		"X-Client-Request-Id", "X-Codex-Beta-Features", "X-Codex-Turn-Metadata", "X-Codex-Window-Id"}
	if extra != "" {
		want = append(want, extra)
	}
	got := slices.Collect(maps.Keys(req.Header))
	got = slices.DeleteFunc(got, func(k string) bool { return k == "Content-Length" })
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("request headers %q, want %q", got, want)
	}
	for k, v := range map[string]string{
		"Accept": "text/event-stream", "Content-Type": "application/json", "Originator": appserver.DefaultClientName,
		"Session-Id": threadID, "Thread-Id": threadID, "X-Client-Request-Id": threadID,
		"X-Codex-Beta-Features": "remote_compaction_v2",
	} {
		if req.Header.Get(k) != v {
			t.Errorf("header %s = %q, want %q", k, req.Header.Get(k), v)
		}
	}
	if ua := req.Header.Get("User-Agent"); !strings.HasPrefix(ua, appserver.DefaultClientName+"/") {
		t.Errorf("User-Agent %q does not name the client", ua)
	}
	md := turnMetadata(t, req)
	if md["thread_id"] != threadID || md["session_id"] != threadID || md["model"] != codextest.StubModel ||
		md["history_initialization"] != history || md["turn_id"] == nil || md["turn_id"] == "" {
		t.Errorf("x-codex-turn-metadata %v, want thread %s, model %s, history_initialization %q and a turn id",
			md, threadID, codextest.StubModel, history)
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(req.Body, &body); err != nil {
		t.Fatal(err)
	}
	keys := slices.Sorted(maps.Keys(body))
	wantKeys := []string{"client_metadata", "include", "input", "model", "parallel_tool_calls", "prompt_cache_key",
		"reasoning", "store", "stream", "tool_choice", "tools"}
	if !slices.Equal(keys, wantKeys) {
		t.Errorf("body keys %q, want %q", keys, wantKeys)
	}
	if string(body["stream"]) != "true" {
		t.Errorf("body stream = %s, want true", body["stream"])
	}
}
