// Package codextest starts the real `codex app-server` for tests.
//
// The binary comes from the CODEX_BIN environment variable (`make test` sets
// it from hack/setup-codex.sh). Every server gets its own directory with an
// isolated CODEX_HOME whose config.toml points Codex at a loopback stub model
// (internal/testutil/stubmodel) and turns off every feature that would reach out to the
// network on its own (docs/codex-app-server.md). Servers speak JSON-RPC over
// stdio or listen for WebSocket clients, and they are killed when the test
// ends.
package codextest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/harness/codexconfig"
	"github.com/openclaw/harness-operator/internal/platform/proxyenv"
)

// EnvBin names the environment variable holding the native codex binary.
const EnvBin = "CODEX_BIN"

// StubModel is the model slug the generated config selects. Codex does not
// know it, so it uses fallback model metadata (and its plain tool surface).
const StubModel = "stub-model"

// StubAPIKey is the API key Codex sends to the stub as a bearer token.
const StubAPIKey = "stub-api-key"

// startTimeout bounds how long a server may take to come up.
const startTimeout = 30 * time.Second

// Transport selects how the server talks JSON-RPC.
type Transport int

const (
	// Stdio: newline-delimited JSON on the process's stdin and stdout.
	Stdio Transport = iota
	// WebSocket: `--listen ws://<host>:<port>`.
	WebSocket
)

// Options configure a server.
type Options struct {
	// Bin is the native codex binary; empty means $CODEX_BIN.
	Bin string
	// ProviderURL is the model provider base URL, e.g. stub.BaseURL().
	ProviderURL string
	// Dir holds codex-home/, home/ and work/. Empty means a new t.TempDir();
	// pass the Dir of an earlier server to restart on the same CODEX_HOME.
	Dir string
	// Transport is Stdio (default) or WebSocket.
	Transport Transport
	// ListenHost is the WebSocket bind address (default 127.0.0.1).
	ListenHost string
	// Port is the WebSocket port (default 0: Codex binds a free one, and
	// Server.URL names it).
	Port int
	// WSToken, when set, starts the listener with `--ws-auth
	// capability-token --ws-token-file <file holding the token>`.
	WSToken string
	// WSTokenHashOnly passes the token as `--ws-token-sha256 <hex>` instead
	// of a token file: the server never holds the token itself.
	WSTokenHashOnly bool
	// WSSharedSecret, when set, starts the listener with `--ws-auth
	// signed-bearer-token --ws-shared-secret-file <file holding it>` and
	// WSIssuer and WSAudience as --ws-issuer and --ws-audience (when set),
	// as the operator's server pods run (appserver.SignedBearer).
	WSSharedSecret       string
	WSIssuer, WSAudience string
	// NetNS runs the server inside the named network namespace
	// (`ip netns exec`); the namespace must have been created by the test.
	NetNS string
	// ExtraArgs are appended to `codex app-server`.
	ExtraArgs []string
	// Env are extra NAME=value variables of the server process (as a pod's
	// env and credentials would be).
	Env []string
}

// Server is a running `codex app-server`.
type Server struct {
	// Dir, Home (CODEX_HOME) and Workdir (a directory for thread cwds).
	Dir, Home, Workdir string
	// URL is ws://host:port for a WebSocket server.
	URL string
	// HTTPBase is http://host:port for a WebSocket server (/readyz, /healthz).
	HTTPBase string

	cmd     *exec.Cmd
	stdin   *os.File
	stdout  *os.File
	stderr  *logBuffer
	exited  chan struct{}
	waitErr error
	stopped sync.Once
}

// Bin returns $CODEX_BIN, failing the test when it is unset or unusable.
func Bin(tb testing.TB) string {
	tb.Helper()
	bin := os.Getenv(EnvBin)
	if bin == "" {
		tb.Fatalf("%s is not set: these tests run the real codex app-server. Run `make test`, "+
			"or `%s=$(hack/setup-codex.sh) go test ./...` (hack/setup-codex.sh installs the pinned release "+
			"and prints the binary's path)", EnvBin, EnvBin)
	}
	fi, err := os.Stat(bin)
	if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		tb.Fatalf("%s=%q is not an executable file (run hack/setup-codex.sh): %v", EnvBin, bin, err)
	}
	return bin
}

// Start starts a server and registers its cleanup (kill and reap) with tb.
// It returns once the server is ready: at once for stdio, after the listener
// answers /readyz for WebSocket.
func Start(tb testing.TB, opts Options) *Server {
	tb.Helper()
	s, err := start(tb, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// StartErr is Start returning the error instead of failing the test, for
// tests that expect the server to refuse to start.
func StartErr(tb testing.TB, opts Options) (*Server, error) {
	tb.Helper()
	return start(tb, opts)
}

func start(tb testing.TB, opts Options) (*Server, error) {
	tb.Helper()
	if opts.Bin == "" {
		opts.Bin = Bin(tb)
	}
	if opts.ProviderURL == "" {
		return nil, errors.New("codextest: Options.ProviderURL is required (e.g. stub.BaseURL())")
	}
	if opts.Dir == "" {
		opts.Dir = tb.TempDir()
	}
	s := &Server{
		Dir:     opts.Dir,
		Home:    filepath.Join(opts.Dir, "codex-home"),
		Workdir: filepath.Join(opts.Dir, "work"),
		stderr:  newLogBuffer(),
		exited:  make(chan struct{}),
	}
	userHome := filepath.Join(opts.Dir, "home")
	for _, d := range []string{s.Home, s.Workdir, userHome} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("codextest: %w", err)
		}
	}
	if err := WriteConfig(s.Home, opts.ProviderURL); err != nil {
		return nil, err
	}

	args := []string{"app-server"}
	if opts.Transport == WebSocket {
		host := opts.ListenHost
		if host == "" {
			host = "127.0.0.1"
		}
		// Port 0 lets Codex bind a free port itself (no pick-then-bind
		// race with other tests); its banner names the port, and
		// waitListening sets URL and HTTPBase from it.
		hostPort := net.JoinHostPort(host, strconv.Itoa(opts.Port))
		s.URL = "ws://" + hostPort
		s.HTTPBase = "http://" + hostPort
		args = append(args, "--listen", s.URL)
		if opts.WSToken != "" && opts.WSTokenHashOnly {
			sum := sha256.Sum256([]byte(opts.WSToken))
			args = append(args, "--ws-auth", "capability-token", "--ws-token-sha256", hex.EncodeToString(sum[:]))
		} else if opts.WSToken != "" {
			tokenFile := filepath.Join(opts.Dir, "ws-token")
			if err := os.WriteFile(tokenFile, []byte(opts.WSToken+"\n"), 0o600); err != nil {
				return nil, fmt.Errorf("codextest: write token file: %w", err)
			}
			args = append(args, "--ws-auth", "capability-token", "--ws-token-file", tokenFile)
		}
		if opts.WSSharedSecret != "" {
			secretFile := filepath.Join(opts.Dir, "ws-shared-secret")
			if err := os.WriteFile(secretFile, []byte(opts.WSSharedSecret), 0o600); err != nil {
				return nil, fmt.Errorf("codextest: write shared secret file: %w", err)
			}
			args = append(args, "--ws-auth", "signed-bearer-token", "--ws-shared-secret-file", secretFile)
			if opts.WSIssuer != "" {
				args = append(args, "--ws-issuer", opts.WSIssuer)
			}
			if opts.WSAudience != "" {
				args = append(args, "--ws-audience", opts.WSAudience)
			}
		}
	}
	args = append(args, opts.ExtraArgs...)

	name := opts.Bin
	if opts.NetNS != "" {
		args = append([]string{"netns", "exec", opts.NetNS, opts.Bin}, args...)
		name = "ip"
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = s.Workdir
	cmd.Env = append(environ(s.Home, userHome), opts.Env...)
	// Pdeathsig kills the server if the test binary dies without cleanup.
	// It fires when the OS thread that started the child exits, so tests
	// must not end locked OS threads (see inNetns in internal/harness/appserver).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = s.stderr
	cmd.WaitDelay = 2 * time.Second
	s.cmd = cmd

	if opts.Transport == Stdio {
		inR, inW, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("codextest: %w", err)
		}
		outR, outW, err := os.Pipe()
		if err != nil {
			_ = inR.Close()
			_ = inW.Close()
			return nil, fmt.Errorf("codextest: %w", err)
		}
		cmd.Stdin, cmd.Stdout = inR, outW
		s.stdin, s.stdout = inW, outR
		defer func() { _ = inR.Close(); _ = outW.Close() }()
	}
	if err := cmd.Start(); err != nil {
		s.closePipes()
		return nil, fmt.Errorf("codextest: start %s: %w", opts.Bin, err)
	}
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	tb.Cleanup(func() {
		s.Kill()
		if tb.Failed() {
			tb.Logf("codex app-server stderr (%s):\n%s", s.Dir, s.stderr.tail(8<<10))
		}
	})

	if opts.Transport == WebSocket {
		if err := s.waitListening(opts.NetNS == ""); err != nil {
			s.Kill()
			return nil, fmt.Errorf("%w\nstderr:\n%s", err, s.stderr.tail(4<<10))
		}
	}
	return s, nil
}

// WriteConfig writes CODEX_HOME/config.toml: the stub as the only model
// provider (no retries), the stub model, and every feature that phones out
// (plugins, apps, update checks, analytics, …) disabled.
func WriteConfig(home, providerURL string) error {
	cfg := fmt.Sprintf(configTemplate, StubModel, strconv.Quote(providerURL))
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		return fmt.Errorf("codextest: write config.toml: %w", err)
	}
	return nil
}

const configTemplate = `# Written by internal/testutil/codextest: isolated CODEX_HOME against a loopback stub model.
model = %q
model_provider = "stub"
approval_policy = "never"
sandbox_mode = "read-only"
` + codexconfig.Offline + `
[model_providers.stub]
name = "Stub"
base_url = %s
wire_api = "responses"
env_key = "HARNESS_STUB_API_KEY"
request_max_retries = 0
stream_max_retries = 0
stream_idle_timeout_ms = 120000

[agents]
enabled = false
`

func environ(codexHome, userHome string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case proxyenv.IsProxy(k), strings.HasPrefix(k, "CODEX_"), strings.HasPrefix(k, "OPENAI_"), k == "HOME", k == "RUST_LOG",
			k == "HARNESS_STUB_API_KEY", k == "XDG_CONFIG_HOME", k == "XDG_CACHE_HOME", k == "XDG_DATA_HOME":
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"CODEX_HOME="+codexHome,
		"HOME="+userHome,
		"HARNESS_STUB_API_KEY="+StubAPIKey,
		"NO_COLOR=1",
	)
}

// setListenPort takes the port Codex bound from its banner
// ("listening on: ws://<host>:<port>") into URL and HTTPBase.
func (s *Server) setListenPort() error {
	banner := s.stderr.listening()
	u, err := url.Parse(banner)
	if err != nil {
		return fmt.Errorf("codextest: the listening banner %q: %w", banner, err)
	}
	if u.Port() == "" {
		return fmt.Errorf("codextest: no port in the listening banner %q", banner)
	}
	host, _, err := net.SplitHostPort(strings.TrimPrefix(s.URL, "ws://"))
	if err != nil {
		return fmt.Errorf("codextest: %w", err)
	}
	hostPort := net.JoinHostPort(host, u.Port())
	s.URL, s.HTTPBase = "ws://"+hostPort, "http://"+hostPort
	return nil
}

// waitListening waits for the WebSocket banner on stderr and, when the
// address is reachable from the test process, for /readyz to answer.
func (s *Server) waitListening(probe bool) error {
	deadline := time.NewTimer(startTimeout)
	defer deadline.Stop()
	select {
	case <-s.stderr.sawListening:
		if err := s.setListenPort(); err != nil {
			return err
		}
	case <-s.exited:
		return fmt.Errorf("codextest: codex app-server exited before listening: %w", s.waitErr)
	case <-deadline.C:
		return fmt.Errorf("codextest: codex app-server not listening after %v", startTimeout)
	}
	if !probe {
		return nil
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}
	defer client.CloseIdleConnections()
	for {
		resp, err := client.Get(s.HTTPBase + "/readyz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		select {
		case <-s.exited:
			return fmt.Errorf("codextest: codex app-server exited: %w", s.waitErr)
		case <-deadline.C:
			return fmt.Errorf("codextest: %s/readyz not ready after %v: %w", s.HTTPBase, startTimeout, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Stdio returns the server's stdout (to read from) and stdin (to write to)
// for a stdio server. Closing stdin makes the server exit.
func (s *Server) Stdio() (io.ReadCloser, io.WriteCloser) {
	if s.stdin == nil {
		panic("codextest: Stdio on a WebSocket server")
	}
	return s.stdout, s.stdin
}

// Pid is the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Exited is closed when the process has exited.
func (s *Server) Exited() <-chan struct{} { return s.exited }

// Stderr returns everything the server wrote to stderr so far.
func (s *Server) Stderr() string { return s.stderr.String() }

// Stop ends the server gracefully (stdio: stdin closed; WebSocket: SIGTERM)
// and waits up to timeout before killing it. It returns the exit error.
func (s *Server) Stop(timeout time.Duration) error {
	if s.stdin != nil {
		_ = s.stdin.Close()
	} else {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-s.exited:
	case <-t.C:
		s.Kill()
		return fmt.Errorf("codextest: codex app-server did not exit within %v", timeout)
	}
	s.Kill() // reap helpers left in the process group, close pipes
	return s.waitErr
}

// Kill kills the server's process group, waits for it and closes the pipes.
// It is idempotent.
func (s *Server) Kill() {
	s.stopped.Do(func() {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
		s.closePipes()
	})
}

func (s *Server) closePipes() {
	if s.stdin != nil {
		_ = s.stdin.Close()
	}
	if s.stdout != nil {
		_ = s.stdout.Close()
	}
}

// logBuffer collects stderr and signals the WebSocket banner.
type logBuffer struct {
	mu           sync.Mutex
	buf          bytes.Buffer
	line         []byte
	sawListening chan struct{}
	listenURL    string // from the banner, set when sawListening closes
	once         sync.Once
}

// listening is the URL of the WebSocket banner (after sawListening).
func (b *logBuffer) listening() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.listenURL
}

func newLogBuffer() *logBuffer { return &logBuffer{sawListening: make(chan struct{})} }

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if b.buf.Len() > 1<<20 { // keep the last MiB
		keep := append([]byte(nil), b.buf.Bytes()[b.buf.Len()-(512<<10):]...)
		b.buf.Reset()
		b.buf.Write(keep)
	}
	b.line = append(b.line, p...)
	for {
		i := bytes.IndexByte(b.line, '\n')
		if i < 0 {
			break
		}
		if _, after, ok := bytes.Cut(b.line[:i], []byte("listening on:")); ok {
			b.once.Do(func() {
				b.listenURL = string(bytes.TrimSpace(after))
				close(b.sawListening)
			})
		}
		b.line = b.line[i+1:]
	}
	if len(b.line) > 64<<10 {
		b.line = b.line[len(b.line)-(64<<10):]
	}
	b.line = append([]byte(nil), b.line...)
	return len(p), nil
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) tail(n int) string {
	s := b.String()
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

// WaitExit waits for the process to exit or ctx to end.
func (s *Server) WaitExit(ctx context.Context) error {
	select {
	case <-s.exited:
		return s.waitErr
	case <-ctx.Done():
		return ctx.Err()
	}
}
