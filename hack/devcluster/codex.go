package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/openclaw/harness-operator/internal/codextest"
	"github.com/openclaw/harness-operator/test/stubmodel"
)

// localCodex is the sample harness's external app-server: the real
// `codex app-server` on 127.0.0.1, answering from the stub model server, with
// every feature that would reach the network turned off.
type localCodex struct {
	stub *stubmodel.Server
	cmd  *exec.Cmd
}

// startLocalCodex starts the stub model and `codex app-server --listen
// ws://<addr> --ws-auth capability-token` with the token from tokenFile, in a
// CODEX_HOME under dir.
func startLocalCodex(ctx context.Context, bin, addr, dir, token string) (*localCodex, error) {
	stub, err := stubmodel.New()
	if err != nil {
		return nil, err
	}
	home := filepath.Join(dir, "codex-home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		stub.Close()
		return nil, fmt.Errorf("create CODEX_HOME: %w", err)
	}
	if err := codextest.WriteConfig(home, stub.BaseURL()); err != nil {
		stub.Close()
		return nil, err
	}
	tokenFile := filepath.Join(dir, "codex-ws-token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		stub.Close()
		return nil, fmt.Errorf("write token file: %w", err)
	}
	cmd := exec.CommandContext(ctx, bin, "app-server", "--listen", "ws://"+addr, "--ws-auth", "capability-token", "--ws-token-file", tokenFile)
	cmd.Env = append(os.Environ(), "CODEX_HOME="+home, "HOME="+home, "HARNESS_STUB_API_KEY=stub")
	log, err := os.Create(filepath.Join(dir, "codex-app-server.log"))
	if err != nil {
		stub.Close()
		return nil, fmt.Errorf("create app-server log: %w", err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	if err := cmd.Start(); err != nil {
		stub.Close()
		return nil, fmt.Errorf("start codex app-server: %w", err)
	}
	return &localCodex{stub: stub, cmd: cmd}, nil
}

// stop ends the app-server and the stub.
func (c *localCodex) stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	_ = c.cmd.Wait()
	c.stub.Close()
}
