package testutil

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/internal/manager/webhook"
)

// ManagerProcess says how StartManagerProcess runs bin/manager: its webhook
// server on 127.0.0.1:WebhookPort with a self-managed certificate for
// "localhost" kept in a Secret of the operator namespace (copied into
// CertDir), as `make run` does.
type ManagerProcess struct {
	// Name names the process and its log, <LogDir>/<Name>.log.
	Name, Bin, Kubeconfig, LogDir, CertDir string
	WebhookPort                            int
	// LeaderElect runs it as the chart does: one of several replicas, its
	// Lease in the operator namespace.
	LeaderElect bool
	// HarnessNamespaces (nil: the process suites', ManagerProcessArgs).
	HarnessNamespaces []string
	// MetricsAddr, when set, serves the manager's metrics there over plain
	// HTTP (a loopback address); otherwise it serves none.
	MetricsAddr string
	// PprofAddr, when set, serves Go's /debug/pprof/ there (a loopback
	// address), for the benchmarks' heap profiles.
	PprofAddr string
	// Env is more of its environment (NAME=value), after the test's own.
	Env []string
}

// StartManagerProcess starts bin/manager and waits until it is ready (a
// standby is ready once its webhook certificate is).
func StartManagerProcess(m ManagerProcess) (*Process, error) {
	probe, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	args := append([]string{
		"--kubeconfig=" + m.Kubeconfig, "--leader-elect=" + strconv.FormatBool(m.LeaderElect),
		"--leader-election-namespace=" + operatorNamespace, "--metrics-bind-address=0",
		"--health-probe-bind-address=" + probe, "--operator-namespace=" + operatorNamespace,
		"--webhook-cert-mode=self-managed", "--webhook-host=127.0.0.1", "--webhook-port=" + strconv.Itoa(m.WebhookPort),
		"--webhook-dns-name=localhost", "--webhook-cert-dir=" + m.CertDir, "--webhook-cert-dir-from-secret",
	}, ManagerProcessArgs()...)
	if m.HarnessNamespaces != nil {
		// The last of a repeated flag wins.
		args = append(args, "--harness-namespaces="+strings.Join(m.HarnessNamespaces, ","))
	}
	if m.MetricsAddr != "" {
		args = append(args, "--metrics-bind-address="+m.MetricsAddr, "--metrics-secure=false")
	}
	if m.PprofAddr != "" {
		args = append(args, "--pprof-bind-address="+m.PprofAddr)
	}
	p, err := StartProcess(m.Name, m.Bin, m.LogDir, m.Env, args...)
	if err != nil {
		return nil, err
	}
	return p, p.WaitReady("http://"+probe+"/readyz", 90*time.Second)
}

// InstallManagerWebhooks creates the operator namespace and the webhook
// configurations, the API server calling them at base (https://localhost:port,
// the name of the managers' certificate); a manager injects its CA.
func InstallManagerWebhooks(ctx context.Context, env *Env, base string) error {
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}}); err != nil {
		return err
	}
	validating, mutating := webhook.Configurations(webhook.URLClientConfig(base))
	return errors.Join(env.Client.Create(ctx, validating), env.Client.Create(ctx, mutating))
}

// AdminKubeconfig writes a kubeconfig of an administrator (system:masters)
// into work and returns its path, for the processes of a test.
func (e *Env) AdminKubeconfig(work string) (string, error) { return adminKubeconfig(e, work) }
