package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/openclaw/harness-operator/internal/testutil"
)

// processEnv is what dispatcher processes of one test share: the dispatcher
// binary, envtest's API server with an admin kubeconfig, and the fixture's
// Codex, stub model, sessions and gateway token.
type processEnv struct {
	t          *testing.T
	fx         *turnFixture
	work       string
	bin        string
	kubeconfig string
	ns         string
}

// replica is one dispatcher process.
type replica struct {
	name string
	proc *testutil.Process
	base string // https://…/v1/namespaces/<ns>/agentsessions
	hc   *http.Client
}

func newProcessEnv(ctx context.Context, t *testing.T, ns string, opts fixtureOptions, sessions ...string) *processEnv {
	t.Helper()
	work := t.TempDir()
	binDir := filepath.Join(work, "bin")
	built := make(chan error, 1)
	go func() { built <- testutil.BuildBinaries(binDir, "./cmd/dispatcher") }()
	fx := newTurnFixtureWith(ctx, t, ns, opts, sessions...)
	admin, err := fx.env.AddUser(envtest.User{Name: ns + "-admin", Groups: []string{"system:masters"}})
	must(t, err)
	kc, err := admin.KubeConfig()
	must(t, err)
	kubeconfig := filepath.Join(work, "kubeconfig")
	must(t, os.WriteFile(kubeconfig, kc, 0o600))
	must(t, <-built)
	return &processEnv{t: t, fx: fx, work: work, bin: filepath.Join(binDir, "dispatcher"), kubeconfig: kubeconfig, ns: ns}
}

// start runs a dispatcher named name (its POD_NAME) as the chart's
// Deployment does (leader election on) with the store's flags, and waits
// until it is ready: serving, leader or not.
func (e *processEnv) start(name string, storeArgs ...string) *replica {
	e.t.Helper()
	return e.startInstance(name, name, storeArgs...)
}

// startInstance is start with the process's log in <work>/<instance>.log: a
// replica restarted under its name keeps its earlier logs.
func (e *processEnv) startInstance(name, instance string, storeArgs ...string) *replica {
	t := e.t
	t.Helper()
	bind, probe, caFile := freeAddr(t), freeAddr(t), filepath.Join(e.work, name+"-ca.pem")
	args := append([]string{
		"--kubeconfig=" + e.kubeconfig, "--bind-address=" + bind, "--probe-bind-address=" + probe,
		"--metrics-bind-address=0", "--tls-ca-out=" + caFile, "--token-audience=" + audience,
		"--leader-elect=true", "--leader-election-namespace=default", "--shutdown-grace=30s",
	}, storeArgs...)
	p, err := testutil.StartProcess(instance, e.bin, e.work, []string{podNameEnv + "=" + name}, append(args, testutil.DispatcherProcessArgs()...)...)
	must(t, err)
	t.Cleanup(func() { p.Stop(45 * time.Second) })
	must(t, p.WaitReady("http://"+probe+"/readyz?verbose", 90*time.Second))
	return &replica{name: name, proc: p, base: "https://" + bind + "/v1/namespaces/" + e.ns + "/agentsessions", hc: trustingClient(t, caFile)}
}
