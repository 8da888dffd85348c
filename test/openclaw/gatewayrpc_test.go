//go:build e2e

package openclaw

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// gatewayRPC is OpenClaw's own gateway client (the function `openclaw
// gateway call` runs) in one Node process for a spec's calls
// (testdata/gateway-rpc.mjs): the CLI loads all of OpenClaw for each call,
// which took seconds per call.
type gatewayRPC struct {
	mu     sync.Mutex // one call at a time: the answers come in order
	stdin  io.WriteCloser
	answer *bufio.Scanner
	out    printed // what the client printed besides its answers
}

// printed is what a process printed, written from two goroutines.
type printed struct {
	mu sync.Mutex
	b  strings.Builder
}

func (p *printed) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.b.Write(b)
}

func (p *printed) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.b.String()
}

// rpcMarker starts each answer line of gateway-rpc.mjs.
const rpcMarker = "@@gateway-rpc "

// call calls method with params on the gateway, as `openclaw gateway call
// <method> --params <json> --json` does, and returns the answer's JSON.
// The client starts with the spec's first call and ends with the spec.
func (g *servedGateway) call(ctx context.Context, method string, params any) string {
	GinkgoHelper()
	if g.rpc == nil {
		g.rpc = startGatewayRPC(g)
		DeferCleanup(func() { g.rpc.stop(); g.rpc = nil })
	}
	return g.rpc.call(ctx, method, params)
}

func startGatewayRPC(g *servedGateway) *gatewayRPC {
	GinkgoHelper()
	sdk := "file://" + filepath.Join(g.client.tools, "node_modules", "openclaw", "dist", "plugin-sdk", "gateway-runtime.js")
	cmd := exec.Command(filepath.Join(g.client.tools, "bin", "node"), filepath.Join(repoRoot, "test", "openclaw", "testdata", "gateway-rpc.mjs"), sdk)
	cmd.Env = g.client.environ()
	cmd.Dir = g.client.home
	r := &gatewayRPC{}
	var err error
	r.stdin, err = cmd.StdinPipe()
	Expect(err).NotTo(HaveOccurred())
	stdout, err := cmd.StdoutPipe()
	Expect(err).NotTo(HaveOccurred())
	cmd.Stderr = &r.out
	Expect(cmd.Start()).To(Succeed())
	r.answer = bufio.NewScanner(stdout)
	r.answer.Buffer(make([]byte, 64<<10), 64<<20)
	go func() { _ = cmd.Wait() }()
	return r
}

func (r *gatewayRPC) call(ctx context.Context, method string, params any) string {
	GinkgoHelper()
	req, err := json.Marshal(map[string]any{"method": method, "params": params})
	Expect(err).NotTo(HaveOccurred())
	r.mu.Lock()
	defer r.mu.Unlock()
	type answer struct {
		Result json.RawMessage `json:"result"`
		Error  string          `json:"error"`
	}
	done := make(chan answer, 1)
	go func() {
		for r.answer.Scan() {
			line, ok := strings.CutPrefix(r.answer.Text(), rpcMarker)
			if !ok {
				_, _ = r.out.Write([]byte(r.answer.Text() + "\n"))
				continue
			}
			var a answer
			if err := json.Unmarshal([]byte(line), &a); err != nil {
				a.Error = fmt.Sprintf("gateway-rpc.mjs answered %q: %v", line, err)
			}
			done <- a
			return
		}
		done <- answer{Error: fmt.Sprintf("gateway-rpc.mjs ended: %v", r.answer.Err())}
	}()
	_, err = r.stdin.Write(append(req, '\n'))
	Expect(err).NotTo(HaveOccurred(), "gateway-rpc.mjs:\n%s", r.out.String())
	var a answer
	select {
	case a = <-done:
	case <-ctx.Done():
		Fail(fmt.Sprintf("gateway call %s: %v\n%s", method, ctx.Err(), r.out.String()))
	}
	entry := fmt.Sprintf("gateway call %s %s\n--- answer\n%s%s\n--- the client printed\n%s", method, req, a.Result, a.Error, r.out.String())
	reporting.Lock()
	AddReportEntry("openclaw gateway call", entry)
	reporting.Unlock()
	Expect(a.Error).To(BeEmpty(), "%s", entry)
	return string(a.Result)
}

func (r *gatewayRPC) stop() { _ = r.stdin.Close() }
