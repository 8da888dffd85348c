// Command manager runs the harness-operator controllers (and, once they land,
// the admission webhooks) under leader election.
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/openclaw/harness-operator/controllers/agentharness"
	"github.com/openclaw/harness-operator/controllers/agentsession"
	"github.com/openclaw/harness-operator/controllers/runtimepolicy"
	"github.com/openclaw/harness-operator/internal/manager/webhook"
	"github.com/openclaw/harness-operator/internal/platform/health"
	"github.com/openclaw/harness-operator/internal/platform/kubedirect"
	"github.com/openclaw/harness-operator/internal/platform/netguard"
	harnessscheme "github.com/openclaw/harness-operator/internal/platform/scheme"
)

// options are the manager's command-line settings.
type options struct {
	metricsAddr          string
	secureMetrics        bool
	enableHTTP2          bool
	probeAddr            string
	pprofAddr            string
	leaderElect          bool
	leaderElectionNS     string
	harnessConcurrency   int
	policyConcurrency    int
	sessionConcurrency   int
	gracefulShutdownSecs int
	operatorNamespace    string
	harnessNamespaces    string
	appServerEgress      string
	modelGateway         modelGatewayOptions
	// externalDial is the dial policy of external app-servers (and its
	// --allow-insecure-loopback-external, which admission applies too).
	externalDial netguard.Flags
	webhook      webhookOptions
	// skipNameValidation lets tests run several managers in one process.
	skipNameValidation bool
}

// modelGatewayOptions say where the model gateway is, for harnesses with
// spec.modelGateway (agentharness.ModelGatewaySettings).
type modelGatewayOptions struct {
	url, caSecret, namespace, podLabels string
	port                                int
}

// webhookOptions are the admission webhook server's settings.
type webhookOptions struct {
	mode   string // self-managed | cert-manager | disabled
	issuer string // cert-manager mode: Issuer/<name> or ClusterIssuer/<name>
	host   string
	port   int
	certs  webhook.CertOptions
	// accessReviewTTL: how long an allowed review of a requester's rights is reused.
	accessReviewTTL time.Duration
}

func main() {
	var opts options
	flag.StringVar(&opts.metricsAddr, "metrics-bind-address", ":8443", "Address of the metrics endpoint (HTTPS unless --metrics-secure=false); \"0\" disables it.")
	flag.BoolVar(&opts.secureMetrics, "metrics-secure", true, "Serve metrics over HTTPS, authenticated and authorized through the API server.")
	flag.BoolVar(&opts.enableHTTP2, "enable-http2", false, "Enable HTTP/2 on the metrics server (off by default: HTTP/2 rapid-reset mitigation).")
	flag.StringVar(&opts.probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	flag.StringVar(&opts.pprofAddr, "pprof-bind-address", "", "Address of Go's /debug/pprof/ profiles: plain HTTP without authentication, for profiling on a developer's machine only; empty (the default) turns it off.")
	flag.BoolVar(&opts.leaderElect, "leader-elect", true, "Elect a leader so only one manager replica reconciles at a time.")
	flag.StringVar(&opts.leaderElectionNS, "leader-election-namespace", "", "Namespace of the leader-election Lease (default: the pod's namespace).")
	flag.IntVar(&opts.harnessConcurrency, "agentharness-concurrency", 4, "Maximum parallel reconciles of AgentHarness objects.")
	flag.IntVar(&opts.policyConcurrency, "runtimepolicy-concurrency", 1, "Maximum parallel reconciles of RuntimePolicy objects (policies interact; keep low).")
	flag.IntVar(&opts.sessionConcurrency, "agentsession-concurrency", 8, "Maximum parallel reconciles of AgentSession objects.")
	flag.IntVar(&opts.gracefulShutdownSecs, "graceful-shutdown-seconds", 30, "Time given to running reconciles on shutdown.")
	flag.StringVar(&opts.operatorNamespace, "operator-namespace", envOr("POD_NAMESPACE", agentharness.DefaultOperatorNamespace), "Namespace of the operator's manager and dispatcher pods: app-server NetworkPolicies admit them from there (default: $POD_NAMESPACE).")
	flag.StringVar(&opts.harnessNamespaces, "harness-namespaces", "", "Comma-separated namespaces AgentHarnesses may live in. The manager caches Secrets only there (and in --operator-namespace), so its Secret access is granted by namespaced Roles, and admission refuses harnesses elsewhere. Empty: no namespace may hold AgentHarnesses.")
	opts.externalDial.Bind(flag.CommandLine)
	flag.StringVar(&opts.appServerEgress, "app-server-egress-cidrs", "", "Comma-separated CIDRs (e.g. the model provider's) that managed app-server pods may reach, besides the cluster DNS, through their NetworkPolicy. Empty: the public internet, never private, shared, link-local (cloud metadata) or loopback ranges.")
	flag.StringVar(&opts.modelGateway.url, "model-gateway-url", "", "The model gateway's https address (scheme, host and port) as app-server pods reach it, e.g. its Service's. Harnesses with spec.modelGateway get it as their model provider (<url>/v1, no credential); empty: such harnesses get no workload change and report Ready False, ModelGatewayNotConfigured.")
	flag.StringVar(&opts.modelGateway.caSecret, "model-gateway-ca-secret", "", "A Secret in --operator-namespace whose ca.crt (PEM) the app-server pods of harnesses with spec.modelGateway trust for the gateway, e.g. the dispatcher's TLS Secret. Empty: the pods trust only their image's roots.")
	flag.StringVar(&opts.modelGateway.namespace, "model-gateway-namespace", "", "Namespace of the model gateway's pods, which the app-server pods' NetworkPolicy lets them reach (default: --operator-namespace).")
	flag.StringVar(&opts.modelGateway.podLabels, "model-gateway-pod-labels", "app.kubernetes.io/name=harness-operator,app.kubernetes.io/component=model-gateway", "Comma-separated key=value labels that select the model gateway's pods in --model-gateway-namespace.")
	flag.IntVar(&opts.modelGateway.port, "model-gateway-port", 0, "The model gateway pods' port that app-server pods may reach (default: the port of --model-gateway-url, else 443).")
	flag.StringVar(&opts.webhook.mode, "webhook-cert-mode", "self-managed", "Webhook certificates: self-managed (a CA and serving certificate in a Secret, rotated by the manager), cert-manager (certificates mounted from a cert-manager Secret; nothing rotated here) or disabled (no webhooks: only CRD validation applies).")
	flag.StringVar(&opts.webhook.issuer, "webhook-cert-manager-issuer", "", "With --webhook-cert-mode=cert-manager: the issuer of the serving certificate, Issuer/<name> or ClusterIssuer/<name> (default: a self-signed Issuer the manager creates).")
	flag.StringVar(&opts.webhook.host, "webhook-host", "", "Address the webhook server binds (default: all).")
	flag.IntVar(&opts.webhook.port, "webhook-port", 9443, "Port of the webhook server.")
	flag.StringVar(&opts.webhook.certs.CertDir, "webhook-cert-dir", filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs"), "Directory of the webhook server's tls.crt and tls.key.")
	flag.StringVar(&opts.webhook.certs.SecretNamespace, "webhook-secret-namespace", "", "Namespace of the webhook certificate Secret (default: --operator-namespace).")
	flag.StringVar(&opts.webhook.certs.SecretName, "webhook-secret-name", "harness-operator-webhook-tls", "Name of the webhook certificate Secret.")
	flag.StringVar(&opts.webhook.certs.DNSName, "webhook-dns-name", "", "DNS name the API server uses for the webhook (the Service's <name>.<namespace>.svc, or localhost outside a cluster).")
	flag.DurationVar(&opts.webhook.certs.ServerCertValidity, "webhook-cert-validity", 365*24*time.Hour, "Validity of a self-managed serving certificate.")
	flag.DurationVar(&opts.webhook.certs.Lookahead, "webhook-cert-lookahead", 90*24*time.Hour, "Replace a self-managed serving certificate this long before it expires.")
	flag.DurationVar(&opts.webhook.certs.RotationCheckInterval, "webhook-cert-check-interval", 12*time.Hour, "How often self-managed certificates are checked for rotation.")
	flag.DurationVar(&opts.webhook.accessReviewTTL, strings.TrimPrefix(webhook.AccessReviewCacheTTLFlag, "--"), webhook.DefaultAccessReviewCacheTTL, "How long AgentHarness admission reuses an allowed SubjectAccessReview of the same user and question (0 to 30s; 0 reuses none). A revoked right still admits for at most this long.")
	flag.BoolVar(&opts.webhook.certs.SyncCertDirFromSecret, "webhook-cert-dir-from-secret", false, "Copy the certificate Secret into --webhook-cert-dir (for a manager running outside a cluster, where no kubelet mounts the Secret).")
	zapOpts := zap.Options{Development: false} // JSON logs in production
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()

	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	if err := run(ctrl.SetupSignalHandler(), ctrl.GetConfigOrDie(), opts); err != nil {
		ctrl.Log.Error(err, "manager exited")
		os.Exit(1)
	}
}

// run starts the manager against the API server of cfg and blocks until ctx ends.
func run(ctx context.Context, cfg *rest.Config, opts options) error {
	cfg = kubedirect.Config(cfg) // every client it builds reaches the API server without a proxy
	scheme, err := harnessscheme.New()
	if err != nil {
		return err
	}
	for name, n := range map[string]int{
		"--agentharness-concurrency":  opts.harnessConcurrency,
		"--runtimepolicy-concurrency": opts.policyConcurrency,
		"--agentsession-concurrency":  opts.sessionConcurrency,
	} {
		if n < 1 {
			return fmt.Errorf("%s must be at least 1, got %d", name, n)
		}
	}

	var tlsOpts []func(*tls.Config)
	if !opts.enableHTTP2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	metricsOpts := metricsserver.Options{
		BindAddress:   opts.metricsAddr,
		SecureServing: opts.secureMetrics,
		TLSOpts:       tlsOpts,
	}
	if opts.secureMetrics {
		metricsOpts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}

	switch webhook.Mode(opts.webhook.mode) {
	case webhook.ModeSelfManaged, webhook.ModeCertManager, webhook.ModeDisabled:
	default:
		return fmt.Errorf("--webhook-cert-mode must be self-managed, cert-manager or disabled, got %q", opts.webhook.mode)
	}

	harnessNamespaces, err := parseNamespaces("--harness-namespaces", opts.harnessNamespaces)
	if err != nil {
		return err
	}
	externalDial, err := opts.externalDial.Policy()
	if err != nil {
		return err
	}
	gatewayLabels, err := labels.ConvertSelectorToLabelsMap(opts.modelGateway.podLabels)
	if err != nil {
		return fmt.Errorf("--model-gateway-pod-labels: %w", err)
	}
	if opts.modelGateway.port < 0 || opts.modelGateway.port > 65535 {
		return fmt.Errorf("--model-gateway-port %d is out of range", opts.modelGateway.port)
	}
	if opts.operatorNamespace == "" {
		// An empty namespace in the Secret cache's list would mean every namespace.
		return fmt.Errorf("--operator-namespace must not be empty")
	}
	// Secrets are cached only in the harness namespaces and the operator
	// namespace (the webhook certificate Secret lives there), never
	// cluster-wide: no harness namespaces leaves just the operator namespace.
	secretNamespaces := map[string]cache.Config{opts.operatorNamespace: {}}
	for _, ns := range harnessNamespaces {
		secretNamespaces[ns] = cache.Config{}
	}
	cacheOpts := cacheOptions(secretNamespaces)

	shutdown := time.Duration(opts.gracefulShutdownSecs) * time.Second
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Cache: cacheOpts,
		// Several managers run in one test process; names stay unique per manager.
		Controller: config.Controller{SkipNameValidation: ptr.To(opts.skipNameValidation)},
		WebhookServer: ctrlwebhook.NewServer(ctrlwebhook.Options{
			Host: opts.webhook.host, Port: opts.webhook.port, CertDir: opts.webhook.certs.CertDir,
			TLSOpts: append(slices.Clip(tlsOpts), webhook.CountTLSHandshakes),
		}),
		Scheme:                        scheme,
		Metrics:                       metricsOpts,
		HealthProbeBindAddress:        opts.probeAddr,
		PprofBindAddress:              opts.pprofAddr,
		LeaderElection:                opts.leaderElect,
		LeaderElectionID:              "manager.harness.openclaw.dev",
		LeaderElectionNamespace:       opts.leaderElectionNS,
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       &shutdown,
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}

	reconcilers := []interface{ SetupWithManager(ctrl.Manager) error }{
		&agentharness.Reconciler{Client: mgr.GetClient(), MaxConcurrentReconciles: opts.harnessConcurrency, OperatorNamespace: opts.operatorNamespace, HarnessNamespaces: harnessNamespaces,
			AppServerEgressCIDRs: strings.FieldsFunc(opts.appServerEgress, func(r rune) bool { return r == ',' || r == ' ' }),
			ExternalDial:         externalDial,
			ModelGateway: agentharness.ModelGatewaySettings{URL: opts.modelGateway.url, CASecret: opts.modelGateway.caSecret,
				Namespace: opts.modelGateway.namespace, PodLabels: gatewayLabels, Port: int32(opts.modelGateway.port)}},
		&runtimepolicy.Reconciler{Client: mgr.GetClient(), MaxConcurrentReconciles: opts.policyConcurrency},
		&agentsession.Reconciler{Client: mgr.GetClient(), MaxConcurrentReconciles: opts.sessionConcurrency},
	}
	for _, r := range reconcilers {
		if err := r.SetupWithManager(mgr); err != nil {
			return err
		}
	}

	if opts.webhook.certs.SecretNamespace == "" {
		opts.webhook.certs.SecretNamespace = opts.operatorNamespace
	}
	if opts.webhook.mode != string(webhook.ModeDisabled) {
		for flagName, v := range map[string]string{"--webhook-secret-namespace": opts.webhook.certs.SecretNamespace, "--webhook-dns-name": opts.webhook.certs.DNSName} {
			if v == "" {
				return fmt.Errorf("%s is required with --webhook-cert-mode=%s", flagName, opts.webhook.mode)
			}
		}
	}
	webhooksReady, err := webhook.Install(mgr, webhook.InstallOptions{
		Mode: webhook.Mode(opts.webhook.mode), Certs: opts.webhook.certs, Issuer: opts.webhook.issuer, HarnessNamespaces: harnessNamespaces,
		AllowInsecureLoopbackExternal: opts.externalDial.AllowInsecureLoopback, AccessReviewCacheTTL: opts.webhook.accessReviewTTL,
	})
	if err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("webhooks", webhooksReady); err != nil {
		return fmt.Errorf("add webhook readiness check: %w", err)
	}

	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("add health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("informers", health.CachesSynced(mgr)); err != nil {
		return fmt.Errorf("add readiness check: %w", err)
	}

	ctrl.Log.Info("starting manager", "leaderElection", opts.leaderElect, "metrics", opts.metricsAddr)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	return nil
}

// parseNamespaces splits a comma-separated list of namespace names, refusing
// anything that is not a DNS-1123 label.
func parseNamespaces(flagName, list string) ([]string, error) {
	var out []string
	for _, ns := range strings.Split(list, ",") {
		ns = strings.TrimSpace(ns)
		if ns == "" {
			continue
		}
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return nil, fmt.Errorf("%s: %q is not a namespace name: %s", flagName, ns, strings.Join(errs, "; "))
		}
		if !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	return out, nil
}

// envOr returns the environment variable's value, or def when it is unset.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
