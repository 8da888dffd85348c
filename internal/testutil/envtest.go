package testutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/openclaw/harness-operator/internal/platform/scheme"
)

// Env is a real etcd and kube-apiserver with the project's CRDs installed,
// and a direct (uncached) client for assertions.
type Env struct {
	env *envtest.Environment
	// Config reaches the API server as an administrator.
	Config *rest.Config
	// Scheme knows client-go's kinds and the harness kinds.
	Scheme *runtime.Scheme
	// Client is a direct client: what it reads is what the API server has.
	Client client.Client

	// The kube-apiserver RestartAPIServer runs in place of envtest's, its
	// flags, and how many it started.
	apiServer *Process
	apiArgs   []string
	restarts  int
}

// StartEnv starts the control plane from KUBEBUILDER_ASSETS (hack/setup-envtest.sh
// builds it; `make test` sets it) with the CRDs of config/crd/bases. A missing
// KUBEBUILDER_ASSETS is an error, never a skip.
func StartEnv() (*Env, error) {
	return StartEnvWith(nil)
}

// StartEnvWith is StartEnv with more kube-apiserver flags (name → value),
// such as a benchmark's --tracing-config-file.
func StartEnvWith(apiServerArgs map[string]string) (*Env, error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, errors.New("KUBEBUILDER_ASSETS must point at the etcd and kube-apiserver binaries: run `make test`, which builds them with hack/setup-envtest.sh")
	}
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	e := &Env{env: &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		// envtest's default (20 s) runs out on a loaded 2-core machine
		// ("timeout waiting for process kube-apiserver to start"), and each
		// retry starts the whole control plane again.
		ControlPlaneStartTimeout: 2 * time.Minute,
	}}
	AdvertiseLoopback(e.env)
	args := e.env.ControlPlane.GetAPIServer().Configure()
	for name, value := range apiServerArgs {
		args.Set(name, value)
	}
	if e.Config, err = e.env.Start(); err != nil {
		return nil, fmt.Errorf("start envtest: %w", err)
	}
	if e.Scheme, err = scheme.New(); err != nil {
		return nil, err
	}
	if e.Client, err = client.New(e.Config, client.Options{Scheme: e.Scheme}); err != nil {
		return nil, fmt.Errorf("create client: %w", err)
	}
	return e, nil
}

// AdvertiseLoopback makes env's kube-apiserver advertise 127.0.0.1. Without
// an advertised address it looks for one on the default route's interface,
// and in the tests' network namespace (loopback only, no default route) it
// refuses to start: "Unable to find suitable network address". A loopback
// address is one the default endpoint reconciler refuses for the kubernetes
// Service ("may not be in the loopback range"); no test reaches the API
// server through that Service, so it keeps no endpoints ("none").
func AdvertiseLoopback(env *envtest.Environment) {
	args := env.ControlPlane.GetAPIServer().Configure()
	args.Set("advertise-address", "127.0.0.1")
	args.Set("endpoint-reconciler-type", "none")
}

// AddUser adds a user the API server authenticates by client certificate
// (e.g. in system:masters) and returns it, for a kubeconfig.
func (e *Env) AddUser(user envtest.User) (*envtest.AuthenticatedUser, error) {
	return e.env.AddUser(user, e.Config)
}

// Stop stops the control plane; a nil Env is fine.
func (e *Env) Stop() error {
	if e == nil {
		return nil
	}
	e.stopAPIServer()
	return e.env.Stop()
}

// moduleRoot is the directory of go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// RunningManager is a controller-runtime manager started by StartManager.
type RunningManager struct {
	cancel context.CancelFunc
	done   chan error
}

// StartManager starts a manager (no metrics, no probes; controller names may
// repeat, so a test can restart it) after setup registers what it runs, and
// waits for its caches.
func StartManager(ctx context.Context, e *Env, setup func(ctrl.Manager) error) (*RunningManager, error) {
	m, err := ctrl.NewManager(e.Config, ctrl.Options{
		Scheme:                 e.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("create manager: %w", err)
	}
	if err := setup(m); err != nil {
		return nil, err
	}
	mctx, cancel := context.WithCancel(ctx)
	rm := &RunningManager{cancel: cancel, done: make(chan error, 1)}
	go func() { rm.done <- m.Start(mctx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	defer syncCancel()
	if !m.GetCache().WaitForCacheSync(syncCtx) {
		cancel()
		return nil, errors.New("manager caches did not sync within 30s")
	}
	return rm, nil
}

// Stop stops the manager and returns what its Start returned.
func (m *RunningManager) Stop() error {
	m.cancel()
	select {
	case err := <-m.done:
		return err
	case <-time.After(30 * time.Second):
		return errors.New("manager did not stop within 30s")
	}
}
