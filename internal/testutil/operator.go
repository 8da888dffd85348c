package testutil

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/openclaw/harness-operator/internal/platform/netguard"
)

// operatorNamespace is the manager's --operator-namespace in an Operator.
const operatorNamespace = "harness-operator-system"

// ProcessSuiteNamespaces is how many namespaces a suite that runs the manager
// as a process may hold AgentHarnesses in: ProcessNamespace(1…) are its
// --harness-namespaces.
const ProcessSuiteNamespaces = 32

// processNamespacePrefix begins the names ProcessNamespace hands out.
const processNamespacePrefix = "tenant"

// ProcessNamespace is the n-th (from 1) namespace the manager of a process
// suite serves (ManagerProcessArgs lists them all).
func ProcessNamespace(n int) string {
	if n > ProcessSuiteNamespaces {
		panic(fmt.Sprintf("namespace %d is beyond testutil.ProcessSuiteNamespaces (%d): raise it", n, ProcessSuiteNamespaces))
	}
	return SuiteNamespace(processNamespacePrefix, n)
}

// ManagerProcessArgs are the flags that make a manager process serve a
// process suite: its harness namespaces, and the loopback app-servers the
// suites run as external servers (development mode).
func ManagerProcessArgs() []string {
	return []string{
		"--harness-namespaces=" + strings.Join(SuiteNamespaces(processNamespacePrefix)[:ProcessSuiteNamespaces], ","),
		"--" + netguard.AllowInsecureLoopbackFlag,
	}
}

// DispatcherProcessArgs are the flags that let a dispatcher process dial the
// suites' loopback app-servers.
func DispatcherProcessArgs() []string {
	return []string{"--" + netguard.AllowInsecureLoopbackFlag}
}

// Operator is the system as it is deployed, each part its own OS process on
// loopback: envtest's etcd and kube-apiserver, bin/manager (controllers and
// admission webhooks reached by URL, as `make run` does) and bin/dispatcher
// (self-managed ephemeral TLS). Stop ends them.
type Operator struct {
	Env *Env
	// Kubeconfig is an admin's (system:masters) kubeconfig file.
	Kubeconfig string
	Manager    *Process
	Dispatcher *Process
	// APIBase is https://<addr> of the dispatcher's API, ProbeAddr its
	// probe listener; HTTP trusts only the CA the dispatcher wrote.
	APIBase, ProbeAddr string
	HTTP               *http.Client
	// ManagerMetrics is http://<addr>/metrics of the manager (plain HTTP,
	// loopback).
	ManagerMetrics string
	// ManagerPprof is http://<addr>/debug/pprof of the manager (plain HTTP,
	// loopback).
	ManagerPprof string
}

// StartOperator builds and starts the manager and the dispatcher against a
// new envtest control plane, in work (logs, journal, certificates).
// dispatcherArgs come after the suite's own flags (--kubeconfig,
// --bind-address, --probe-bind-address, --journal-dir, --tls-ca-out,
// --leader-elect=false, --metrics-bind-address=0): a test adds what it
// needs (--token-audience, …) and may override them.
// On an error what was started is stopped again; o, when not nil, still
// names the processes and their logs.
func StartOperator(work string, dispatcherArgs ...string) (o *Operator, err error) {
	return StartOperatorWith(work, OperatorOptions{DispatcherArgs: dispatcherArgs})
}

// OperatorOptions are StartOperatorWith's settings.
type OperatorOptions struct {
	// DispatcherArgs come after the suite's own dispatcher flags.
	DispatcherArgs []string
	// APIServerArgs are more kube-apiserver flags (StartEnvWith).
	APIServerArgs map[string]string
	// ManagerEnv is more of the manager's environment (NAME=value), such
	// as a benchmark's GOMEMLIMIT.
	ManagerEnv []string
}

// StartOperatorWith is StartOperator with the control plane's flags too.
func StartOperatorWith(work string, opts OperatorOptions) (o *Operator, err error) {
	binDir, logDir := filepath.Join(work, "bin"), filepath.Join(work, "logs")
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		return nil, err
	}
	built := make(chan error, 1)
	go func() { built <- BuildBinaries(binDir, "./cmd/manager", "./cmd/dispatcher") }()
	env, err := StartEnvWith(opts.APIServerArgs)
	if err != nil {
		<-built
		return nil, err
	}
	o = &Operator{Env: env}
	defer func() {
		if err != nil {
			err = errors.Join(err, o.Stop())
		}
	}()
	if err := <-built; err != nil {
		return o, err
	}
	if o.Kubeconfig, err = adminKubeconfig(env, work); err != nil {
		return o, err
	}
	if o.Manager, o.ManagerMetrics, o.ManagerPprof, err = startManager(env, o.Kubeconfig, binDir, logDir, work, opts.ManagerEnv); err != nil {
		return o, err
	}
	return o, o.startDispatcher(binDir, logDir, work, opts.DispatcherArgs)
}

func adminKubeconfig(env *Env, work string) (string, error) {
	admin, err := env.AddUser(envtest.User{Name: "operator-admin", Groups: []string{"system:masters"}})
	if err != nil {
		return "", err
	}
	kc, err := admin.KubeConfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(work, "kubeconfig")
	return path, os.WriteFile(path, kc, 0o600)
}

// startManager runs bin/manager with its webhooks on loopback, registered by
// URL, and its metrics on loopback (the URL returned); the manager injects
// its CA into both webhook configurations. Its Go profiles are served on
// loopback too (the pprof URL returned).
func startManager(env *Env, kubeconfig, binDir, logDir, work string, managerEnv []string) (p *Process, metricsURL, pprofURL string, err error) {
	ctx := context.Background()
	port, err := FreePort()
	if err != nil {
		return nil, "", "", err
	}
	metrics, err := FreeAddr()
	if err != nil {
		return nil, "", "", err
	}
	pprof, err := FreeAddr()
	if err != nil {
		return nil, "", "", err
	}
	if err := InstallManagerWebhooks(ctx, env, fmt.Sprintf("https://localhost:%d", port)); err != nil {
		return nil, "", "", err
	}
	p, err = StartManagerProcess(ManagerProcess{Name: "manager", Bin: filepath.Join(binDir, "manager"), Kubeconfig: kubeconfig,
		LogDir: logDir, CertDir: filepath.Join(work, "webhook-certs"), WebhookPort: port, MetricsAddr: metrics, PprofAddr: pprof, Env: managerEnv})
	if err != nil {
		return p, "", "", err
	}
	return p, "http://" + metrics + "/metrics", "http://" + pprof + "/debug/pprof", WaitWebhooksServing(ctx, env.Client, 30*time.Second)
}

func (o *Operator) startDispatcher(binDir, logDir, work string, extra []string) error {
	bind, err := FreeAddr()
	if err != nil {
		return err
	}
	if o.ProbeAddr, err = FreeAddr(); err != nil {
		return err
	}
	caFile := filepath.Join(work, "dispatcher-ca.pem")
	args := append([]string{
		"--kubeconfig=" + o.Kubeconfig, "--bind-address=" + bind, "--probe-bind-address=" + o.ProbeAddr,
		"--journal-dir=" + filepath.Join(work, "journal"), "--tls-ca-out=" + caFile, "--leader-elect=false",
		"--turn-token-secret-namespace=" + operatorNamespace,
		"--shutdown-grace=5s",
		// No metrics listener unless extra asks for one (the last flag
		// wins): the default port is one per machine, and suites run at once.
		"--metrics-bind-address=0",
	}, append(DispatcherProcessArgs(), extra...)...)
	if o.Dispatcher, err = StartProcess("dispatcher", filepath.Join(binDir, "dispatcher"), logDir, nil, args...); err != nil {
		return err
	}
	if err := o.Dispatcher.WaitReady("http://"+o.ProbeAddr+"/readyz", 90*time.Second); err != nil {
		return err
	}
	tr, err := TrustingTransport(caFile)
	if err != nil {
		return fmt.Errorf("--tls-ca-out: %w", err)
	}
	o.APIBase = "https://" + bind
	o.HTTP = &http.Client{Transport: tr}
	return nil
}

// Logs are the tails of the dispatcher's and the manager's logs, for a
// failure message; "" for a nil Operator (StartOperator failed early).
func (o *Operator) Logs() string {
	if o == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range []*Process{o.Dispatcher, o.Manager} {
		if p != nil {
			fmt.Fprintf(&b, "\n----- %s log (%s) -----\n%s", p.Name, p.LogPath, p.Tail(16<<10))
		}
	}
	return b.String()
}

// Stop stops the dispatcher, the manager and the control plane, and
// returns what the processes' ends were, with any unexpected exit.
func (o *Operator) Stop() error {
	var errs []error
	for _, p := range []*Process{o.Dispatcher, o.Manager} {
		if p != nil {
			p.Stop(15 * time.Second)
			errs = append(errs, p.Unexpected())
		}
	}
	if o.HTTP != nil {
		o.HTTP.CloseIdleConnections()
	}
	if o.Env != nil {
		errs = append(errs, o.Env.Stop())
	}
	return errors.Join(errs...)
}
