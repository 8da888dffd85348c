// Package agentharness is the AgentHarness controller: the app-server workload, the version floor and attestation.
// It reads as "fetch → ordered phases → one status write"; the manager never
// runs turns and never writes the dispatcher's part of a status.
//
// For spec.appServer it runs the app-server as a StatefulSet with a headless
// Service, an operator-generated token Secret, a NetworkPolicy that admits
// only the operator's manager and dispatcher pods, and a PodDisruptionBudget,
// all owned by the AgentHarness. For spec.external it runs nothing and probes
// the server's /readyz every 30 s. In both modes it performs the initialize
// handshake (never a thread) once per container image digest the kubelet
// reports (external: once per URL and generation), keeps the result in
// memory, and derives the conditions WorkloadReady, VersionSupported,
// Attested and Ready, servers[], version and runtimeArtifact from it.
package agentharness

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/harness/objects"
	"github.com/openclaw/harness-operator/internal/platform/conditions"
	"github.com/openclaw/harness-operator/internal/platform/netguard"
)

const (
	// DefaultOperatorNamespace is the namespace of the operator's manager and
	// dispatcher pods when Reconciler.OperatorNamespace is empty.
	DefaultOperatorNamespace = "harness-operator-system"
	// DefaultAppServerPort is the app-server's WebSocket port when
	// Reconciler.AppServerPort is zero.
	DefaultAppServerPort int32 = 4500

	// controllerName names the controller and its Events' reporter.
	controllerName = "agentharness"
	// indexExternalTokenSecret indexes AgentHarnesses by the Secret named in
	// spec.external.tokenSecretRef.
	indexExternalTokenSecret = "spec.external.tokenSecretRef.name"
	// tokenBytes is the entropy of a generated capability token.
	tokenBytes = 32
)

// fieldManager owns the objects and the status the controller applies.
var fieldManager = conditions.FieldManager("manager")

// Reconciler reconciles AgentHarness objects: the app-server workload, the
// version floor and attestation. The manager is the only writer of an
// AgentHarness status.
type Reconciler struct {
	client.Client

	// MaxConcurrentReconciles bounds parallel reconciles of AgentHarness
	// objects (at least 1). A reconcile can wait for a handshake (15 s at
	// most), so more than one lets other harnesses progress meanwhile.
	MaxConcurrentReconciles int

	// OperatorNamespace is the namespace of the operator's manager and
	// dispatcher pods, the only pods the app-server NetworkPolicy admits.
	// Empty means DefaultOperatorNamespace.
	OperatorNamespace string

	// HarnessNamespaces are the only namespaces whose harnesses are served:
	// the manager may read Secrets only there. Empty means none. A harness
	// elsewhere (created before the setting, since admission refuses new
	// ones) is reported not Ready with reason NamespaceNotManaged and gets no
	// workload.
	HarnessNamespaces []string

	// AppServerPort is the port the app-server listens on in its pod (the
	// container port and Service port named objects.PortName). Zero means
	// DefaultAppServerPort.
	AppServerPort int32

	// AppServerEgressCIDRs, when set, are the only addresses (besides the
	// cluster DNS) the server pods' NetworkPolicy lets them reach, e.g. the
	// model provider's. Empty means the public internet: every address but
	// the private, shared, link-local and loopback ranges (networkpolicy.go).
	AppServerEgressCIDRs []string

	// ModelGateway says where the operator's model gateway is, for the
	// harnesses with spec.modelGateway (modelgateway.go).
	ModelGateway ModelGatewaySettings

	// ExternalDial is the policy every dial and /readyz probe of an external
	// app-server passes (refused cluster ranges, metadata and link-local
	// addresses, checked on each resolved address).
	ExternalDial netguard.Policy

	// Set by SetupWithManager.
	apiReader client.Reader // uncached reads (Secrets are cached as metadata only)
	pods      client.Reader // server pods, from a label-filtered cache
	recorder  events.EventRecorder
	status    conditions.StatusWriter
	handshake handshakeFunc
	probe     probeFunc
	results   *handshakeCache
	now       func() time.Time
}

// +kubebuilder:rbac:groups=harness.openclaw.dev,resources=agentharnesses,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=harness.openclaw.dev,resources=agentharnesses/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=harness.openclaw.dev,resources=agentharnesses/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=services;pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch

// The controller writes a harness's objects only in the harness namespaces
// (phases: a harness elsewhere gets none). A workload can mount any Secret
// of its namespace, so writing one anywhere would be reading every Secret:
// these verbs go to a Role that the chart renders in each of
// harnessNamespaces. "harness-namespaces" stands for each of them.
// +kubebuilder:rbac:groups=apps,namespace=harness-namespaces,resources=statefulsets,verbs=create;patch;delete
// +kubebuilder:rbac:groups="",namespace=harness-namespaces,resources=services;secrets,verbs=create;patch;delete
// +kubebuilder:rbac:groups="",namespace=harness-namespaces,resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.k8s.io,namespace=harness-namespaces,resources=networkpolicies,verbs=create;patch;delete
// +kubebuilder:rbac:groups=policy,namespace=harness-namespaces,resources=poddisruptionbudgets,verbs=create;patch;delete

// scope is what one reconcile knows about one harness.
type scope struct {
	harness *v1alpha1.AgentHarness
	// before is the status as read, to write only on change.
	before *v1alpha1.AgentHarnessStatus
	// token is the capability token (managed: generated; external: from
	// tokenSecretRef). Never logged.
	token string
	// tokenMissing explains why an external token could not be read.
	tokenMissing string
	// servers are the observed server pods (managed) in ordinal order.
	servers []observedServer
	// results are the handshake results by image digest (managed).
	results map[string]*handshakeResult
	// probeErr is the external /readyz probe's failure.
	probeErr error
	// externalDial is how the probe and the handshake reach the external
	// server (its token, the dial policy, its CA bundle).
	externalDial appserver.WebSocketOptions
	// external is the external server's handshake result.
	external *handshakeResult
	// requeueAfter asks for the next reconcile (external probe, handshake retry).
	requeueAfter time.Duration
	// credentialsHash is v1alpha1.AnnotationCredentialsHash of the pod template (managed).
	credentialsHash string
	// gatewayCA is the model gateway's CA the pods trust (spec.modelGateway
	// with --model-gateway-ca-secret).
	gatewayCA []byte
	// final says a phase set the verdict and no later phase runs (a name
	// conflict: nothing is created).
	final bool
}

func (s *scope) requeue(d time.Duration) {
	if d <= 0 {
		d = time.Second
	}
	if s.requeueAfter == 0 || d < s.requeueAfter {
		s.requeueAfter = d
	}
}

type phase struct {
	name string
	run  func(context.Context, *scope) error
}

// Reconcile runs the ordered phases for the harness's mode, then writes the
// status once, only when it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	h := &v1alpha1.AgentHarness{}
	if err := r.Get(ctx, req.NamespacedName, h); err != nil {
		if apierrors.IsNotFound(err) {
			r.results.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get agent harness: %w", err)
	}
	if !h.DeletionTimestamp.IsZero() {
		// Owned objects go with the harness (owner references).
		return ctrl.Result{}, nil
	}

	s := &scope{harness: h, before: h.Status.DeepCopy()}
	if err := r.runPhases(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: s.requeueAfter}, nil
}

// runPhases runs the ordered phases, then writes the status once — also when
// a phase failed: the failure becomes the Ready condition (reason
// ReconcileFailed), so an apply refused by a quota, Pod Security or RBAC
// shows in `kubectl describe`, not only in the manager's log.
func (r *Reconciler) runPhases(ctx context.Context, s *scope) (err error) {
	defer func() {
		if werr := r.writeStatus(ctx, s); werr != nil {
			err = errors.Join(err, fmt.Errorf("write status: %w", werr))
		}
	}()
	for _, p := range r.phases(s.harness) {
		if err := p.run(ctx, s); err != nil {
			err = fmt.Errorf("reconcile %s: %w", p.name, err)
			setCondition(s.harness, v1alpha1.HarnessConditionReady, verdict{metav1.ConditionFalse,
				v1alpha1.HarnessReasonReconcileFailed, err.Error()})
			return err
		}
		if s.final {
			return nil
		}
	}
	return nil
}

// phases lists the ordered phases of the harness's mode.
func (r *Reconciler) phases(h *v1alpha1.AgentHarness) []phase {
	if !slices.Contains(r.HarnessNamespaces, h.Namespace) {
		return []phase{{"namespace", r.unmanagedNamespace}}
	}
	if h.Spec.AppServer != nil {
		return []phase{
			{"model gateway", r.checkModelGateway},
			{"name conflicts", r.checkNameConflicts},
			{"token secret", r.reconcileTokenSecret},
			{"credentials", r.hashCredentials},
			{"service", r.reconcileService},
			{"statefulset", r.reconcileStatefulSet},
			{"networkpolicy", r.reconcileNetworkPolicy},
			{"poddisruptionbudget", r.reconcilePodDisruptionBudget},
			{"servers", r.observeServers},
			{"handshake", r.handshakeServers},
			{"conditions", r.managedConditions},
		}
	}
	if h.Spec.External == nil {
		// Admission refuses this (exactly one of appServer and external).
		return []phase{{"workload", func(context.Context, *scope) error {
			return errors.New("neither spec.appServer nor spec.external is set")
		}}}
	}
	return []phase{
		{"managed workload removal", r.removeWorkload},
		{"external token", r.readExternalToken},
		{"external probe", r.probeExternal},
		{"external handshake", r.handshakeExternal},
		{"conditions", r.externalConditions},
	}
}

// SetupWithManager registers the reconciler with the manager: the
// AgentHarness and everything it owns, its server pods (from a cache that
// holds only pods labelled by this controller), and the Secrets its pods
// or its external server use. Secrets are watched as metadata only; their data is read uncached.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.OperatorNamespace == "" {
		r.OperatorNamespace = DefaultOperatorNamespace
	}
	if r.AppServerPort == 0 {
		r.AppServerPort = DefaultAppServerPort
	}
	if r.AppServerPort < 1 || r.AppServerPort > 65535 {
		return fmt.Errorf("set up agentharness controller: app-server port %d is out of range", r.AppServerPort)
	}
	if err := parseEgressCIDRs(r.AppServerEgressCIDRs); err != nil {
		return fmt.Errorf("set up agentharness controller: %w", err)
	}
	if err := r.ModelGateway.normalize(r.OperatorNamespace); err != nil {
		return fmt.Errorf("set up agentharness controller: %w", err)
	}
	if r.MaxConcurrentReconciles < 1 {
		r.MaxConcurrentReconciles = 1
	}
	r.apiReader = mgr.GetAPIReader()
	r.recorder = mgr.GetEventRecorder(conditions.EventReporter("manager", controllerName))
	r.status = conditions.StatusWriter{Client: r.Client, Recorder: r.recorder, FieldManager: fieldManager,
		Quiet: quietFirst, Warning: warningCondition}
	if r.handshake == nil {
		r.handshake = appServerHandshake
	}
	if r.probe == nil {
		r.probe = httpReadyz
	}
	if r.now == nil {
		r.now = time.Now
	}
	r.results = newHandshakeCache()

	podCache, err := newPodCache(mgr)
	if err != nil {
		return fmt.Errorf("set up agentharness controller: %w", err)
	}
	r.pods = podCache

	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.AgentHarness{},
		indexExternalTokenSecret, func(o client.Object) []string {
			h := o.(*v1alpha1.AgentHarness)
			if h.Spec.External == nil {
				return nil
			}
			return []string{h.Spec.External.TokenSecretRef.Name}
		}); err != nil {
		return fmt.Errorf("set up agentharness controller: index external token secrets: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.AgentHarness{},
		indexAppServerSecret, appServerSecretNames); err != nil {
		return fmt.Errorf("set up agentharness controller: index app-server secrets: %w", err)
	}

	if err := ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.AgentHarness{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&appsv1.StatefulSet{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.Secret{}, builder.OnlyMetadata).
		Owns(&networkingv1.NetworkPolicy{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.harnessesForSecret), builder.OnlyMetadata).
		WatchesRawSource(source.Kind(podCache.Cache, &corev1.Pod{},
			handler.TypedEnqueueRequestsFromMapFunc(harnessForPod))).
		Named(controllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Complete(r); err != nil {
		return fmt.Errorf("set up agentharness controller: %w", err)
	}
	return nil
}

// podCache is a cache of server pods only (managed-by harness-operator and
// labelled with a harness), started with the manager's caches.
type podCache struct{ cache.Cache }

// GetCache makes the manager start it with its own caches, before controllers.
func (p podCache) GetCache() cache.Cache { return p.Cache }

func newPodCache(mgr ctrl.Manager) (podCache, error) {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		HTTPClient: mgr.GetHTTPClient(),
		Scheme:     mgr.GetScheme(),
		Mapper:     mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Label: objects.ManagedSelector()},
		},
	})
	if err != nil {
		return podCache{}, fmt.Errorf("create server pod cache: %w", err)
	}
	pc := podCache{c}
	if err := mgr.Add(pc); err != nil {
		return podCache{}, fmt.Errorf("add server pod cache: %w", err)
	}
	return pc, nil
}

// harnessForPod maps a server pod to its harness.
func harnessForPod(_ context.Context, pod *corev1.Pod) []reconcile.Request {
	name := pod.Annotations[v1alpha1.AnnotationHarness]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: pod.Namespace, Name: name}}}
}

func (r *Reconciler) workload(s *scope) workload {
	return workload{
		harness:     s.harness,
		port:        r.AppServerPort,
		opNamespace: r.OperatorNamespace,
		credsHash:   s.credentialsHash,
		egressCIDRs: r.AppServerEgressCIDRs,
		gateway:     r.gatewayFor(s),
	}
}

// reconcileTokenSecret keeps the generated capability token: an existing
// non-empty token is kept, a missing one is generated.
func (r *Reconciler) reconcileTokenSecret(ctx context.Context, s *scope) error {
	h := s.harness
	key := types.NamespacedName{Namespace: h.Namespace, Name: objects.TokenSecretName(h)}
	var secret corev1.Secret
	err := r.apiReader.Get(ctx, key, &secret)
	switch {
	case err == nil && len(secret.Data[objects.TokenSecretKey]) > 0:
		s.token = string(secret.Data[objects.TokenSecretKey])
	case err == nil || apierrors.IsNotFound(err):
		token, err := newToken()
		if err != nil {
			return err
		}
		s.token = token
		ctrl.LoggerFrom(ctx).Info("generated app-server token", "secret", key.Name)
	default:
		return fmt.Errorf("get secret %s: %w", key.Name, err)
	}
	if err := r.Apply(ctx, r.workload(s).tokenSecret(s.token), client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply secret %s: %w", key.Name, err)
	}
	return nil
}

func newToken() (string, error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func (r *Reconciler) reconcileService(ctx context.Context, s *scope) error {
	if err := r.Apply(ctx, r.workload(s).service(), client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply service %s: %w", objects.WorkloadName(s.harness), err)
	}
	return nil
}

// reconcileStatefulSet applies the StatefulSet. volumeClaimTemplates are
// immutable: when spec.appServer.storage changes, the StatefulSet is deleted
// with its pods orphaned and recreated once it is gone; the new StatefulSet
// adopts the pods and rolls them.
func (r *Reconciler) reconcileStatefulSet(ctx context.Context, s *scope) error {
	h := s.harness
	name := objects.WorkloadName(h)
	var existing appsv1.StatefulSet
	err := r.Get(ctx, types.NamespacedName{Namespace: h.Namespace, Name: name}, &existing)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("get statefulset %s: %w", name, err)
	case !existing.DeletionTimestamp.IsZero():
		// Being replaced; the delete event brings us back.
		s.requeue(5 * time.Second)
		return nil
	case claimTemplatesChanged(&existing, h.Spec.AppServer.Storage) && metav1.IsControlledBy(&existing, h):
		ctrl.LoggerFrom(ctx).Info("storage changed: replacing the statefulset, pods orphaned", "statefulset", name)
		r.recorder.Eventf(h, &existing, corev1.EventTypeNormal, "StatefulSetReplaced", "ReplaceStatefulSet",
			"storage changed: replacing StatefulSet %s (volumeClaimTemplates are immutable); its pods are kept and rolled", name)
		if err := r.Delete(ctx, &existing, client.PropagationPolicy(metav1.DeletePropagationOrphan),
			client.Preconditions{UID: &existing.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete statefulset %s: %w", name, err)
		}
		s.requeue(5 * time.Second)
		return nil
	}
	sts, err := r.workload(s).statefulSet()
	if err != nil {
		return err
	}
	if err := r.Apply(ctx, sts, client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply statefulset %s: %w", name, err)
	}
	return nil
}

func (r *Reconciler) reconcileNetworkPolicy(ctx context.Context, s *scope) error {
	if err := r.Apply(ctx, r.workload(s).networkPolicy(), client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply networkpolicy %s: %w", objects.WorkloadName(s.harness), err)
	}
	return nil
}

func (r *Reconciler) reconcilePodDisruptionBudget(ctx context.Context, s *scope) error {
	if err := r.Apply(ctx, r.workload(s).podDisruptionBudget(), client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply poddisruptionbudget %s: %w", objects.WorkloadName(s.harness), err)
	}
	return nil
}

// removeWorkload deletes the managed objects of a harness that switched to
// spec.external.
func (r *Reconciler) removeWorkload(ctx context.Context, s *scope) error {
	h := s.harness
	ns, name := h.Namespace, objects.WorkloadName(h)
	secret := &metav1.PartialObjectMetadata{}
	secret.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	objs := []struct {
		obj  client.Object
		name string
	}{
		{&appsv1.StatefulSet{}, name},
		{&corev1.Service{}, name},
		{&networkingv1.NetworkPolicy{}, name},
		{&policyv1.PodDisruptionBudget{}, name},
		{secret, objects.TokenSecretName(h)},
	}
	var errs []error
	for _, o := range objs {
		err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: o.name}, o.obj)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("get %T %s: %w", o.obj, o.name, err))
			continue
		}
		if !metav1.IsControlledBy(o.obj, h) || !o.obj.GetDeletionTimestamp().IsZero() {
			continue
		}
		uid := o.obj.GetUID()
		if err := r.Delete(ctx, o.obj, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("delete %T %s: %w", o.obj, o.name, err))
			continue
		}
		ctrl.LoggerFrom(ctx).Info("deleted managed object of a harness that is now external", "name", o.name)
	}
	return errors.Join(errs...)
}
