package codexconfig_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/harness/codexconfig"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// The options quote the URL as a TOML string: a quote or backslash in it
// cannot end the value and add configuration.
func TestModelGatewayArgsQuoteTheURL(t *testing.T) {
	got := codexconfig.ModelGatewayArgs(`https://gw.example:8443/v1",env_key="OPENAI_API_KEY`)
	want := []string{
		"-c", `model_provider="harness-gateway"`,
		"-c", `model_providers.harness-gateway={name="OpenClaw harness-operator model gateway",` +
			`base_url="https://gw.example:8443/v1\",env_key=\"OPENAI_API_KEY",wire_api="responses",` +
			`request_max_retries=4,stream_max_retries=5}`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("ModelGatewayArgs:\n got %q\nwant %q", got, want)
	}
}

// The real Codex started with the options makes the gateway its default
// provider and sends a thread's model request there without any
// credential: the pod holds none, and a thread the dispatcher did not start
// reaches the gateway unauthenticated. The control is the config's own
// provider (codextest's `stub`, with an env_key), which sends its key.
func TestModelGatewayArgsMakeACredentialLessDefaultProvider(t *testing.T) {
	codextest.Bin(t)
	stub := stubmodel.Start(t)
	turn := func(t *testing.T, extra []string, marker string) (provider, authorization string) {
		t.Helper()
		srv := codextest.Start(t, codextest.Options{ProviderURL: stub.BaseURL(), ExtraArgs: extra})
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		c, err := appserver.Connect(ctx, appserver.NewStdioTransport(srv.Stdio()), appserver.Options{})
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		defer func() { _ = c.Close() }()
		th, err := c.StartThread(ctx, appserver.ThreadStartParams{Model: codextest.StubModel, Cwd: srv.Workdir}, appserver.ThreadOptions{})
		if err != nil {
			t.Fatalf("thread/start: %v", err)
		}
		tu, err := th.StartTurn(ctx, appserver.TurnStartParams{Input: []appserver.InputItem{appserver.TextInput(marker)}})
		if err != nil {
			t.Fatalf("turn/start: %v", err)
		}
		for done := false; !done; {
			ev, err := tu.Next(ctx)
			if err != nil {
				t.Fatalf("turn: %v", err)
			}
			_, done = ev.(appserver.TurnCompletedEvent)
		}
		reqs := stub.RequestsContaining(marker)
		if len(reqs) != 1 {
			t.Fatalf("the stub got %d requests of the turn, want 1", len(reqs))
		}
		return th.Info.ModelProvider, reqs[0].Header.Get("Authorization")
	}

	provider, auth := turn(t, nil, "CONTROL-OWN-PROVIDER")
	if provider != "stub" || auth != "Bearer "+codextest.StubAPIKey {
		t.Fatalf("control: provider %q sent Authorization %q, want stub's key", provider, auth)
	}
	provider, auth = turn(t, codexconfig.ModelGatewayArgs(stub.BaseURL()), "THROUGH-THE-GATEWAY")
	if provider != codexconfig.ModelGatewayProvider {
		t.Errorf("thread provider %q, want %q", provider, codexconfig.ModelGatewayProvider)
	}
	if auth != "" {
		t.Errorf("the gateway provider sent Authorization %q, want none", auth)
	}
}
