//go:build e2e

package openclaw

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/openclaw/harness-operator/internal/testutil"
)

// gatewayStop bounds a gateway's exit after SIGTERM; then its process
// group is killed.
const gatewayStop = 30 * time.Second

// servedGateway is one long-lived `openclaw gateway run`, as a platform team
// runs OpenClaw: loaded once, serving every client's turns.
type servedGateway struct {
	// client is the gateway's own HOME: its config (the served one, with its
	// `gateway` block) and its install of the plugin. OpenClaw refuses
	// `agent --local` in a state directory a gateway serves, so the gateway
	// runs beside the HOME it was started from, whose copies with configs of
	// their own keep running `--local` there. `openclaw agent` runs here
	// too: it finds the gateway by this config's gateway.port.
	client *openClaw
	port   int
	proc   *testutil.Process
	rpc    *gatewayRPC // the current spec's gateway client (call), nil until it calls
}

// serve starts a long-lived gateway on o's config (tune may change it),
// waits until it is ready and stops it when the current node ends (the
// suite, when BeforeSuite serves). From then on o's turns go through it.
func (o *openClaw) serve(ctx context.Context, tune ...func(cfg map[string]any)) *servedGateway {
	GinkgoHelper()
	b, err := os.ReadFile(o.configPath())
	Expect(err).NotTo(HaveOccurred())
	var cfg map[string]any
	Expect(json.Unmarshal(b, &cfg)).To(Succeed())
	port, err := testutil.FreePort()
	Expect(err).NotTo(HaveOccurred())
	// Loopback only and no auth: the suite's network namespace has nothing
	// else, and the clients are the suite's own processes.
	cfg["gateway"] = map[string]any{"mode": "local", "port": port, "bind": "loopback", "auth": map[string]any{"mode": "none"}}
	for _, t := range tune {
		t(cfg)
	}
	home := &openClaw{tools: o.tools, tarball: o.tarball, home: GinkgoT().TempDir(), identity: o.identity}
	home.install(cfg)

	// env -i: the gateway gets OpenClaw's quiet environment and nothing of
	// the test's own (StartProcess adds it, env drops it again).
	args := append([]string{"-i"}, home.environ()...)
	args = append(args, filepath.Join(o.tools, "bin", "openclaw"), "gateway", "run",
		"--allow-unconfigured", "--auth", "none", "--bind", "loopback", "--port", strconv.Itoa(port))
	proc, err := testutil.StartProcess("openclaw-gateway", "/usr/bin/env", home.home, nil, args...)
	Expect(err).NotTo(HaveOccurred())
	gw := &servedGateway{client: home, port: port, proc: proc}
	DeferCleanup(func() {
		// SIGTERM, as a service manager stops it; Stop kills its process
		// group after gatewayStop, so nothing it started outlives the suite.
		GinkgoWriter.Println(proc.Stop(gatewayStop))
	})
	// OpenClaw's readiness probe (its gateway's /readyz), not a delay.
	Expect(proc.WaitReady(fmt.Sprintf("http://127.0.0.1:%d/readyz", port), 3*time.Minute)).
		To(Succeed(), "openclaw gateway run:\n%s", proc.Tail(16<<10))
	AddReportEntry("openclaw gateway run: start", proc.Tail(16<<10))
	o.served = gw
	return gw
}

// logSize is where the gateway's console output ends now.
func (g *servedGateway) logSize() int64 {
	GinkgoHelper()
	fi, err := os.Stat(g.proc.LogPath)
	Expect(err).NotTo(HaveOccurred())
	return fi.Size()
}

// logSince is the gateway's console output after offset.
func (g *servedGateway) logSince(offset int64) string {
	GinkgoHelper()
	f, err := os.Open(g.proc.LogPath)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = f.Close() }()
	_, err = f.Seek(offset, io.SeekStart)
	Expect(err).NotTo(HaveOccurred())
	b, err := io.ReadAll(f)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}
