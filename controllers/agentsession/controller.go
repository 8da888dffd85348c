// Package agentsession is the AgentSession controller: the manager's part of the session status.
// It reads as "fetch → ordered phases → one status write"; the manager never
// runs turns and never writes the dispatcher's part of a status.
package agentsession

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/platform/conditions"
	"github.com/openclaw/harness-operator/internal/policy/selection"
	"github.com/openclaw/harness-operator/internal/policy/snapshot"
)

const (
	// controllerName names the controller, its logger and its Events' reporter.
	controllerName = "agentsession"
	// maxMatchedPolicies is the most names status.policy.matchedPolicies lists (the API's MaxItems).
	maxMatchedPolicies = 64

	// matchedPolicyIndex indexes sessions by the names in status.policy.matchedPolicies.
	matchedPolicyIndex = "status.policy.matchedPolicies"
	// pinnedIndex indexes sessions that carry an ownership pin (status.agentHarnessId).
	pinnedIndex = "status.agentHarnessId.set"
)

// ownedConditions are the condition types this controller writes.
var ownedConditions = []string{v1alpha1.SessionConditionPolicyResolved, v1alpha1.SessionConditionReady}

// Reconciler reconciles the manager's part of AgentSession status: what
// runtime policy asks for (status.policy) and the PolicyResolved and Ready
// conditions. It never writes the dispatcher's fields (agentHarnessId,
// lastSelection, nativeBinding, activeTurn, lastTurn, counters): status is
// written with server-side apply under the manager's field manager
// (conditions.FieldManager; the dispatcher applies its part under its own),
// containing only the manager's fields, and only when they change.
type Reconciler struct {
	client.Client

	// MaxConcurrentReconciles bounds parallel reconciles of AgentSession objects.
	MaxConcurrentReconciles int

	// recorder emits an Event when a spec change changes the policy runtime,
	// status one per condition transition; set by SetupWithManager.
	recorder events.EventRecorder
	status   conditions.StatusWriter
	// own is what this manager last applied to each session, so that the
	// echo of its write is not reconciled again; set by SetupWithManager.
	own *ownWrites
}

// +kubebuilder:rbac:groups=harness.openclaw.dev,resources=agentsessions,verbs=get;list;watch
// +kubebuilder:rbac:groups=harness.openclaw.dev,resources=agentsessions/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=harness.openclaw.dev,resources=runtimepolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=harness.openclaw.dev,resources=agentharnesses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile fetches the AgentSession (not-found means it was deleted), runs
// the phases that compute the manager's part of its status, and applies that
// part once, only when it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var session v1alpha1.AgentSession
	if err := r.Get(ctx, req.NamespacedName, &session); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s, err := r.newScope(ctx, &session)
	if err != nil || s == nil {
		return ctrl.Result{}, err
	}
	// The phases, in order; each computes part of the desired status.
	for _, phase := range []func(*scope){reconcilePolicy, reconcileReadiness} {
		phase(s)
	}
	s.desired.ObservedGeneration = session.Generation
	if err := r.writeStatus(ctx, s); err != nil {
		return ctrl.Result{}, fmt.Errorf("write status of AgentSession %s/%s: %w", session.Namespace, session.Name, err)
	}
	return ctrl.Result{}, nil
}

// scope is one reconcile: the session, the selection snapshot of its
// namespace, and the manager's part of the status the phases build.
type scope struct {
	session *v1alpha1.AgentSession
	snap    selection.Snapshot
	now     metav1.Time

	// resolution is what the policies selecting the namespace ask for (set by policy).
	resolution selection.PolicyResolution
	// overrideDenied is set by policy when the override contradicts a Deny policy.
	overrideDenied bool
	// desired holds only manager-owned fields: conditions, observedGeneration, policy.
	desired v1alpha1.AgentSessionStatus
}

// newScope reads the session's namespace, the policies and the harnesses
// (from the cache) and builds the selection snapshot of the namespace. A nil
// scope without error means there is nothing to do (the namespace is gone).
func (r *Reconciler) newScope(ctx context.Context, session *v1alpha1.AgentSession) (*scope, error) {
	// An invalid selector fails the snapshot, as it fails the dispatcher's:
	// the RuntimePolicy reports Accepted=False and its fix re-triggers this session.
	// The phases only read the snapshot (selection is pure): the cache's
	// harnesses and policies are not copied for each session.
	snap, err := snapshot.For(ctx, r, session, client.UnsafeDisableDeepCopy)
	if apierrors.IsNotFound(err) { // the namespace is gone with the session
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &scope{session: session, snap: snap, now: metav1.Now()}, nil
}

// setCondition sets one condition of the desired status, keeping the current
// lastTransitionTime when the condition's status does not change.
func (s *scope) setCondition(typ string, status metav1.ConditionStatus, reason v1alpha1.SessionConditionReason, msg string) {
	conditions.Set(&s.desired.Conditions, s.session.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: string(reason), Message: msg,
		ObservedGeneration: s.session.Generation, LastTransitionTime: s.now,
	})
}

// reconcilePolicy resolves what policy asks for the session's agent and
// model over the policies selecting its namespace (selection.ResolvePolicy).
// An override that policy allows is what the session asks for (source
// override); a denied one leaves the policy's runtime (Ready says why).
func reconcilePolicy(s *scope) {
	spec := &s.session.Spec
	provider, model := selection.SplitModel("", spec.Model)
	s.resolution = selection.ResolvePolicy(s.snap.Policies, selection.PolicyKey{AgentID: spec.AgentID, Provider: provider, Model: model})
	_, _, s.overrideDenied = selection.OverrideDeniedBy(s.snap.Policies, spec.AgentID, spec.Model, spec.RuntimeOverride)

	matched := make([]string, 0, len(s.snap.Policies))
	for _, p := range s.snap.Policies {
		matched = append(matched, p.Name)
	}
	slices.Sort(matched)
	if len(matched) > maxMatchedPolicies {
		matched = matched[:maxMatchedPolicies]
	}
	pol := &v1alpha1.SessionPolicy{
		Runtime:         v1alpha1.RuntimeID(s.resolution.Runtime),
		Source:          s.resolution.Source,
		MatchedPolicies: matched,
	}
	if len(matched) == 0 {
		pol.MatchedPolicies = nil
	}
	override := selection.NormalizeRuntimeID(string(spec.RuntimeOverride))
	overridden := override != string(v1alpha1.RuntimeAuto) && !s.overrideDenied
	if overridden {
		pol.Runtime, pol.Source = v1alpha1.RuntimeID(override), v1alpha1.PolicySourceOverride
	}
	s.desired.Policy = pol

	res := &s.resolution
	switch {
	case res.Source == v1alpha1.PolicySourceDefault && overridden:
		s.setCondition(v1alpha1.SessionConditionPolicyResolved, metav1.ConditionTrue, v1alpha1.SessionReasonNoPolicy,
			fmt.Sprintf("No RuntimePolicy entry applies to %s; the session's runtimeOverride %s applies.", spec.Model, override))
	case res.Source == v1alpha1.PolicySourceDefault:
		s.setCondition(v1alpha1.SessionConditionPolicyResolved, metav1.ConditionTrue, v1alpha1.SessionReasonNoPolicy,
			fmt.Sprintf("No RuntimePolicy entry applies to %s; the runtime is auto.", spec.Model))
	case overridden:
		s.setCondition(v1alpha1.SessionConditionPolicyResolved, metav1.ConditionTrue, v1alpha1.SessionReasonPolicyMatched,
			fmt.Sprintf("RuntimePolicy %s (%s entry) asks for runtime %s for %s and allows overrides; the session's runtimeOverride %s applies.",
				res.Policy, res.Source, res.Runtime, spec.Model, override))
	default:
		enforced := ""
		if res.Enforced {
			enforced = " and enforces it (sessionOverrides: Deny)"
		}
		s.setCondition(v1alpha1.SessionConditionPolicyResolved, metav1.ConditionTrue, v1alpha1.SessionReasonPolicyMatched,
			fmt.Sprintf("RuntimePolicy %s (%s entry) asks for runtime %s for %s%s.", res.Policy, res.Source, res.Runtime, spec.Model, enforced))
	}
}

// reconcileReadiness: Ready is False (OverrideDenied) when the session's
// runtimeOverride or its ownership pin (which counts only while its model
// selection is locked) contradicts an enforcing Deny policy —
// turns would fail closed — and True otherwise. The pin is judged by the
// selection engine itself (under an enforced auto, a pin is accepted only when
// auto would select that harness), so the visible harnesses matter.
func reconcileReadiness(s *scope) {
	spec := &s.session.Spec
	if s.overrideDenied {
		s.setCondition(v1alpha1.SessionConditionReady, metav1.ConditionFalse, v1alpha1.SessionReasonOverrideDenied,
			fmt.Sprintf("runtimeOverride %s contradicts RuntimePolicy %s (sessionOverrides: Deny), which requires runtime %s for %s; turns fail closed (OverrideDenied).",
				selection.NormalizeRuntimeID(string(spec.RuntimeOverride)), s.resolution.Policy, s.resolution.Runtime, spec.Model))
		return
	}
	if s.resolution.Enforced && selection.SessionPin(s.session) != "" {
		d := selection.Select(s.snap, &wire.Attempt{})
		if d.Error != nil && d.Error.Code == wire.CodeOverrideDenied && d.RuntimeSource == v1alpha1.RuntimeSourceSession {
			s.setCondition(v1alpha1.SessionConditionReady, metav1.ConditionFalse, v1alpha1.SessionReasonOverrideDenied,
				d.Error.Message+" Turns fail closed (OverrideDenied).")
			return
		}
	}
	s.setCondition(v1alpha1.SessionConditionReady, metav1.ConditionTrue, v1alpha1.SessionReasonReady,
		"Runtime policy admits the session's runtime.")
}

// writeStatus applies the manager's part of the status with server-side apply
// when it differs from the current one (conditions compared without
// lastTransitionTime); the StatusWriter emits an Event per condition
// transition, and a change of the policy runtime that follows a change of
// the session's spec gets one more.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) error {
	cur := &s.session.Status
	if managedEqual(cur, &s.desired) {
		return nil
	}
	r.own.wrote(s.session.UID, &s.desired)
	if err := r.status.Apply(ctx, s.session, &s.desired, cur.Conditions, s.desired.Conditions); err != nil {
		r.own.forget(s.session.UID)
		return err
	}
	ctrl.LoggerFrom(ctx).Info("agent session policy status applied",
		"runtime", s.desired.Policy.Runtime, "source", s.desired.Policy.Source,
		"policy", s.resolution.Policy, "enforced", s.resolution.Enforced, "observedGeneration", s.desired.ObservedGeneration)
	// A change the session's own spec caused gets an Event here; one that a
	// RuntimePolicy or a Namespace's labels caused is announced once, on the
	// policy (SpecApplied): an Event per session would double the API
	// server's writes of a fan-out to thousands of sessions, and each
	// session's status.policy already says which policy decided and why.
	if old, pol := cur.Policy, s.desired.Policy; old != nil && old.Runtime != pol.Runtime && cur.ObservedGeneration != s.desired.ObservedGeneration {
		r.recorder.Eventf(s.session, nil, corev1.EventTypeNormal, "PolicyRuntimeChanged", "ResolvePolicy",
			"Policy runtime changed from %s to %s (source %s).", old.Runtime, pol.Runtime, pol.Source)
	}
	return nil
}

// quietFirst: a session that is fine from the start is not worth an Event.
func quietFirst(c metav1.Condition) bool { return c.Status == metav1.ConditionTrue }

// warningCondition: a condition that is not True.
func warningCondition(c metav1.Condition) bool { return c.Status != metav1.ConditionTrue }

// managedEqual compares the manager-owned part of two statuses: policy,
// observedGeneration and the owned conditions (without lastTransitionTime).
func managedEqual(cur, desired *v1alpha1.AgentSessionStatus) bool {
	if cur.ObservedGeneration != desired.ObservedGeneration || !policyEqual(cur.Policy, desired.Policy) {
		return false
	}
	return conditions.SameTypes(cur.Conditions, desired.Conditions, ownedConditions...)
}

func policyEqual(a, b *v1alpha1.SessionPolicy) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Runtime == b.Runtime && a.Source == b.Source &&
		equality.Semantic.DeepEqual(nilIfEmpty(a.MatchedPolicies), nilIfEmpty(b.MatchedPolicies))
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// SetupWithManager registers the reconciler with the manager. Besides the
// sessions themselves (their updates filtered by managerInputsChanged), it watches through
// mapping functions: RuntimePolicies (creation, deletion, spec changes → the
// sessions in namespaces the policy selects and those listing it in
// matchedPolicies), Namespaces (label changes → their sessions) and
// AgentHarnesses (creation, deletion, spec changes → pinned sessions, the only
// ones whose manager status depends on harnesses). Nothing polls.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	ctx := context.Background()
	indexer := mgr.GetFieldIndexer()
	if err := indexer.IndexField(ctx, &v1alpha1.AgentSession{}, matchedPolicyIndex, func(o client.Object) []string {
		if p := o.(*v1alpha1.AgentSession).Status.Policy; p != nil {
			return p.MatchedPolicies
		}
		return nil
	}); err != nil {
		return fmt.Errorf("index AgentSessions by matched policy: %w", err)
	}
	if err := indexer.IndexField(ctx, &v1alpha1.AgentSession{}, pinnedIndex, func(o client.Object) []string {
		if o.(*v1alpha1.AgentSession).Status.AgentHarnessID != "" {
			return []string{"true"}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("index pinned AgentSessions: %w", err)
	}
	r.own = newOwnWrites()
	r.recorder = mgr.GetEventRecorder(conditions.EventReporter("manager", controllerName))
	r.status = conditions.StatusWriter{Client: r.Client, Recorder: r.recorder,
		FieldManager: conditions.FieldManager("manager"), Quiet: quietFirst, Warning: warningCondition}
	if err := ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.AgentSession{}, builder.WithPredicates(r.managerInputsChanged())).
		Watches(&v1alpha1.RuntimePolicy{}, handler.EnqueueRequestsFromMapFunc(r.sessionsForPolicy),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.sessionsInNamespace),
			builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Watches(&v1alpha1.AgentHarness{}, handler.EnqueueRequestsFromMapFunc(r.pinnedSessions),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Named(controllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Complete(r); err != nil {
		return fmt.Errorf("set up agentsession controller: %w", err)
	}
	return nil
}

// managerInputsChanged passes the updates of a session that can change the
// manager's part of its status: its spec (generation), the dispatcher's pin
// (status.agentHarnessId while its nativeBinding is of the current
// resetGeneration: selection.SessionPin), and someone else's edit of the
// manager's own fields. The echo of the manager's own write — its fields
// now hold exactly what it last applied (ownWrites) — is not passed. The
// dispatcher's other writes — a turn's end (lastTurn), activeTurn for a
// turn still running after the dispatcher's delay, counters, its
// finalizer — change nothing the manager computes; reconciling each would
// re-read the session's namespace, every harness and every policy for
// nothing.
func (r *Reconciler) managerInputsChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			prev, okPrev := e.ObjectOld.(*v1alpha1.AgentSession)
			next, okNext := e.ObjectNew.(*v1alpha1.AgentSession)
			if !okPrev || !okNext {
				return true
			}
			if prev.Generation != next.Generation || selection.SessionPin(prev) != selection.SessionPin(next) {
				return true
			}
			if managedEqual(&prev.Status, &next.Status) {
				return false
			}
			if r.own.isEcho(next) {
				echoesSkipped.Inc()
				return false
			}
			return true
		},
		DeleteFunc: func(e event.DeleteEvent) bool {
			r.own.forget(e.Object.GetUID())
			return true
		},
	}
}

// sessionsForPolicy maps a RuntimePolicy to the sessions it can affect: those
// in the namespaces it selects now and those that list it (it selected their
// namespace before). A policy whose selector is invalid affects every session.
func (r *Reconciler) sessionsForPolicy(ctx context.Context, o client.Object) []reconcile.Request {
	log := ctrl.LoggerFrom(ctx)
	policy, ok := o.(*v1alpha1.RuntimePolicy)
	if !ok {
		return nil
	}
	if _, err := selection.PolicySelects(policy, nil); err != nil {
		return r.listSessions(ctx)
	}
	var namespaces corev1.NamespaceList
	if err := r.List(ctx, &namespaces); err != nil {
		log.Error(err, "list Namespaces to re-resolve sessions", "runtimePolicy", policy.Name)
		return nil
	}
	var reqs []reconcile.Request
	for i := range namespaces.Items {
		ns := &namespaces.Items[i]
		if selected, _ := selection.PolicySelects(policy, ns.Labels); selected {
			reqs = append(reqs, r.listSessions(ctx, client.InNamespace(ns.Name))...)
		}
	}
	reqs = append(reqs, r.listSessions(ctx, client.MatchingFields{matchedPolicyIndex: policy.Name})...)
	return dedupe(reqs)
}

// sessionsInNamespace maps a Namespace to its sessions.
func (r *Reconciler) sessionsInNamespace(ctx context.Context, o client.Object) []reconcile.Request {
	return r.listSessions(ctx, client.InNamespace(o.GetName()))
}

// pinnedSessions maps an AgentHarness to every pinned session: only a pin
// under an enforced `auto` depends on the harnesses (would auto select the
// pinned harness?), and a change of allowedNamespaces can hide a harness from
// a namespace it was visible to.
func (r *Reconciler) pinnedSessions(ctx context.Context, _ client.Object) []reconcile.Request {
	return r.listSessions(ctx, client.MatchingFields{pinnedIndex: "true"})
}

// listSessions lists the keys of the sessions opts select. The list shares
// the cache's objects instead of deep-copying them (only their keys are
// read): a policy that selects every namespace lists every session, and a
// copy of each was the manager's peak memory at 10,000 sessions
// (docs/benchmarks/operator-scale.md).
func (r *Reconciler) listSessions(ctx context.Context, opts ...client.ListOption) []reconcile.Request {
	var sessions v1alpha1.AgentSessionList
	if err := r.List(ctx, &sessions, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list AgentSessions to re-resolve")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(sessions.Items))
	for i := range sessions.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&sessions.Items[i])})
	}
	return reqs
}

func dedupe(reqs []reconcile.Request) []reconcile.Request {
	slices.SortFunc(reqs, func(a, b reconcile.Request) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return slices.Compact(reqs)
}
