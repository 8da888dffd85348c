package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/openclaw/harness-operator/internal/platform/proxyenv"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// modelURL is --model-url: a model provider the caller runs, so that it can
// script and inspect what Codex asks (test/openclaw runs its own stub).
var modelURL string

// localCodex is the sample harness's external app-server: the real
// `codex app-server` on 127.0.0.1, answering from the stub model server, with
// every feature that would reach the network turned off.
type localCodex struct {
	stub *stubmodel.Server
	cmd  *exec.Cmd
	// done is closed when the app-server has exited (and been waited for).
	done chan struct{}
}

// realProviderConfig is CODEX_HOME/config.toml when OPENAI_API_KEY is set:
// Codex's built-in OpenAI provider (logged in with the key through auth.json,
// the only place the app-server reads it from: docs/codex-app-server.md)
// with the same phone-home features off as the stub configuration. Not
// exercised by any test here: this machine reaches no model provider.
const realProviderConfig = `# Written by hack/devcluster: the real OpenAI provider (OPENAI_API_KEY).
model_provider = "openai"
approval_policy = "never"
sandbox_mode = "read-only"
check_for_update_on_startup = false

[analytics]
enabled = false
`

// startLocalCodex starts `codex app-server --listen ws://<addr> --ws-auth
// capability-token` with the token from tokenFile, in a CODEX_HOME under dir:
// on the stub model, or on the real OpenAI provider when OPENAI_API_KEY is set
// (real reports whether it is).
func startLocalCodex(ctx context.Context, bin, addr, dir, token string) (c *localCodex, real bool, err error) {
	home := filepath.Join(dir, "codex-home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, false, fmt.Errorf("create CODEX_HOME: %w", err)
	}
	real = os.Getenv("OPENAI_API_KEY") != "" && modelURL == ""
	var stub *stubmodel.Server
	switch {
	case modelURL != "":
		if err := codextest.WriteConfig(home, modelURL); err != nil {
			return nil, false, err
		}
	case real:
		if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(realProviderConfig), 0o600); err != nil {
			return nil, false, fmt.Errorf("write config.toml: %w", err)
		}
		login, err := json.Marshal(map[string]string{"OPENAI_API_KEY": os.Getenv("OPENAI_API_KEY")})
		if err != nil {
			return nil, false, err
		}
		if err := os.WriteFile(filepath.Join(home, "auth.json"), login, 0o600); err != nil {
			return nil, false, fmt.Errorf("write auth.json: %w", err)
		}
	default:
		if stub, err = stubmodel.New(); err != nil {
			return nil, false, err
		}
		if err := codextest.WriteConfig(home, stub.BaseURL()); err != nil {
			stub.Close()
			return nil, false, err
		}
	}
	c, err = startAppServer(ctx, bin, addr, dir, home, token, stub)
	return c, real, err
}

// startAppServer runs the app-server on addr with the capability token.
func startAppServer(ctx context.Context, bin, addr, dir, home, token string, stub *stubmodel.Server) (*localCodex, error) {
	fail := func(err error) (*localCodex, error) {
		if stub != nil {
			stub.Close()
		}
		return nil, err
	}
	tokenFile := filepath.Join(dir, "codex-ws-token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		return fail(fmt.Errorf("write token file: %w", err))
	}
	cmd := exec.CommandContext(ctx, bin, "app-server", "--listen", "ws://"+addr, "--ws-auth", "capability-token", "--ws-token-file", tokenFile)
	// Codex sends even its loopback model requests to a proxy variable's proxy.
	cmd.Env = append(proxyenv.Without(os.Environ()), "CODEX_HOME="+home, "HOME="+home, "HARNESS_STUB_API_KEY=stub")
	log, err := os.Create(filepath.Join(dir, "codex-app-server.log"))
	if err != nil {
		return fail(fmt.Errorf("create app-server log: %w", err))
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	if err := cmd.Start(); err != nil {
		return fail(fmt.Errorf("start codex app-server: %w", err))
	}
	exited := make(chan error, 1)
	c := &localCodex{stub: stub, cmd: cmd, done: make(chan struct{})}
	go func() {
		exited <- cmd.Wait()
		close(c.done)
	}()
	// /readyz answers without the token (docs/codex-app-server.md).
	if err := waitReady(ctx, "codex app-server", "http://"+addr+"/readyz", exited); err != nil {
		c.stop()
		return nil, fmt.Errorf("%w (its log: %s)", err, log.Name())
	}
	return c, nil
}

// stop ends the app-server and the stub.
func (c *localCodex) stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	<-c.done
	if c.stub != nil {
		c.stub.Close()
	}
}
