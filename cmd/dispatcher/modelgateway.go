package main

// `dispatcher model-gateway` runs the model gateway
// (internal/dispatcher/modelgateway, docs/design/model-gateway.md): the one
// process that holds provider credentials. It is the dispatcher's binary
// in its own Deployment. It never opens the store and runs no controller:
// it asks the dispatcher's holds endpoint whether a credential's turn
// still runs (modelgateway.HoldsClient), reads each harness and its
// credential Secret and keeps them only while a watch of each sees no
// change (modelgateway.WatchedUpstreams), and opens
// credentials with the key derived from the dispatchers' turn-token key,
// which it reads and never creates.
//
// RBAC it needs: get on the turn-token Secret, get and watch on the
// harnesses' credential Secrets and AgentHarnesses in the harness
// namespaces (without watch every request reads both), and,
// with --tls-secret-name, get on that Secret. It creates nothing.

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/openclaw/harness-operator/internal/dispatcher/modelcred"
	"github.com/openclaw/harness-operator/internal/dispatcher/modelgateway"
	"github.com/openclaw/harness-operator/internal/dispatcher/turntoken"
	"github.com/openclaw/harness-operator/internal/platform/kubedirect"
	"github.com/openclaw/harness-operator/internal/platform/netguard"
	harnessscheme "github.com/openclaw/harness-operator/internal/platform/scheme"
)

// modelGatewayCommand is the subcommand's name, the binary's first
// argument.
const modelGatewayCommand = "model-gateway"

// tlsSecretRefresh is how often the gateway reads --tls-secret-name again
// to pick up a rotated certificate (the dispatcher replaces it long before
// it expires).
const tlsSecretRefresh = time.Minute

// modelGatewayOptions are the subcommand's settings.
type modelGatewayOptions struct {
	bindAddr      string
	probeAddr     string
	dispatcherURL string
	dispatcherCA  string
	tokenFile     string
	holdsTimeout  time.Duration
	turnToken     turnTokenOptions
	tls           tlsOptions
	limits        modelgateway.Limits
	// allowPrivate admits upstreams on private and shared ranges;
	// allowLoopback on loopback addresses (development).
	allowPrivate, allowLoopback bool
	shutdownGrace               time.Duration
}

// bindModelGatewayFlags registers the subcommand's flags on fs.
func bindModelGatewayFlags(fs *flag.FlagSet, o *modelGatewayOptions) {
	d := modelgateway.DefaultLimits()
	fs.StringVar(&o.bindAddr, "bind-address", ":8443", "Address of the gateway's HTTPS listener (POST /v1/responses).")
	fs.StringVar(&o.probeAddr, "probe-bind-address", ":8081", "Address of /healthz, /readyz and /metrics (plain HTTP, unauthenticated: they show only the gateway's own checks and counters).")
	fs.StringVar(&o.dispatcherURL, "dispatcher-url", "", "The dispatcher's https:// URL, asked on every model request whether the credential's turn still runs (required).")
	fs.StringVar(&o.dispatcherCA, "dispatcher-ca-file", "", "PEM CA bundle the dispatcher's certificate is checked against (the ca.crt of its TLS Secret); empty: the platform's roots.")
	fs.StringVar(&o.tokenFile, "token-file", modelgateway.DefaultTokenFile, "The gateway's ServiceAccount token sent to the dispatcher, read again for every request (kubelet rotates it). The dispatcher accepts only its --model-gateway-user.")
	fs.DurationVar(&o.holdsTimeout, "holds-timeout", modelgateway.DefaultHoldsTimeout, "Time the dispatcher has to answer whether a turn still runs; without an answer the request is refused (401).")
	fs.StringVar(&o.turnToken.secretName, "turn-token-secret-name", defaultTurnTokenSecret, "The dispatchers' turn-token Secret (data turn-token-key), read only: the credential key is derived from it. The gateway never creates it; a missing Secret stops the start (the first dispatcher creates it).")
	fs.StringVar(&o.turnToken.secretNS, "turn-token-secret-namespace", "", "Namespace of --turn-token-secret-name (default: $POD_NAMESPACE).")
	fs.StringVar(&o.tls.certFile, "tls-cert-file", "", "Serving certificate (PEM), with --tls-key-file; reloaded when the files change. Without it and --tls-secret-name: an ephemeral CA and certificate generated at every start (local development only).")
	fs.StringVar(&o.tls.keyFile, "tls-key-file", "", "Private key of --tls-cert-file (PEM).")
	fs.StringVar(&o.tls.secretName, "tls-secret-name", "", "Serve the certificate the dispatcher keeps in this Secret (tls.crt, tls.key), read only and read again every minute; the gateway never creates it.")
	fs.StringVar(&o.tls.secretNS, "tls-secret-namespace", "", "Namespace of --tls-secret-name (default: $POD_NAMESPACE).")
	fs.StringVar(&o.tls.dnsNames, "tls-dns-names", "localhost", "Comma-separated DNS names of the ephemeral certificate.")
	fs.StringVar(&o.tls.ipAddresses, "tls-ip-addresses", "127.0.0.1", "Comma-separated IP addresses of the ephemeral certificate.")
	fs.StringVar(&o.tls.caOut, "tls-ca-out", "", "Write the ephemeral CA (PEM, no key) here, for the app-servers to trust.")
	fs.Int64Var(&o.limits.MaxBodyBytes, "max-body-bytes", d.MaxBodyBytes, "Largest request body; over it: 413.")
	fs.IntVar(&o.limits.MaxConnections, "max-connections", d.MaxConnections, "Most connections open at once; one over it is closed as soon as it is accepted.")
	fs.DurationVar(&o.limits.IdleTimeout, "idle-timeout", d.IdleTimeout, "Close a keep-alive connection that waits this long for its next request.")
	fs.IntVar(&o.limits.MaxInFlightPerLease, "max-in-flight-per-session", d.MaxInFlightPerLease, "Most requests in flight under one session's turn (or its calls); over it: 429.")
	fs.DurationVar(&o.limits.UpstreamHeaderTimeout, "upstream-header-timeout", d.UpstreamHeaderTimeout, "Time an upstream has to send its response headers; over it: 504.")
	fs.DurationVar(&o.limits.UpstreamIdleTimeout, "upstream-idle-timeout", d.UpstreamIdleTimeout, "Longest wait for an upstream's next bytes; over it the stream is cut.")
	fs.Int64Var(&o.limits.MaxEventBytes, "max-event-bytes", d.MaxEventBytes, "Largest server-sent event of an answer (bytes up to a blank line); over it the stream is cut.")
	fs.DurationVar(&o.limits.WriteTimeout, "write-timeout", d.WriteTimeout, "Time each write to the client may take; a client that stops reading is cut off.")
	fs.BoolVar(&o.allowPrivate, "allow-private-upstreams", false, "Dial upstreams on private and shared addresses ("+netguard.DefaultRefusedCIDRs+"), e.g. a model server in the cluster. Metadata and link-local addresses are always refused.")
	fs.BoolVar(&o.allowLoopback, "allow-loopback-upstreams", false, "Development only: dial upstreams on loopback addresses (a stub model on the same machine).")
	fs.DurationVar(&o.shutdownGrace, "shutdown-grace", 60*time.Second, "Time given to streaming answers to finish on shutdown.")
}

// modelGatewayMain runs the subcommand with args (after its name) and
// returns the process's exit code.
func modelGatewayMain(args []string) int {
	fs := flag.NewFlagSet("dispatcher "+modelGatewayCommand, flag.ContinueOnError)
	var o modelGatewayOptions
	bindModelGatewayFlags(fs, &o)
	config.RegisterFlags(fs) // --kubeconfig
	zapOpts := zap.Options{Development: false}
	zapOpts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "dispatcher %s takes no arguments, got %q\n", modelGatewayCommand, fs.Args())
		return 2
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	cfg, err := ctrl.GetConfig()
	if err == nil {
		err = runModelGateway(ctrl.SetupSignalHandler(), cfg, o)
	}
	if err != nil {
		ctrl.Log.Error(err, "model gateway exited")
		return 1
	}
	return 0
}

// validate checks what needs no API server, naming the flag.
func (o modelGatewayOptions) validate() error {
	switch {
	case o.dispatcherURL == "":
		return errors.New("--dispatcher-url is required: the gateway asks the dispatcher whether each credential's turn still runs")
	case o.holdsTimeout <= 0:
		return fmt.Errorf("--holds-timeout must be positive, got %s", o.holdsTimeout)
	case o.shutdownGrace < 0:
		return fmt.Errorf("--shutdown-grace must not be negative, got %s", o.shutdownGrace)
	case o.turnToken.secretName == "":
		return errors.New("--turn-token-secret-name must not be empty")
	case namespaceOrDefault(o.turnToken.secretNS, "") == "":
		return errors.New("--turn-token-secret-name needs the Secret's namespace: set --turn-token-secret-namespace (default: $POD_NAMESPACE, which is not set)")
	}
	for name, v := range map[string]int64{
		"--max-body-bytes": o.limits.MaxBodyBytes, "--max-connections": int64(o.limits.MaxConnections),
		"--max-in-flight-per-session": int64(o.limits.MaxInFlightPerLease), "--max-event-bytes": o.limits.MaxEventBytes,
		"--idle-timeout": int64(o.limits.IdleTimeout), "--upstream-header-timeout": int64(o.limits.UpstreamHeaderTimeout),
		"--upstream-idle-timeout": int64(o.limits.UpstreamIdleTimeout), "--write-timeout": int64(o.limits.WriteTimeout),
	} {
		if v <= 0 {
			return fmt.Errorf("%s must be positive, got %d", name, v)
		}
	}
	return nil
}

// dialPolicy is where upstreams may be dialed: never metadata or
// link-local addresses; private and shared ranges with
// --allow-private-upstreams; loopback with --allow-loopback-upstreams.
func (o modelGatewayOptions) dialPolicy() netguard.Policy {
	p := modelgateway.DefaultDialPolicy()
	if o.allowPrivate {
		p.ClusterCIDRs = nil
	}
	p.AllowLoopback = o.allowLoopback
	return p
}

// runModelGateway serves the gateway until ctx ends, then gives streaming
// answers --shutdown-grace to finish.
func runModelGateway(ctx context.Context, cfg *rest.Config, o modelGatewayOptions) error {
	log := ctrl.Log.WithName("model-gateway")
	if err := o.validate(); err != nil {
		return err
	}
	dial := o.dialPolicy()
	scheme, err := harnessscheme.New()
	if err != nil {
		return err
	}
	// Every read goes to the API server, no informer: a harness's upstream
	// is kept only while watches on its two objects see no change
	// (modelgateway.WatchedUpstreams).
	direct, err := client.NewWithWatch(kubedirect.Config(cfg), client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("create the Kubernetes client: %w", err)
	}
	key, err := readCredentialKey(ctx, direct, o.turnToken)
	if err != nil {
		return err
	}
	holds, err := modelgateway.NewHoldsClient(modelgateway.HoldsClientOptions{
		DispatcherURL: o.dispatcherURL, CAFile: o.dispatcherCA, TokenFile: o.tokenFile, Timeout: o.holdsTimeout,
	})
	if err != nil {
		return fmt.Errorf("--dispatcher-url, --dispatcher-ca-file, --token-file: %w", err)
	}
	defer holds.CloseIdleConnections()
	tlsConfig, err := gatewayTLS(ctx, direct, o.tls, log)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	upstreams := modelgateway.NewWatchedUpstreams(direct, direct, log.WithName("upstreams"))
	defer upstreams.Close()
	gw, err := modelgateway.New(modelgateway.Config{
		Key: key, Liveness: holds, Upstreams: upstreams,
		Limits: o.limits, Dial: &dial, Log: log, Registerer: reg,
	})
	if err != nil {
		return err
	}
	defer gw.Close()

	var serving atomic.Bool
	probes := &http.Server{Addr: o.probeAddr, Handler: gatewayProbes(reg, &serving), ReadHeaderTimeout: readHeaderTimeout}
	probeLn, err := (&net.ListenConfig{}).Listen(ctx, "tcp", o.probeAddr)
	if err != nil {
		return fmt.Errorf("--probe-bind-address: listen on %s: %w", o.probeAddr, err)
	}
	go func() { _ = probes.Serve(probeLn) }()
	defer func() { _ = probes.Close() }()

	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", o.bindAddr)
	if err != nil {
		return fmt.Errorf("--bind-address: listen on %s: %w", o.bindAddr, err)
	}
	srv := gw.Server()
	srv.TLSConfig = tlsConfig
	srv.BaseContext = func(net.Listener) context.Context { return context.WithoutCancel(ctx) }
	srv.ErrorLog = stdlog.New(logWriter{log.WithName("http")}, "", 0)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(tls.NewListener(gw.Listener(ln), tlsConfig)) }()
	serving.Store(true)
	log.Info("serving the model gateway", "address", ln.Addr().String(), "probeAddress", probeLn.Addr().String(),
		"dispatcherURL", o.dispatcherURL, "turnTokenSecret", o.turnToken.secretName,
		"allowPrivateUpstreams", o.allowPrivate, "allowLoopbackUpstreams", o.allowLoopback)

	select {
	case err := <-served:
		serving.Store(false)
		return fmt.Errorf("model gateway: %w", err)
	case <-ctx.Done():
	}
	serving.Store(false)
	log.Info("shutting down: no new requests; streaming answers get the grace period", "grace", o.shutdownGrace.String())
	sctx, cancel := context.WithTimeout(context.Background(), o.shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Info("closing the remaining connections", "reason", err.Error())
		_ = srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("model gateway: %w", err)
	}
	return nil
}

// readCredentialKey derives the credential key from the dispatchers'
// turn-token key, read from its Secret (never created here).
func readCredentialKey(ctx context.Context, r client.Reader, o turnTokenOptions) (*modelcred.Key, error) {
	ref := types.NamespacedName{Namespace: namespaceOrDefault(o.secretNS, ""), Name: o.secretName}
	tk, err := turntoken.Read(ctx, r, ref)
	if err != nil {
		return nil, fmt.Errorf("read the turn-token key from Secret %s (--turn-token-secret-name, --turn-token-secret-namespace): %w", ref, err)
	}
	key, err := credentialKeyOf(tk)
	if err != nil {
		return nil, fmt.Errorf("the turn-token key of Secret %s: %w", ref, err)
	}
	return key, nil
}

// credentialKeyOf derives the model gateway's credential key from the
// turn-token key (the dispatcher seals with it, the gateway opens).
func credentialKeyOf(tk *turntoken.Key) (*modelcred.Key, error) {
	raw := tk.Bytes()
	defer clear(raw)
	key, err := modelcred.DeriveKey(raw)
	if err != nil {
		return nil, fmt.Errorf("derive the model gateway's credential key from the turn-token key: %w", err)
	}
	return key, nil
}

// gatewayProbes serves /healthz, /readyz (ready while the listener
// serves) and /metrics of reg.
func gatewayProbes(reg *prometheus.Registry, serving *atomic.Bool) http.Handler {
	m := http.NewServeMux()
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	m.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !serving.Load() {
			http.Error(w, "the model gateway is not serving (starting or shutting down)", http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	m.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return m
}

// gatewayTLS is the listener's TLS configuration: the given files
// (reloaded when they change), the dispatcher's certificate Secret (read
// only), or an ephemeral certificate.
func gatewayTLS(ctx context.Context, r client.Reader, o tlsOptions, log logr.Logger) (*tls.Config, error) {
	files := o.certFile != "" || o.keyFile != ""
	switch {
	case files && o.secretName != "":
		return nil, errors.New("--tls-cert-file/--tls-key-file and --tls-secret-name exclude each other")
	case o.secretName == "" && o.secretNS != "":
		return nil, errors.New("--tls-secret-namespace applies only with --tls-secret-name")
	case files:
		if o.certFile == "" || o.keyFile == "" {
			return nil, errors.New("--tls-cert-file and --tls-key-file go together")
		}
		w, err := certwatcher.New(o.certFile, o.keyFile)
		if err != nil {
			return nil, fmt.Errorf("load --tls-cert-file/--tls-key-file: %w", err)
		}
		go func() {
			if err := w.Start(ctx); err != nil {
				log.Error(err, "certificate watcher stopped: changed certificate files are not picked up")
			}
		}()
		log.Info("serving the given certificate files, reloaded when they change", "certFile", o.certFile, "keyFile", o.keyFile)
		return watchedConfig(w), nil
	case o.secretName != "":
		ns := namespaceOrDefault(o.secretNS, "")
		if ns == "" {
			return nil, errors.New("--tls-secret-name needs the Secret's namespace: set --tls-secret-namespace (default: $POD_NAMESPACE, which is not set)")
		}
		s := &secretCertificate{r: r, ref: types.NamespacedName{Namespace: ns, Name: o.secretName}, log: log}
		if err := s.load(ctx); err != nil {
			return nil, fmt.Errorf("--tls-secret-name: %w", err)
		}
		go s.refresh(ctx)
		log.Info("serving the certificate of a Secret, read again every minute", "secret", s.ref.String())
		return &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}, GetCertificate: s.get}, nil
	}
	return ephemeralTLS(o, log)
}

// secretCertificate serves the certificate of a Secret the dispatcher
// keeps (--tls-secret-name): read with get only, again every
// tlsSecretRefresh; a failed read keeps the certificate it has.
type secretCertificate struct {
	r    client.Reader
	ref  types.NamespacedName
	log  logr.Logger
	cert atomic.Pointer[tls.Certificate]
}

func (s *secretCertificate) load(ctx context.Context) error {
	var sec corev1.Secret
	if err := s.r.Get(ctx, s.ref, &sec); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("the Secret %s does not exist (the dispatcher creates it; the gateway only reads it)", s.ref)
		}
		return fmt.Errorf("read Secret %s: %w", s.ref, err)
	}
	cert, err := tls.X509KeyPair(sec.Data[corev1.TLSCertKey], sec.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return fmt.Errorf("the Secret %s: %s and %s are not a certificate and its key: %w", s.ref, corev1.TLSCertKey, corev1.TLSPrivateKeyKey, err)
	}
	s.cert.Store(&cert)
	return nil
}

func (s *secretCertificate) refresh(ctx context.Context) {
	t := time.NewTicker(tlsSecretRefresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.load(ctx); err != nil && ctx.Err() == nil {
				s.log.Error(err, "reading the serving certificate again failed; serving the one read before")
			}
		}
	}
}

func (s *secretCertificate) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return s.cert.Load(), nil
}
