package appserver_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// testToken is a capability token for test listeners only.
const testToken = "test-capability-token-5b1f0c2e"

// plainHTTP never uses a proxy.
func plainHTTP(dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Client {
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true}
	if dial != nil {
		tr.DialContext = dial
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t *testing.T, client *http.Client, url string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// checkListener asserts the probe and auth behaviour of a `--ws-auth
// capability-token` listener reached at host:port and runs one turn with the
// right token.
func checkListener(t *testing.T, srv *codextest.Server, hostPort string, client *http.Client) {
	t.Helper()
	httpBase, wsURL := "http://"+hostPort, "ws://"+hostPort
	wrong := http.Header{"Authorization": {"Bearer wrong"}}
	for _, path := range []string{"/readyz", "/healthz"} {
		if code, _ := get(t, client, httpBase+path, nil); code != http.StatusOK {
			t.Errorf("GET %s without a token = %d, want 200", path, code)
		}
		if code, _ := get(t, client, httpBase+path, wrong); code != http.StatusOK {
			t.Errorf("GET %s with a wrong token = %d, want 200", path, code)
		}
	}
	if code, _ := get(t, client, httpBase+"/", nil); code != http.StatusBadRequest {
		t.Errorf("plain GET / = %d, want 400", code)
	}

	ctx := testCtx(t, 30*time.Second)
	for _, token := range []string{"", "wrong"} {
		_, err := appserver.DialWebSocket(ctx, wsURL, appserver.WebSocketOptions{Token: token, HTTPClient: client})
		var he *appserver.HandshakeError
		if !errors.Is(err, appserver.ErrUnauthorized) || !errors.As(err, &he) {
			t.Errorf("dial with token %q: %v; want 401", token, err)
		}
		if err != nil && strings.Contains(err.Error(), testToken) {
			t.Errorf("error leaks the token: %v", err)
		}
		// Codex explains a 401 in its body ("missing/invalid websocket
		// bearer token"); no body reaches an error.
		if err != nil && strings.Contains(err.Error(), "websocket bearer token") {
			t.Errorf("error copies the server's body: %v", err)
		}
	}

	tr, err := appserver.DialWebSocket(ctx, wsURL, appserver.WebSocketOptions{Token: testToken, HTTPClient: client})
	if err != nil {
		t.Fatalf("dial with the token: %v", err)
	}
	c, err := appserver.Connect(ctx, tr, appserver.Options{})
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	defer func() { _ = c.Close() }()
	th, err := c.StartThread(ctx, appserver.ThreadStartParams{Model: codextest.StubModel, Cwd: srv.Workdir,
		ApprovalPolicy: appserver.ApprovalNever, Sandbox: appserver.SandboxReadOnly, Ephemeral: true}, appserver.ThreadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res := runTurn(t, th, "over the authenticated listener"); res.Status != appserver.TurnCompleted || res.Text != stubmodel.DefaultText {
		t.Fatalf("turn %s %q", res.Status, res.Text)
	}
}

// A listener on another loopback address (127.0.0.2) with --ws-auth.
func TestWebSocketListenerWithAuth(t *testing.T) {
	t.Parallel()
	r := startRig(t, codextest.Options{Transport: codextest.WebSocket, ListenHost: "127.0.0.2", WSToken: testToken})
	if !strings.HasPrefix(r.srv.URL, "ws://127.0.0.2:") {
		t.Fatalf("listening on %s", r.srv.URL)
	}
	checkListener(t, r.srv, strings.TrimPrefix(r.srv.URL, "ws://"), plainHTTP(nil))
}

// With --ws-token-sha256 the server holds only the token's hash; clients
// still send the token.
func TestWebSocketListenerWithTokenHash(t *testing.T) {
	t.Parallel()
	r := startRig(t, codextest.Options{Transport: codextest.WebSocket, ListenHost: "127.0.0.3", WSToken: testToken, WSTokenHashOnly: true})
	ctx := testCtx(t, 30*time.Second)
	if _, err := appserver.DialWebSocket(ctx, r.srv.URL, appserver.WebSocketOptions{}); !errors.Is(err, appserver.ErrUnauthorized) {
		t.Fatalf("dial without a token: %v", err)
	}
	c := connectWS(t, r.srv, testToken, appserver.Options{})
	if c.ServerInfo().Version != "0.169.0" {
		t.Fatalf("version %q", c.ServerInfo().Version)
	}
}

// A listener on an address inside a network namespace the test creates:
// the app-server runs in namespace A on 10.x.y.1, the stub model and the
// client sit in namespace B on 10.x.y.2, joined by a veth pair. Nothing is
// added to the host's own network namespace.
//
// Its prerequisites (root, iproute2) hold on this project's machines and in
// CI, so a missing one fails the test instead of skipping it silently.
func TestWebSocketListenerInNetworkNamespace(t *testing.T) {
	t.Parallel()
	ipBin, err := exec.LookPath("ip")
	if err != nil {
		t.Fatal("ip (iproute2) is not installed: the network-namespace listener check needs it (apt-get install iproute2)")
	}
	if os.Geteuid() != 0 {
		t.Fatal("creating network namespaces needs root: run the suite as root (CI does)")
	}
	id := fmt.Sprintf("%d%03d", os.Getpid()%100000, rand.IntN(1000))
	nsA, nsB := "cxa"+id, "cxb"+id
	vethA, vethB := "cxa"+id, "cxb"+id
	octet := 1 + rand.IntN(250)
	addrA, addrB := fmt.Sprintf("10.213.%d.1", octet), fmt.Sprintf("10.213.%d.2", octet)
	run := func(args ...string) error {
		out, err := exec.Command(ipBin, args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := run("netns", "add", nsA); err != nil {
		t.Fatalf("cannot create a network namespace here: %v", err)
	}
	t.Cleanup(func() { _ = run("netns", "del", nsA) })
	if err := run("netns", "add", nsB); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = run("netns", "del", nsB) })
	for _, args := range [][]string{
		{"link", "add", vethA, "type", "veth", "peer", "name", vethB},
		{"link", "set", vethA, "netns", nsA},
		{"link", "set", vethB, "netns", nsB},
		{"-n", nsA, "addr", "add", addrA + "/24", "dev", vethA},
		{"-n", nsB, "addr", "add", addrB + "/24", "dev", vethB},
		{"-n", nsA, "link", "set", vethA, "up"},
		{"-n", nsB, "link", "set", vethB, "up"},
		{"-n", nsA, "link", "set", "lo", "up"},
		{"-n", nsB, "link", "set", "lo", "up"},
	} {
		if err := run(args...); err != nil {
			t.Fatal(err)
		}
	}

	// The stub model listens in namespace B.
	var l net.Listener
	if err := inNetns(nsB, func() (err error) {
		l, err = net.Listen("tcp", net.JoinHostPort(addrB, "0"))
		return err
	}); err != nil {
		t.Fatalf("listen in %s: %v", nsB, err)
	}
	stub := stubmodel.Serve(l)
	t.Cleanup(stub.Close)

	// Without --ws-auth Codex refuses a non-loopback listener: on the
	// namespace's address and on all its interfaces.
	for _, host := range []string{addrA, "0.0.0.0"} {
		_, err = codextest.StartErr(t, codextest.Options{ProviderURL: stub.BaseURL(), Transport: codextest.WebSocket,
			ListenHost: host, Port: 18301, NetNS: nsA})
		if err == nil || !strings.Contains(err.Error(), "refusing to start non-loopback websocket listener") {
			t.Fatalf("listener on %s without auth: %v", host, err)
		}
	}

	// With --ws-auth a listener on all interfaces of namespace A (the shape
	// of a pod) is reached from namespace B at A's address.
	srv := codextest.Start(t, codextest.Options{ProviderURL: stub.BaseURL(), Transport: codextest.WebSocket,
		ListenHost: "0.0.0.0", Port: 18302, NetNS: nsA, WSToken: testToken})
	hostPort := net.JoinHostPort(addrA, "18302")
	client := plainHTTP(func(ctx context.Context, network, addr string) (c net.Conn, err error) {
		err = inNetns(nsB, func() error {
			var d net.Dialer
			c, err = d.DialContext(ctx, network, addr)
			return err
		})
		return c, err
	})
	// Poll readiness from namespace B until /readyz answers 200 (the server
	// exiting, or the deadline, ends the poll with the last answer).
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		req, _ := http.NewRequest(http.MethodGet, "http://"+hostPort+"/readyz", nil)
		resp, err := client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		select {
		case <-srv.Exited():
			t.Fatalf("codex app-server exited while %s/readyz was polled from %s:\n%s", hostPort, nsB, srv.Stderr())
		case <-deadline.C:
			t.Fatalf("%s/readyz from %s: %v", hostPort, nsB, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	checkListener(t, srv, hostPort, client)
	if !strings.Contains(srv.Stderr(), "websocket auth is required for non-localhost listeners") {
		t.Errorf("banner for a non-loopback listener:\n%s", srv.Stderr())
	}
}

// inNetns runs fn on an OS thread that has joined the named network
// namespace; sockets created in fn belong to that namespace. The thread then
// returns to the original namespace. If it cannot, it stays locked and ends
// with its goroutine; no other goroutine ever runs in the foreign namespace.
// (Letting threads end is avoided otherwise: a child process started from
// such a thread with Pdeathsig, as internal/testutil/codextest does, would be killed.)
func inNetns(name string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open own netns: %w", err)
			return
		}
		defer func() { _ = unix.Close(orig) }()
		fd, err := unix.Open("/run/netns/"+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open netns %s: %w", name, err)
			return
		}
		defer func() { _ = unix.Close(fd) }()
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("setns %s: %w", name, err)
			return
		}
		err = fn()
		if unix.Setns(orig, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// Closing the WebSocket does not end a running turn: a new connection
// resumes the thread and receives the rest of the turn.
func TestClosedWebSocketDoesNotEndTheTurn(t *testing.T) {
	t.Parallel()
	r := startRig(t, codextest.Options{Transport: codextest.WebSocket, WSToken: testToken})
	gate := stubmodel.NewGate()
	t.Cleanup(gate.Release)
	r.stub.When("STALL", stubmodel.Stall(gate, stubmodel.Text("Stalled reply, delivered late")))
	ctx := testCtx(t, 60*time.Second)

	a := connectWS(t, r.srv, testToken, appserver.Options{})
	th := startThread(t, a, r.srv, appserver.ThreadStartParams{}, nil)
	turn, err := th.StartTurn(ctx, appserver.TurnStartParams{Input: []appserver.InputItem{appserver.TextInput("STALL then answer")}})
	if err != nil {
		t.Fatal(err)
	}
	req, err := r.stub.WaitMarker(ctx, "STALL")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	// Connection A reports the loss as "the turn may be running".
	for {
		_, err := turn.Next(ctx)
		var cl *appserver.ConnectionLostError
		if errors.As(err, &cl) {
			if !cl.AfterTurnStarted || cl.TurnID != turn.ID || !errors.Is(err, appserver.ErrClosed) {
				t.Fatalf("A's turn after close: %v", err)
			}
			break
		}
		if err != nil {
			t.Fatalf("A's turn: %v", err)
		}
	}

	b := connectWS(t, r.srv, testToken, appserver.Options{})
	rt, err := b.ResumeThread(ctx, appserver.ThreadResumeParams{ThreadID: th.ID, ExcludeTurns: true}, appserver.ThreadOptions{})
	if err != nil {
		t.Fatalf("thread/resume on B: %v", err)
	}
	rest := rt.AttachTurn(turn.ID)
	gate.Release()
	res, err := rest.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != appserver.TurnCompleted || res.Text != "Stalled reply, delivered late" {
		t.Fatalf("rest of the turn on B: %s %q", res.Status, res.Text)
	}
	// Codex read the model stream to the end although A was gone.
	if out, err := req.Wait(ctx); err != nil || out != stubmodel.OutcomeServed {
		t.Fatalf("model request outcome %v %v", out, err)
	}
	if res := runTurn(t, rt, "a second turn from B"); res.Status != appserver.TurnCompleted {
		t.Fatalf("next turn on B: %s", res.Status)
	}
}
