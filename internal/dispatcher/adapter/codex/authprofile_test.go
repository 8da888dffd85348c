package codex

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// These tests pin what Codex 0.169.0 does with a thread's own model
// provider (codex/authprofile.go; docs/codex-app-server.md, "Auth
// profiles" and "Model authentication").

const tenantKey = "tenant-key-0f3a9c"

func profileInput(r *rig, prompt, key string) adapter.TurnInput {
	in := r.input(prompt)
	in.AuthProfile = &adapter.AuthProfile{ID: "openai:work", APIKey: key}
	return in
}

// authorizationOf is the Authorization header of the model request that
// carried marker.
func authorizationOf(t *testing.T, r *rig, marker string) string {
	t.Helper()
	reqs := r.stub.RequestsContaining(marker)
	if len(reqs) == 0 {
		t.Fatalf("no model request carried %q", marker)
	}
	return reqs[len(reqs)-1].Header.Get("Authorization")
}

// filesContaining lists the files under dir whose content contains s.
func filesContaining(t *testing.T, dir, s string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), s) {
			found = append(found, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// A turn's auth profile authenticates its own thread's model requests and
// no other thread's; a later turn resumes the thread with a rotated key;
// the key is written nowhere under the server's home, not returned by
// thread/read and not in the turn's events.
func TestAuthProfileAuthenticatesOnlyItsThread(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	rec := &recorder{}
	first := run(t, r, profileInput(r, "PROFILE-ONE", tenantKey), rec)
	if first.Terminal.Kind != wire.TerminalOK {
		t.Fatalf("profile turn: %+v", first.Terminal)
	}
	if got := authorizationOf(t, r, "PROFILE-ONE"); got != "Bearer "+tenantKey {
		t.Errorf("the profile turn's model request authenticated with %q, want the profile's key", got)
	}

	other := r.input("SERVER-CREDENTIAL")
	other.Cwd = filepath.Join(r.srv.Home, "sessions", "work", "session-2")
	run(t, r, other, &recorder{})
	if got := authorizationOf(t, r, "SERVER-CREDENTIAL"); got != "Bearer "+codextest.StubAPIKey {
		t.Errorf("another session on the same server authenticated with %q, want the server's own key", got)
	}

	rotated := profileInput(r, "PROFILE-TWO", tenantKey+"-rotated")
	rotated.ThreadID = first.ThreadID
	second := run(t, r, rotated, rec)
	if second.ThreadID != first.ThreadID {
		t.Errorf("the rotated key moved the session to thread %s (was %s)", second.ThreadID, first.ThreadID)
	}
	if got := authorizationOf(t, r, "PROFILE-TWO"); got != "Bearer "+tenantKey+"-rotated" {
		t.Errorf("the resumed thread authenticated with %q, want the rotated key", got)
	}
	if req := r.stub.RequestsContaining("PROFILE-TWO")[0]; !slices.Contains(req.UserTexts(), "PROFILE-ONE") {
		t.Errorf("the resumed thread lost the first turn: %q", req.UserTexts())
	}

	if found := filesContaining(t, r.srv.Dir, tenantKey); len(found) > 0 {
		t.Errorf("the profile's key was written to %v", found)
	}
	var read json.RawMessage
	if err := r.c.Call(testCtx(t, 30e9), "thread/read", map[string]any{"threadId": first.ThreadID, "includeTurns": true}, &read); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(read), tenantKey) {
		t.Errorf("thread/read returns the key")
	}
	if b := mustJSON(t, rec.all()); strings.Contains(string(b), tenantKey) {
		t.Errorf("the turn's events carry the key")
	}
	if s := fmt.Sprintf("%v %+v %#v", *rotated.AuthProfile, rotated.AuthProfile, rotated.AuthProfile); strings.Contains(s, tenantKey) {
		t.Errorf("formatting the profile shows the key: %s", s)
	}
}

// Adding or dropping a profile continues the conversation on a new thread
// (the engine sets ReseedFrom): the new thread authenticates as the turn
// says and carries the old thread's history, also when the old thread is a
// profile thread Codex can load only with its provider.
func TestAuthProfileSwitchReseeds(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	plain := run(t, r, r.input("PLAIN-FIRST"), &recorder{})

	add := profileInput(r, "ADD-PROFILE", tenantKey)
	add.ReseedFrom = plain.ThreadID
	rec := &recorder{}
	added := run(t, r, add, rec)
	if added.ThreadID == plain.ThreadID || authorizationOf(t, r, "ADD-PROFILE") != "Bearer "+tenantKey {
		t.Fatalf("adding a profile: thread %s (was %s), Authorization %q", added.ThreadID, plain.ThreadID, authorizationOf(t, r, "ADD-PROFILE"))
	}
	if !slices.Contains(r.stub.RequestsContaining("ADD-PROFILE")[0].UserTexts(), "PLAIN-FIRST") {
		t.Errorf("the profile thread lacks the plain thread's history")
	}
	events := rec.agent(wire.StreamLifecycle)
	if i := slices.IndexFunc(events, func(a wire.AgentEvent) bool { return a.Phase == wire.PhaseReseeded }); i < 0 ||
		!strings.Contains(events[i].Text, "adds an auth profile") {
		t.Errorf("no reseeded event naming the auth profile: %+v", events)
	}

	drop := r.input("DROP-PROFILE")
	drop.ReseedFrom, drop.ReseedFromProvider = added.ThreadID, ProfileProvider
	dropped := run(t, r, drop, &recorder{})
	if dropped.ThreadID == added.ThreadID || authorizationOf(t, r, "DROP-PROFILE") != "Bearer "+codextest.StubAPIKey {
		t.Fatalf("dropping the profile: thread %s (was %s), Authorization %q", dropped.ThreadID, added.ThreadID, authorizationOf(t, r, "DROP-PROFILE"))
	}
	// PLAIN-FIRST was injected into the profile thread, and Codex does not
	// list injected items (TestInjectedItemsAreNotListed): a second re-seed
	// carries the turns the profile thread ran itself.
	if got := r.stub.RequestsContaining("DROP-PROFILE")[0].UserTexts(); !slices.Contains(got, "ADD-PROFILE") {
		t.Errorf("the plain thread lacks the profile thread's history: %q", got)
	}
}

// Codex refuses to redefine a built-in provider, so a server whose provider
// is built in (here `ollama`, a loopback one) cannot carry a profile's key:
// the turn is AuthProfileUnsupported before any thread starts.
func TestAuthProfileOnABuiltInProviderIsRefused(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{ExtraArgs: []string{"-c", `model_provider="ollama"`}})
	_, err := Start(testCtx(t, 30e9), r.c, profileInput(r, "BUILTIN", tenantKey), adapter.Hooks{})
	var werr *wire.Error
	if !errors.As(err, &werr) || werr.Code != wire.CodeAuthProfileUnsupported || !strings.Contains(werr.Message, `"ollama" is built into Codex`) {
		t.Fatalf("profile on a built-in provider: %v", err)
	}
	if threads, _ := codextest.ThreadsIn(testCtx(t, 30e9), r.c, r.input("").Cwd, false); len(threads) != 0 {
		t.Errorf("threads started: %v", threads)
	}
}

// A provider that authenticates with the server's login (the built-in
// openai one; here the stub with requires_openai_auth) uses auth.json and
// ignores OPENAI_API_KEY in the environment: a server without auth.json is
// logged out, and its turns without a profile are AuthFailed before any
// model request, while a profile still authenticates the session.
func TestLoginStateIsCheckedBeforeTheModelIsAsked(t *testing.T) {
	t.Parallel()
	loggedOut := loginRig(t, codextest.Options{Env: []string{"OPENAI_API_KEY=sk-env-ignored"}})
	_, err := Start(testCtx(t, 30e9), loggedOut.c, loggedOut.input("NO-LOGIN"), adapter.Hooks{})
	var werr *wire.Error
	if !errors.As(err, &werr) || werr.Code != wire.CodeAuthFailed || !strings.Contains(werr.Message, "not logged in") {
		t.Fatalf("turn on a logged-out server: %v", err)
	}
	if n := len(loggedOut.stub.Requests()); n != 0 {
		t.Errorf("%d model requests from a logged-out server", n)
	}
	run(t, loggedOut, profileInput(loggedOut, "LOGGED-OUT-PROFILE", tenantKey), &recorder{})
	if got := authorizationOf(t, loggedOut, "LOGGED-OUT-PROFILE"); got != "Bearer "+tenantKey {
		t.Errorf("a profile on a logged-out server authenticated with %q", got)
	}

	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "codex-home"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "codex-home", "auth.json"), []byte(`{"OPENAI_API_KEY":"sk-from-auth-json"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	loggedIn := loginRig(t, codextest.Options{Dir: dir})
	run(t, loggedIn, loggedIn.input("LOGGED-IN"), &recorder{})
	if got := authorizationOf(t, loggedIn, "LOGGED-IN"); got != "Bearer sk-from-auth-json" {
		t.Errorf("a logged-in server authenticated with %q, want its auth.json key", got)
	}
}

// loginRig is a rig whose server's provider (`login`, the stub) has no key
// of its own and authenticates with the server's login, as the built-in
// openai provider does.
func loginRig(t *testing.T, opts codextest.Options) *rig {
	t.Helper()
	stub := stubmodel.Start(t)
	opts.ProviderURL = stub.BaseURL()
	opts.ExtraArgs = []string{"-c", `model_provider="login"`, "-c", fmt.Sprintf(`model_providers.login={name="login",base_url=%q,`+
		`wire_api="responses",requires_openai_auth=true,request_max_retries=0,stream_max_retries=0}`, stub.BaseURL())}
	r := &rig{stub: stub, srv: codextest.Start(t, opts)}
	r.c = r.connect(t)
	return r
}
