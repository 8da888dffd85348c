package codex

import (
	"context"
	"fmt"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/harness/codexconfig"
)

// A harness with spec.modelGateway runs app-servers whose default model
// provider is the gateway's (codexconfig.ModelGatewayProvider), defined by
// the manager with no credential. Each thread the dispatcher starts or
// resumes carries the turn's model-gateway credential as that provider's
// bearer token, in the thread's own config. What Codex 0.169.0 does with it
// (TestModelProviderPerThread, docs/design/model-gateway.md section 1):
//   - a thread config that sets only the server provider's
//     experimental_bearer_token sends that token, and a resume with a new
//     one sends the new one: every turn resumes the same thread with its
//     own credential;
//   - the token is written nowhere under the server's home;
//   - a thread started on another provider cannot be resumed on this one
//     (nor the reverse): the engine re-seeds such a session
//     (NativeBinding.ModelProvider).

// ProfileProvider is the model provider id of threads that authenticate
// with an auth profile on a harness without the model gateway.
const ProfileProvider = profileProviderID

// TurnProvider is the model provider the threads of a turn like in use, when
// the dispatcher chooses it: the gateway's with a credential, the profile's
// copy with an auth profile; empty for the server's own provider.
func TurnProvider(in adapter.TurnInput) string {
	switch {
	case in.ModelCredential != "":
		return codexconfig.ModelGatewayProvider
	case in.AuthProfile != nil:
		return profileProviderID
	}
	return ""
}

// gatewayConfig is the thread config of a turn through the model gateway:
// the gateway's provider with the turn's credential. A server whose default
// provider is not the gateway's (its pods have not rolled since
// spec.modelGateway was set) cannot take it: the turn is refused before a
// thread starts, retryably, and the model sees nothing.
func gatewayConfig(ctx context.Context, c *appserver.Client, credential string) (map[string]any, error) {
	id, _, err := serverProvider(ctx, c)
	if err != nil {
		return nil, err
	}
	if id != codexconfig.ModelGatewayProvider {
		return nil, wire.Errorf(wire.CodeHarnessUnavailable, wire.ScopeHarness,
			"the harness sends model requests through the model gateway (spec.modelGateway), but this app-server's model "+
				"provider is %q, not %q: its pods have not rolled onto the gateway yet; retry once they have", id, codexconfig.ModelGatewayProvider)
	}
	return map[string]any{
		"model_provider": codexconfig.ModelGatewayProvider,
		"model_providers." + codexconfig.ModelGatewayProvider + ".experimental_bearer_token": credential,
	}, nil
}

// placeholderProvider defines provider id so that a thread started on it,
// which the server no longer defines, loads for reading (a re-seed's
// source): a copy of the server's provider without any credential, or,
// for a built-in server provider, a definition that is never called. The
// thread is only read; nothing reaches a model through it.
func placeholderProvider(ctx context.Context, c *appserver.Client, id string) (map[string]any, error) {
	serverID, def, err := serverProvider(ctx, c)
	if err != nil {
		return nil, err
	}
	if serverID == id {
		return nil, nil // defined: the server's own
	}
	p := map[string]any{"name": id, "wire_api": "responses", "base_url": "http://127.0.0.1:9/v1"} // port 9: discard
	if def != nil {
		for k, v := range def {
			if v != nil {
				p[k] = v
			}
		}
		for _, k := range credentialKeys {
			delete(p, k)
		}
		delete(p, "http_headers")
	}
	return map[string]any{"model_providers." + id: p}, nil
}

// providerChange says what a re-seeding turn did to its thread's provider,
// for the reseeded event.
func providerChange(in adapter.TurnInput) string {
	from, to := in.ReseedFromProvider, TurnProvider(in)
	switch {
	case to == codexconfig.ModelGatewayProvider:
		return "the harness's model requests now go through the model gateway"
	case from == codexconfig.ModelGatewayProvider:
		return "the harness's model requests no longer go through the model gateway"
	}
	return fmt.Sprintf("the turn %s an auth profile", addsOrDrops(in))
}
