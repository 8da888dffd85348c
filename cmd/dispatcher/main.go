// Command dispatcher runs the turn engine (internal/dispatcher/engine) behind the
// dispatcher's HTTP API (internal/dispatcher/httpapi) over TLS. With the file
// journal it is one active replica, guarded by leader election, that owns
// the journal and the AgentSession journal finalizer (docs/dispatcher-api.md,
// "Session identity, capacity and shutdown"); on PostgreSQL every replica
// serves (sweep.go; leader election keeps the controllers on one).
//
// With the journal only the leader serves the API: the HTTPS listener opens
// once leadership is acquired, the informer caches have synced and
// Engine.Recover has run; a replica that is not leading reports /readyz
// failing. On PostgreSQL every replica opens it once its caches synced and
// its recovery ran. /healthz, /readyz and
// /metrics (controller-runtime's registry) are served on
// --probe-bind-address by every replica (plain HTTP, for the kubelet; a
// failed check answers 500, as controller-runtime's probes do). /metrics
// includes the engine's turn metrics (harness_dispatcher_*: turns,
// fail-closed decisions, time to first partial, duration, tokens) and the
// journal's (harness_dispatcher_journal_*: retention passes, what they
// pruned, each namespace's runs and bytes against its caps, the free bytes of
// its volume). /readyz also fails while the journal's volume has less than
// --journal-min-free-bytes available (diskspace.go).
//
// --store chooses where runs, leases and transcripts are kept (store.go):
// the journal in --journal-dir (the default), or PostgreSQL (postgres.go),
// its connection string read once from the Secret --postgres-secret-name in
// the dispatcher's namespace, its owner id $POD_NAME, /readyz pinging the
// database instead of measuring the journal's volume.
//
// The API's TLS certificate comes from one of three places:
//   - --tls-cert-file/--tls-key-file (e.g. a cert-manager Secret volume),
//     served through controller-runtime's certwatcher, so a replaced pair is
//     picked up without a restart;
//   - --tls-secret-name: a CA and serving certificate for --tls-dns-names kept
//     in that Secret (internal/platform/certs over cert-controller's rotator): the CA
//     survives restarts, the serving certificate is replaced before it expires,
//     and the dispatcher copies the Secret into --tls-cert-dir and serves it
//     through a certwatcher; the API listens only once the certificate exists;
//   - neither (local development): an ECDSA P-256 certificate for
//     --tls-dns-names and --tls-ip-addresses signed by a CA, both generated
//     anew at every start.
//
// `dispatcher model-gateway` runs the model gateway instead (modelgateway.go).
//
// With a self-managed CA its PEM (never a key) is written to --tls-ca-out for
// clients (HARNESS_DISPATCHER_CA); gateways in a cluster trust ca.crt of the
// Secret.
//
// RBAC the dispatcher needs (its ClusterRole, to be generated):
//   - harness.openclaw.dev agentharnesses, runtimepolicies: get, list, watch
//   - harness.openclaw.dev agentsessions: get, list, watch, patch (finalizer)
//   - harness.openclaw.dev agentsessions/status: patch (server-side apply)
//   - harness.openclaw.dev agentsessions/finalizers: update
//   - core namespaces: get, list, watch
//   - core pods: list, watch (label-selected server pods)
//   - core secrets: get (harness token Secrets, read uncached)
//   - authentication.k8s.io tokenreviews: create
//   - authorization.k8s.io subjectaccessreviews: create
//   - coordination.k8s.io leases: get, create, update (leader election;
//     a Role in the Lease's namespace suffices)
//   - core events, events.k8s.io events: create, patch (leader-election events)
//   - in the namespace of --turn-token-secret-name (a Role,
//     config/rbac/dispatcher_turn_token_role.yaml): core secrets get on that
//     Secret, and create (create cannot be limited by name)
//   - with --store=postgres, in the dispatcher's namespace: core secrets get
//     on --postgres-secret-name (the chart's <fullname>-dispatcher-postgres)
//   - with --tls-secret-name, in the Secret's namespace (a Role,
//     config/rbac/dispatcher_tls_role.yaml): core secrets create, list, watch
//     (the rotator's cache watches the namespace's Secrets: list and watch
//     cannot be limited by name), and get, update, patch on that Secret only
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/engine"
	"github.com/openclaw/harness-operator/internal/dispatcher/httpapi"
	"github.com/openclaw/harness-operator/internal/dispatcher/sessionfinalizer"
	"github.com/openclaw/harness-operator/internal/harness/objects"
	"github.com/openclaw/harness-operator/internal/platform/health"
	"github.com/openclaw/harness-operator/internal/platform/kubedirect"
	"github.com/openclaw/harness-operator/internal/platform/netguard"
	harnessscheme "github.com/openclaw/harness-operator/internal/platform/scheme"
	"github.com/openclaw/harness-operator/internal/policy/snapshot"
)

const (
	// leaderElectionID names the dispatcher's leader-election Lease.
	leaderElectionID = "dispatcher.harness.openclaw.dev"
	// readHeaderTimeout bounds reading a request's headers (slowloris).
	readHeaderTimeout = 10 * time.Second
)

// options are the dispatcher's command-line settings.
type options struct {
	bindAddr         string
	probeAddr        string
	leaderElect      bool
	leaderElectionNS string
	store            storeOptions
	journalDir       string
	journalMinFree   int64
	retention        retentionOptions
	tokenAudience    string
	modelGatewayUser string
	limits           limitOptions
	metricsAddr      string
	pprofAddr        string
	insecureMetrics  bool // --metrics-insecure
	shutdownGrace    time.Duration
	activeTurnDelay  time.Duration
	gcInterval       time.Duration
	sweepInterval    time.Duration
	tls              tlsOptions
	turnToken        turnTokenOptions
	externalDial     netguard.Flags

	// skipControllerNameValidation lets several dispatchers run in one
	// process (tests only; no flag).
	skipControllerNameValidation bool
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == modelGatewayCommand {
		os.Exit(modelGatewayMain(os.Args[2:]))
	}
	var opts options
	flag.StringVar(&opts.bindAddr, "bind-address", ":8443", "Address of the HTTPS API.")
	flag.StringVar(&opts.probeAddr, "probe-bind-address", ":8081", "Address of /healthz and /readyz (plain HTTP, unauthenticated: they show only the dispatcher's own checks).")
	flag.StringVar(&opts.metricsAddr, "metrics-bind-address", ":8083", "Address of /metrics: HTTPS, each scrape authenticated and authorized through the API server (get on the non-resource URL /metrics); \"0\" disables it.")
	flag.BoolVar(&opts.insecureMetrics, "metrics-insecure", false, "Serve /metrics over plain HTTP without authentication (local development only).")
	flag.StringVar(&opts.pprofAddr, "pprof-bind-address", "", "Address of Go's /debug/pprof/ profiles: plain HTTP without authentication, for profiling on a developer's machine only; empty (the default) turns it off.")
	flag.BoolVar(&opts.leaderElect, "leader-elect", true, "Elect a leader so only one dispatcher serves at a time (a guard during rollouts).")
	flag.StringVar(&opts.leaderElectionNS, "leader-election-namespace", "", "Namespace of the leader-election Lease (default: the pod's namespace).")
	bindStoreFlags(flag.CommandLine, &opts.store)
	flag.StringVar(&opts.journalDir, "journal-dir", "/var/lib/harness-dispatcher/journal", "With --store=files: directory of the turn journal and transcript mirrors (a ReadWriteOnce volume).")
	bindDiskSpaceFlags(flag.CommandLine, &opts.journalMinFree)
	bindRetentionFlags(flag.CommandLine, &opts.retention)
	bindTurnTokenFlags(flag.CommandLine, &opts.turnToken)
	opts.externalDial.Bind(flag.CommandLine)
	flag.StringVar(&opts.tokenAudience, "token-audience", "", "Audience accepted for bearer tokens besides the API server's own (a token requested for the dispatcher); with --require-token-audience the only one accepted.")
	flag.StringVar(&opts.modelGatewayUser, "model-gateway-user", "", "The model gateway's ServiceAccount user (system:serviceaccount:<namespace>:<name>), the one caller of POST "+wire.ModelGatewayHoldsPath+"; empty (the default): the endpoint refuses everyone (403).")
	bindLimitFlags(flag.CommandLine, &opts.limits)
	bindActiveTurnFlag(flag.CommandLine, &opts.activeTurnDelay)
	flag.DurationVar(&opts.shutdownGrace, "shutdown-grace", 60*time.Second, "Time given to running turns to finish on shutdown.")
	flag.DurationVar(&opts.sweepInterval, "sweep-interval", defaultSweepInterval, "With --store=postgres: how often every replica ends the turns of replicas that died (their session lease expired); such a turn ends within the lease's 30 s plus this.")
	flag.DurationVar(&opts.gcInterval, "gc-interval", engine.DefaultGCInterval, "How often the leader removes the journal state and app-server threads and working directories of AgentSessions that no longer exist (a finalizer removed by hand); also once at start.")
	flag.StringVar(&opts.tls.certFile, "tls-cert-file", "", "Serving certificate (PEM), with --tls-key-file; reloaded when the files change (e.g. a cert-manager Secret volume). Without it and --tls-secret-name: an ephemeral CA and certificate generated at every start (local development only: clients must trust a new CA after each restart).")
	flag.StringVar(&opts.tls.keyFile, "tls-key-file", "", "Private key of --tls-cert-file (PEM).")
	flag.StringVar(&opts.tls.secretName, "tls-secret-name", "", "Keep a self-managed CA and serving certificate in this Secret (keys tls.crt, tls.key, ca.crt, ca.key; created when missing): the CA survives restarts, the certificate is replaced before it expires. Clients trust its ca.crt.")
	flag.StringVar(&opts.tls.secretNS, "tls-secret-namespace", "", "Namespace of --tls-secret-name (default: $POD_NAMESPACE, then --leader-election-namespace).")
	flag.StringVar(&opts.tls.certDir, "tls-cert-dir", "", "With --tls-secret-name: directory the dispatcher copies the Secret's certificate into and serves from (default: a new temporary directory).")
	flag.DurationVar(&opts.tls.certValidity, "tls-cert-validity", 365*24*time.Hour, "With --tls-secret-name: validity of a serving certificate (the CA lives 10 years).")
	flag.DurationVar(&opts.tls.certLookahead, "tls-cert-lookahead", 90*24*time.Hour, "With --tls-secret-name: replace the serving certificate this long before it expires.")
	flag.DurationVar(&opts.tls.certCheckInterval, "tls-cert-check-interval", 12*time.Hour, "With --tls-secret-name: how often the serving certificate is checked for rotation.")
	flag.StringVar(&opts.tls.dnsNames, "tls-dns-names", "localhost", "Comma-separated DNS names of a self-managed certificate (with --tls-secret-name the first is its main name).")
	flag.StringVar(&opts.tls.ipAddresses, "tls-ip-addresses", "127.0.0.1", "Comma-separated IP addresses of the ephemeral certificate (not with --tls-secret-name: its certificates carry DNS names only).")
	flag.StringVar(&opts.tls.caOut, "tls-ca-out", "", "Write the self-managed CA (PEM, no key) here, for clients to trust (HARNESS_DISPATCHER_CA); kept current with --tls-secret-name.")
	zapOpts := zap.Options{Development: false} // JSON logs in production
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()

	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	if err := run(ctrl.SetupSignalHandler(), ctrl.GetConfigOrDie(), opts); err != nil {
		ctrl.Log.Error(err, "dispatcher exited")
		os.Exit(1)
	}
}

// sessionUIDs resolves the AgentSessions of a journal kept by name (before
// sessions were keyed by UID) to the objects that exist now.
func sessionUIDs(ctx context.Context, c client.Reader) func(ns, name string) (string, bool, error) {
	return func(ns, name string) (string, bool, error) {
		s := &v1alpha1.AgentSession{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
			if apierrors.IsNotFound(err) {
				return "", false, nil
			}
			return "", false, err
		}
		return string(s.UID), true, nil
	}
}

// run starts the dispatcher against the API server of cfg and blocks until
// ctx ends and running turns have finished (or --shutdown-grace passed).
func run(ctx context.Context, cfg *rest.Config, opts options) error {
	log := ctrl.Log.WithName("dispatcher")
	cfg = kubedirect.Config(cfg) // every client it builds reaches the API server without a proxy
	if opts.shutdownGrace < 0 {
		return fmt.Errorf("--shutdown-grace must not be negative, got %s", opts.shutdownGrace)
	}
	if err := opts.limits.validate(opts.tokenAudience); err != nil {
		return err
	}
	if err := opts.store.validate(); err != nil {
		return err
	}
	if opts.sweepInterval <= 0 {
		return fmt.Errorf("--sweep-interval must be positive, got %s", opts.sweepInterval)
	}
	activeDelay, err := activeTurnDelay(opts.activeTurnDelay)
	if err != nil {
		return err
	}
	if err := opts.retention.validate(); err != nil {
		return err
	}
	if err := validateMinFree(opts.journalMinFree); err != nil {
		return err
	}
	scheme, err := harnessscheme.New()
	if err != nil {
		return err
	}
	serving, err := newServingTLS(opts.tls, opts.leaderElectionNS, log)
	if err != nil {
		return err
	}
	defer serving.close()

	direct, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("create the Kubernetes client: %w", err)
	}
	// Read directly: the manager does not cache Secrets.
	turnTokens, err := opts.turnToken.load(ctx, direct, opts.leaderElectionNS, log)
	if err != nil {
		return err
	}
	// The model gateway's credentials are sealed with a key derived from
	// the turn-token key: every dispatcher replica and gateway derives the
	// same one, and no Secret of its own is needed.
	credentials, err := credentialKeyOf(turnTokens)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, direct, opts, log)
	if err != nil {
		return err
	}
	defer st.close()

	// Give the API server's graceful shutdown its full grace, plus time for
	// the caches and the leader lease to be released.
	shutdown := opts.shutdownGrace + 15*time.Second
	var lock resourcelock.Interface
	if opts.leaderElect {
		if lock, err = leaderLock(cfg, opts.leaderElectionNS, os.Getenv); err != nil {
			return fmt.Errorf("leader election lock: %w", err)
		}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsOptions(opts),
		HealthProbeBindAddress:        opts.probeAddr,
		PprofBindAddress:              opts.pprofAddr,
		LeaderElection:                opts.leaderElect,
		LeaderElectionID:              leaderElectionID,
		LeaderElectionNamespace:       opts.leaderElectionNS,
		LeaderElectionReleaseOnCancel: true,
		// Held under the pod's name when there is one (leaderlock.go).
		LeaderElectionResourceLockInterface: lock,
		GracefulShutdownTimeout:             &shutdown,
		Controller:                          config.Controller{SkipNameValidation: ptr.To(opts.skipControllerNameValidation)},
		Cache: cache.Options{
			ByObject: map[client.Object]cache.ByObject{
				// The server pods and StatefulSets of harnesses: the engine
				// trusts a pod only when its harness's StatefulSet controls it.
				&corev1.Pod{}:         {Label: objects.ManagedSelector()},
				&appsv1.StatefulSet{}: {Label: objects.ManagedSelector()},
			},
			// Nothing the dispatcher runs reads managedFields (it applies
			// its part of a status from scratch): without them its cache of
			// 10,000 AgentSessions is smaller (docs/benchmarks/operator-scale.md).
			DefaultTransform: cache.TransformStripManagedFields(),
		},
		// Secrets are never cached: the engine reads only the token Secrets
		// of harnesses, through the API reader.
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}

	rotatorName := "dispatcher-cert-rotator"
	if opts.skipControllerNameValidation {
		// cert-controller's controller does not follow the manager's setting.
		rotatorName += "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	if err := serving.addTo(mgr, opts.leaderElect, rotatorName); err != nil {
		return err
	}

	if err := mgr.Add(opts.retention.runnable(st.Store, ctrl.Log.WithName("retention"))); err != nil {
		return fmt.Errorf("add retention: %w", err)
	}

	reader := secretsUncached{Reader: mgr.GetCache(), api: mgr.GetAPIReader()}
	externalDial, err := opts.externalDial.Policy()
	if err != nil {
		return err
	}
	// Each namespace's selection inputs are kept between turns, dropped by
	// the cache's AgentHarness, RuntimePolicy and Namespace events.
	views, err := snapshot.Watch(ctx, mgr.GetCache())
	if err != nil {
		return err
	}
	selectionViews.Store(views)
	eng := engine.New(reader, mgr.GetClient(), st.Store, engine.Options{Logger: ctrl.Log.WithName("engine"), Owner: st.owner,
		ExternalDial: externalDial, SharedStore: st.shared, SelectionViews: views, ActiveTurnDelay: activeDelay,
		APIReader: mgr.GetAPIReader(), ModelCredentials: credentials})
	defer eng.Close()
	if err := (&sessionfinalizer.Reconciler{Client: mgr.GetClient(), Store: st.Store, Engine: eng}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := mgr.Add(&engine.GarbageCollector{Engine: eng, Store: st.Store, Sessions: mgr.GetAPIReader(), Interval: opts.gcInterval}); err != nil {
		return fmt.Errorf("add the garbage collector: %w", err)
	}

	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("create the Kubernetes clientset: %w", err)
	}
	authorizer := httpapi.NewKubeAuthorizer(cs, opts.tokenAudience)
	if opts.limits.requireAudience {
		if err := authorizer.RequireAudience(); err != nil {
			return err
		}
	}
	if err := authorizer.SetMaxTokenLifetime(opts.limits.maxTokenLife); err != nil {
		return err
	}
	handler, err := httpapi.NewHandler(httpapi.Config{
		Engine: eng, Store: st.Store, Sessions: mgr.GetCache(),
		Authorizer:           authorizer,
		TurnTokens:           turnTokens,
		Logger:               ctrl.Log.WithName("api"),
		AuthCacheTTL:         opts.limits.authCacheTTL,
		NegativeAuthCacheTTL: opts.limits.authNegativeTTL,
		UnverifiedRate:       opts.limits.unverifiedRate,
		UnverifiedBurst:      opts.limits.unverifiedBurst,
		RefusedRate:          opts.limits.refusedRate,
		RefusedBurst:         opts.limits.refusedBurst,
		ModelGatewayUser:     opts.modelGatewayUser,
	})
	if err != nil {
		return fmt.Errorf("create the API handler: %w", err)
	}
	api := &apiServer{
		everyReplica: st.shared,
		addr:         opts.bindAddr, tls: serving, handler: handler, grace: opts.shutdownGrace,
		cache: mgr.GetCache(), engine: eng, limits: opts.limits, log: log,
	}
	if err := mgr.Add(api); err != nil {
		return fmt.Errorf("add the API server: %w", err)
	}
	if st.shared {
		if err := mgr.Add(&sweeper{engine: eng, interval: opts.sweepInterval, log: ctrl.Log.WithName("sweep")}); err != nil {
			return fmt.Errorf("add the sweeper: %w", err)
		}
	}

	ready := map[string]healthz.Checker{
		"informers": health.CachesSynced(mgr),
		"api": func(*http.Request) error {
			if !api.serving.Load() {
				return errors.New("the API server is not serving (not leading, no certificate yet, recovering, or shutting down)")
			}
			return nil
		},
	}
	if !st.shared {
		ready["leader"] = leading(mgr, opts.leaderElect)
	}
	maps.Copy(ready, st.ready)
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("add /healthz: %w", err)
	}
	for name, check := range ready {
		if err := mgr.AddReadyzCheck(name, check); err != nil {
			return fmt.Errorf("add /readyz check %s: %w", name, err)
		}
	}

	log.Info("starting dispatcher", append([]any{"leaderElection", opts.leaderElect, "bindAddress", opts.bindAddr,
		"probeBindAddress", opts.probeAddr, "metricsBindAddress", opts.metricsAddr}, storeDescription(opts)...)...)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("run dispatcher: %w", err)
	}
	return nil
}

// metricsOptions serves /metrics on its own listener: over HTTPS and only to
// callers the API server authenticates and authorizes (as the manager's),
// unless --metrics-insecure. The probes stay apart, unauthenticated.
func metricsOptions(opts options) metricsserver.Options {
	addr := opts.metricsAddr
	if addr == "" {
		addr = "0"
	}
	if opts.insecureMetrics {
		return metricsserver.Options{BindAddress: addr}
	}
	return metricsserver.Options{
		BindAddress: addr, SecureServing: true, FilterProvider: filters.WithAuthenticationAndAuthorization,
		// No HTTP/2 (rapid-reset mitigation, as the manager).
		TLSOpts: []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }},
	}
}

// leading is ready once this replica leads (always, without leader election).
func leading(mgr ctrl.Manager, elect bool) healthz.Checker {
	return func(*http.Request) error {
		if !elect {
			return nil
		}
		select {
		case <-mgr.Elected():
			return nil
		default:
			return errors.New("not the leader")
		}
	}
}

// secretsUncached reads Secrets through the API reader and everything else
// through the informer cache.
type secretsUncached struct {
	client.Reader
	api client.Reader
}

// Get implements client.Reader.
func (r secretsUncached) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Secret); ok {
		return r.api.Get(ctx, key, obj, opts...)
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

// List implements client.Reader.
func (r secretsUncached) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*corev1.SecretList); ok {
		return r.api.List(ctx, list, opts...)
	}
	return r.Reader.List(ctx, list, opts...)
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
