package codex

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

// How a session's model requests authenticate.
//
// Without an auth profile they use the app-server's own login; a server
// whose provider needs a login it does not have would send them without a
// credential, so such a turn is refused as AuthFailed before anything
// reaches the model (checkLogin).
//
// With an auth profile, the thread gets a model provider of its own: a copy
// of the server's configured provider (base URL, wire API, headers,
// retries) under profileProviderID, whose only credential is the profile's
// key (experimental_bearer_token). What Codex 0.169.0 does with it
// (TestAuthProfileAuthenticatesOnlyItsThread, docs/codex-app-server.md
// "Auth profiles"):
//   - the provider is part of the thread's config: other threads on the
//     same server keep the server's credential, and the key is written
//     nowhere under the server's home (rollouts, state) and not returned
//     by thread/read;
//   - a thread's model provider is fixed when it starts: a resume that
//     names another provider is refused ("Cannot change this thread's model
//     provider"), and a resume of a profile thread without the provider is
//     refused too ("no longer configured"). So every resume of a profile
//     thread carries the provider again (a rotated key takes effect), and
//     a turn that adds or drops the profile continues on a new thread
//     (the engine re-seeds);
//   - Codex refuses to redefine its built-in providers (`openai`), so a
//     server whose configured provider is built in cannot be copied: such
//     a turn is AuthProfileUnsupported.

// profileProviderID is the model provider id of threads that authenticate
// with an auth profile.
const profileProviderID = "harness-auth-profile"

// credentialKeys are the provider settings that carry or locate the
// server's own credential; the profile's provider has none of them.
var credentialKeys = []string{"env_key", "env_key_instructions", "experimental_bearer_token", "auth",
	"requires_openai_auth", "gateway_oauth", "credential_file", "env_http_headers"}

// nonBearerKeys are provider settings of authentication schemes a bearer
// key cannot replace (AWS SigV4, Google Cloud).
var nonBearerKeys = []string{"aws", "project_id", "location"}

// serverProvider reads the server's configured model provider (config/read):
// its id and its definition, nil when the provider is built in.
func serverProvider(ctx context.Context, c *appserver.Client) (string, map[string]any, error) {
	var res struct {
		Config struct {
			ModelProvider  *string                    `json:"model_provider"`
			ModelProviders map[string]json.RawMessage `json:"model_providers"`
		} `json:"config"`
	}
	if err := c.Call(ctx, "config/read", map[string]any{"includeLayers": false}, &res); err != nil {
		return "", nil, fmt.Errorf("codex: auth profile: config/read: %w", err)
	}
	id := "openai" // Codex's default provider
	if p := res.Config.ModelProvider; p != nil && *p != "" {
		id = *p
	}
	raw, ok := res.Config.ModelProviders[id]
	if !ok {
		return id, nil, nil
	}
	var def map[string]any
	if err := json.Unmarshal(raw, &def); err != nil {
		return "", nil, fmt.Errorf("codex: auth profile: config/read: model_providers.%s: %w", id, err)
	}
	return id, def, nil
}

// profileConfig is the thread config that makes a thread's model requests
// authenticate with key (empty: a provider without credential, enough to
// read a profile thread's history). A server whose provider cannot carry a
// bearer key is AuthProfileUnsupported.
func profileConfig(ctx context.Context, c *appserver.Client, profileID, key string) (map[string]any, error) {
	id, def, err := serverProvider(ctx, c)
	if err != nil {
		return nil, err
	}
	refuse := func(why string) error {
		return wire.Errorf(wire.CodeAuthProfileUnsupported, "", "authProfile %q: the app-server's model provider %q %s", profileID, id, why)
	}
	if def == nil {
		return nil, refuse("is built into Codex, which authenticates it only with the server's own login; " +
			"declare the provider in the harness's Codex config ([model_providers.<id>] with base_url and wire_api) to use auth profiles")
	}
	for _, k := range nonBearerKeys {
		if def[k] != nil {
			return nil, refuse(fmt.Sprintf("authenticates with %s, which a profile's API key cannot replace", k))
		}
	}
	p := map[string]any{}
	for k, v := range def {
		if v != nil {
			p[k] = v
		}
	}
	for _, k := range credentialKeys {
		delete(p, k)
	}
	if h, ok := p["http_headers"].(map[string]any); ok {
		h = maps.Clone(h)
		for name := range h {
			if strings.EqualFold(name, "authorization") {
				delete(h, name)
			}
		}
		p["http_headers"] = h
	}
	if key != "" {
		p["experimental_bearer_token"] = key
	}
	return map[string]any{"model_provider": profileProviderID, "model_providers." + profileProviderID: p}, nil
}

// checkLogin refuses a turn without an auth profile on a server whose model
// requests would carry no credential (appserver.Login.LoggedOut). A server
// that cannot answer account/read is not refused: the model's own 401
// (AuthFailed) still stops the turn.
func checkLogin(ctx context.Context, c *appserver.Client) error {
	l, err := c.ReadLogin(ctx)
	if err != nil || !l.LoggedOut() {
		return nil
	}
	return wire.Errorf(wire.CodeAuthFailed, "",
		"the app-server is not logged in: its model provider authenticates with the server's login (auth.json in the "+
			"native home) and it has none, so model requests would carry no credential. Give the harness an auth.json "+
			"credential (spec.appServer.credentials, type HomeFile; Codex ignores OPENAI_API_KEY in the environment for "+
			"this provider), or send the turn with an authProfile")
}

// authConfig is the turn's credential part of the thread config: the
// profile's provider, or nothing after checkLogin passed.
func authConfig(ctx context.Context, c *appserver.Client, in adapter.TurnInput) (map[string]any, error) {
	if in.ModelCredential != "" {
		return gatewayConfig(ctx, c, in.ModelCredential)
	}
	if in.AuthProfile == nil {
		return nil, checkLogin(ctx, c)
	}
	return profileConfig(ctx, c, in.AuthProfile.ID, in.AuthProfile.APIKey)
}

// reseedSourceConfig is the resume config that lets Codex load the thread a
// re-seed reads: a thread started on a provider the dispatcher chose needs
// that provider defined (without a key: nothing is sent to the model).
func reseedSourceConfig(ctx context.Context, c *appserver.Client, in adapter.TurnInput) (map[string]any, error) {
	switch {
	case in.ReseedFrom == "":
		return nil, nil
	case in.ReseedFromProvider == "":
		// The thread started on the server's own provider of its time. When
		// that was a provider of the server's config which the pods no
		// longer have (a HomeFile config.toml dropped as spec.modelGateway
		// was set), Codex loads the thread only with that id defined.
		id, err := threadProvider(ctx, c, in.ReseedFrom)
		if err != nil || id == "" {
			return nil, nil //nolint:nilerr // the resume reports what is wrong with the thread
		}
		return placeholderProvider(ctx, c, id)
	case in.ReseedFromProvider == profileProviderID:
		id := "(previous)"
		if in.AuthProfile != nil {
			id = in.AuthProfile.ID
		}
		return profileConfig(ctx, c, id, "")
	}
	return placeholderProvider(ctx, c, in.ReseedFromProvider)
}

// threadProvider is the model provider a thread was started on
// (thread/read), empty when Codex does not say.
func threadProvider(ctx context.Context, c *appserver.Client, id string) (string, error) {
	var res struct {
		Thread struct {
			ModelProvider string `json:"modelProvider"`
		} `json:"thread"`
	}
	if err := c.Call(ctx, "thread/read", map[string]any{"threadId": id}, &res); err != nil {
		return "", err
	}
	return res.Thread.ModelProvider, nil
}

// addsOrDrops says what a re-seeding turn did to its thread's auth profile.
func addsOrDrops(in adapter.TurnInput) string {
	if in.AuthProfile != nil {
		return "adds"
	}
	return "drops"
}
