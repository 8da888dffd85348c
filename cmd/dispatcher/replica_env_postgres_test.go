//go:build postgres

package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/pgtest"
)

// replicaEnv is what dispatcher replicas on one PostgreSQL share: the
// dispatcher binary, envtest's API server with the connection string in a
// Secret, the fixture's Codex, stub model, sessions and gateway token.
type replicaEnv struct {
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

func newReplicaEnv(ctx context.Context, t *testing.T, ns string, sessions ...string) *replicaEnv {
	t.Helper()
	work := t.TempDir()
	binDir := filepath.Join(work, "bin")
	built := make(chan error, 1)
	go func() { built <- testutil.BuildBinaries(binDir, "./cmd/dispatcher") }()
	pg := pgtest.Start(t)
	fx := newTurnFixture(ctx, t, ns, sessions...)
	admin, err := fx.env.AddUser(envtest.User{Name: ns + "-admin", Groups: []string{"system:masters"}})
	must(t, err)
	kc, err := admin.KubeConfig()
	must(t, err)
	kubeconfig := filepath.Join(work, "kubeconfig")
	must(t, os.WriteFile(kubeconfig, kc, 0o600))
	must(t, fx.k8s.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "dispatcher-db"},
		Data:       map[string][]byte{"uri": []byte(pg.NewDatabase(t))},
	}))
	must(t, <-built)
	return &replicaEnv{t: t, fx: fx, work: work, bin: filepath.Join(binDir, "dispatcher"), kubeconfig: kubeconfig, ns: ns}
}

// start runs a replica named name (its POD_NAME), as the chart's Deployment
// does (leader election on, --store=postgres), sweeping every second, and
// waits until it is ready: serving, leader or not.
func (e *replicaEnv) start(name string) *replica {
	t := e.t
	t.Helper()
	bind, probe, caFile := freeAddr(t), freeAddr(t), filepath.Join(e.work, name+"-ca.pem")
	p, err := testutil.StartProcess(name, e.bin, e.work,
		[]string{podNameEnv + "=" + name}, append([]string{
			"--kubeconfig=" + e.kubeconfig, "--bind-address=" + bind, "--probe-bind-address=" + probe,
			"--metrics-bind-address=0", "--tls-ca-out=" + caFile, "--token-audience=" + audience,
			"--leader-elect=true", "--leader-election-namespace=default", "--shutdown-grace=30s",
			"--store=postgres", "--postgres-secret-name=dispatcher-db", "--sweep-interval=1s",
		}, testutil.DispatcherProcessArgs()...)...)
	must(t, err)
	t.Cleanup(func() { p.Stop(45 * time.Second) })
	must(t, p.WaitReady("http://"+probe+"/readyz?verbose", 90*time.Second))
	return &replica{name: name, proc: p, base: "https://" + bind + "/v1/namespaces/" + e.ns + "/agentsessions", hc: trustingClient(t, caFile)}
}
