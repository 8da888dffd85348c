package codex

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/harness/codexconfig"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// These tests pin what the adapter does on a server whose model provider
// is the model gateway's (codex/modelgateway.go): the stub model stands in
// for the gateway and records the bearer token each request carried.

// gatewayRig is a server as the manager runs it with spec.modelGateway: the
// gateway's provider, with no credential, is its default.
func gatewayServerRig(t *testing.T, stub *stubmodel.Server, dir string) *rig {
	t.Helper()
	codextest.Bin(t)
	r := &rig{stub: stub, srv: codextest.Start(t, codextest.Options{
		ProviderURL: stub.BaseURL(), Dir: dir, ExtraArgs: codexconfig.ModelGatewayArgs(stub.BaseURL()),
	})}
	r.c = r.connect(t)
	return r
}

func gatewayInput(r *rig, prompt, credential string) adapter.TurnInput {
	in := r.input(prompt)
	in.ModelCredential = credential
	return in
}

// Each turn's credential is its thread's bearer token, and the next turn's
// new credential resumes the same thread (Codex re-reads the provider on
// resume). The credential is written nowhere under the server's home and
// is not in the turn's events.
func TestModelGatewayCredentialRidesEachTurn(t *testing.T) {
	t.Parallel()
	r := gatewayServerRig(t, stubmodel.Start(t), "")
	rec := &recorder{}
	first := run(t, r, gatewayInput(r, "GW-ONE", "hmg1.first-turn"), rec)
	if first.Terminal.Kind != wire.TerminalOK {
		t.Fatalf("first turn: %+v", first.Terminal)
	}
	if got := authorizationOf(t, r, "GW-ONE"); got != "Bearer hmg1.first-turn" {
		t.Errorf("the turn's model request authenticated with %q, want its credential", got)
	}
	next := gatewayInput(r, "GW-TWO", "hmg1.second-turn")
	next.ThreadID = first.ThreadID
	second := run(t, r, next, rec)
	if second.ThreadID != first.ThreadID {
		t.Errorf("a new credential moved the session to thread %s (was %s)", second.ThreadID, first.ThreadID)
	}
	if got := authorizationOf(t, r, "GW-TWO"); got != "Bearer hmg1.second-turn" {
		t.Errorf("the resumed thread authenticated with %q, want the second turn's credential", got)
	}
	if !slices.Contains(r.stub.RequestsContaining("GW-TWO")[0].UserTexts(), "GW-ONE") {
		t.Errorf("the resumed thread lost the first turn")
	}
	for _, cred := range []string{"hmg1.first-turn", "hmg1.second-turn"} {
		if found := filesContaining(t, r.srv.Dir, cred); len(found) > 0 {
			t.Errorf("credential %s was written to %v", cred, found)
		}
		if b := mustJSON(t, rec.all()); strings.Contains(string(b), cred) {
			t.Errorf("the turn's events carry credential %s", cred)
		}
	}
}

// A server whose pods have not rolled onto the gateway cannot take a
// gateway turn: it is refused, retryably, before the model sees anything.
func TestModelGatewayRefusesAServerNotOnIt(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	_, err := Start(testCtx(t, 30e9), r.c, gatewayInput(r, "GW-NOT-ROLLED", "hmg1.cred"), (&recorder{}).hooks())
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeHarnessUnavailable || !we.Retryable || !strings.Contains(we.Message, "not rolled onto the gateway") {
		t.Fatalf("a gateway turn on a server without the gateway's provider: %v, want a retryable HarnessUnavailable", err)
	}
	if reqs := r.stub.RequestsContaining("GW-NOT-ROLLED"); len(reqs) > 0 {
		t.Errorf("the model saw the refused turn")
	}
}

// Turning the gateway on or off changes a thread's provider, which Codex
// refuses on resume: the session continues on a new thread seeded with
// the old one's history — also when the server no longer defines the old
// thread's provider (the gateway's, after it was turned off), which the
// adapter then defines without a credential while it reads.
func TestModelGatewayMoveReseeds(t *testing.T) {
	t.Parallel()
	stub := stubmodel.Start(t)
	before := newRigOn(t, stub, "")
	plain := run(t, before, before.input("BEFORE-GATEWAY"), &recorder{})
	before.srv.Kill()

	on := gatewayServerRig(t, stub, before.srv.Dir)
	in := gatewayInput(on, "ON-GATEWAY", "hmg1.on")
	in.ReseedFrom = plain.ThreadID
	rec := &recorder{}
	moved := run(t, on, in, rec)
	if moved.Terminal.Kind != wire.TerminalOK || moved.ThreadID == plain.ThreadID {
		t.Fatalf("turning the gateway on: %+v on thread %s (was %s)", moved.Terminal, moved.ThreadID, plain.ThreadID)
	}
	if got := authorizationOf(t, on, "ON-GATEWAY"); got != "Bearer hmg1.on" {
		t.Errorf("the new thread authenticated with %q, want the turn's credential", got)
	}
	if !slices.Contains(stub.RequestsContaining("ON-GATEWAY")[0].UserTexts(), "BEFORE-GATEWAY") {
		t.Errorf("the new thread lacks the old thread's history")
	}
	events := rec.agent(wire.StreamLifecycle)
	if i := slices.IndexFunc(events, func(a wire.AgentEvent) bool { return a.Phase == wire.PhaseReseeded }); i < 0 ||
		!strings.Contains(events[i].Text, "now go through the model gateway") {
		t.Errorf("no reseeded event naming the gateway: %+v", events)
	}
	on.srv.Kill()

	off := newRigOn(t, stub, before.srv.Dir)
	back := off.input("OFF-GATEWAY")
	back.ReseedFrom, back.ReseedFromProvider = moved.ThreadID, codexconfig.ModelGatewayProvider
	again := run(t, off, back, &recorder{})
	if again.Terminal.Kind != wire.TerminalOK || again.ThreadID == moved.ThreadID {
		t.Fatalf("turning the gateway off: %+v on thread %s (was %s)", again.Terminal, again.ThreadID, moved.ThreadID)
	}
	if got := authorizationOf(t, off, "OFF-GATEWAY"); got != "Bearer "+codextest.StubAPIKey {
		t.Errorf("after the gateway the thread authenticated with %q, want the server's own key", got)
	}
	// Only the gateway thread's own turns: thread/items/list does not list
	// what a re-seed injected (codex/reseed.go), so the first thread's turn
	// is not carried twice over.
	if texts := stub.RequestsContaining("OFF-GATEWAY")[0].UserTexts(); !slices.Contains(texts, "ON-GATEWAY") {
		t.Errorf("the thread after the gateway lacks the history: %q", texts)
	}
}

// newRigOn is newRig on a given stub and home (dir "" for a new one).
func newRigOn(t *testing.T, stub *stubmodel.Server, dir string) *rig {
	t.Helper()
	codextest.Bin(t)
	r := &rig{stub: stub, srv: codextest.Start(t, codextest.Options{ProviderURL: stub.BaseURL(), Dir: dir})}
	r.c = r.connect(t)
	return r
}
