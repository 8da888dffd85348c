package codex

import (
	"slices"
	"testing"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// A thread started on a provider of the server's own config, which the
// server no longer defines once the gateway is on (a user's provider in a
// HomeFile config.toml, dropped with the credentials when spec.modelGateway
// was set), is still read for the re-seed: the session's binding names no
// provider, so the adapter asks the thread (thread/read) and defines that
// id without a credential while it reads.
func TestModelGatewayMoveReseedsFromAProviderTheServerDropped(t *testing.T) {
	t.Parallel()
	stub := stubmodel.Start(t)
	codextest.Bin(t)
	userProvider := []string{
		"-c", `model_provider="user-endpoint"`,
		"-c", `model_providers.user-endpoint={name="A user's endpoint",base_url="` + stub.BaseURL() + `",wire_api="responses",env_key="HARNESS_STUB_API_KEY",request_max_retries=0,stream_max_retries=0}`,
	}
	before := &rig{stub: stub, srv: codextest.Start(t, codextest.Options{ProviderURL: stub.BaseURL(), ExtraArgs: userProvider})}
	before.c = before.connect(t)
	plain := run(t, before, before.input("BEFORE-GATEWAY-USER-PROVIDER"), &recorder{})
	if plain.Terminal.Kind != wire.TerminalOK {
		t.Fatalf("the turn on the user's provider: %+v", plain.Terminal)
	}
	before.srv.Kill()

	on := gatewayServerRig(t, stub, before.srv.Dir)
	in := gatewayInput(on, "ON-GATEWAY-FROM-USER-PROVIDER", "hmg1.on")
	in.ReseedFrom = plain.ThreadID // the binding names no provider: the server's own of its time
	moved := run(t, on, in, &recorder{})
	if moved.Terminal.Kind != wire.TerminalOK || moved.ThreadID == plain.ThreadID {
		t.Fatalf("turning the gateway on: %+v on thread %s (was %s)", moved.Terminal, moved.ThreadID, plain.ThreadID)
	}
	if !slices.Contains(stub.RequestsContaining("ON-GATEWAY-FROM-USER-PROVIDER")[0].UserTexts(), "BEFORE-GATEWAY-USER-PROVIDER") {
		t.Errorf("the new thread lacks the old thread's history")
	}
}
