// Package runtimepolicy is the RuntimePolicy controller: acceptance, conflicts between policies, reference resolution.
// It reads as "fetch → ordered phases → one status write"; the manager never
// runs turns and never writes the dispatcher's part of a status.
package runtimepolicy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/platform/conditions"
	"github.com/openclaw/harness-operator/internal/policy/selection"
)

const (
	// controllerName names the controller, its logger and its Events' reporter.
	controllerName = "runtimepolicy"
	// maxConflicts is the most keys status.conflicts lists (the API's MaxItems).
	maxConflicts = 64
	// maxMessageKeys is the most keys a condition message names.
	maxMessageKeys = 5
)

// Reconciler reconciles RuntimePolicy objects: acceptance, conflicts between
// policies (docs/controllers.md, RuntimePolicy; selection.FindConflicts) and
// reference resolution.
// A change to one policy or a namespace's labels can change another
// policy's state, so every policy is reconciled then, from one evaluation of
// them all (inputs.go); a change of an AgentHarness reconciles the policies
// that name its harness id.
type Reconciler struct {
	client.Client

	// MaxConcurrentReconciles bounds parallel reconciles of RuntimePolicy objects.
	MaxConcurrentReconciles int

	// status applies the status and emits an Event per condition change;
	// set by SetupWithManager.
	status conditions.StatusWriter

	// inputs is the evaluation the reconciles of one change share.
	inputs inputs

	// announced holds, by policy name, the generation last announced with
	// SpecApplied: a reconcile that reads a cached status older than its
	// own last write must not announce that generation again.
	announcedMu sync.Mutex
	announced   map[string]int64
}

// +kubebuilder:rbac:groups=harness.openclaw.dev,resources=runtimepolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=harness.openclaw.dev,resources=runtimepolicies/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=harness.openclaw.dev,resources=agentharnesses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile fetches the RuntimePolicy (not-found means it was deleted), runs
// the phases that compute its status, and applies the status once, only when
// it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var policy v1alpha1.RuntimePolicy
	if err := r.Get(ctx, req.NamespacedName, &policy); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s, current, err := r.newScope(ctx, &policy)
	if err != nil || !current {
		// Not current: the cache holds a newer version of the policy than the
		// one just read, and that version's own reconcile is queued.
		return ctrl.Result{}, err
	}
	// The phases, in order; each computes part of the desired status.
	for _, phase := range []func(*scope){reconcileAcceptance, reconcileMatchedNamespaces, reconcileConflicts, reconcileReferences} {
		phase(s)
	}
	s.desired.ObservedGeneration = policy.Generation
	if err := r.writeStatus(ctx, s); err != nil {
		return ctrl.Result{}, fmt.Errorf("write status of RuntimePolicy %s: %w", policy.Name, err)
	}
	return ctrl.Result{}, nil
}

// scope is one reconcile: the policy, its share of the evaluation of all
// policies, the harnesses, and the status the phases build.
type scope struct {
	policy    *v1alpha1.RuntimePolicy
	evaluated *evaluatedPolicy
	harnesses *harnessIndex
	now       metav1.Time

	// desired is the status the phases build.
	desired v1alpha1.RuntimePolicyStatus
}

// newScope reads the policy's evaluation and the harnesses (inputs.go); it
// reports false when the cache already holds a newer version of policy.
func (r *Reconciler) newScope(ctx context.Context, policy *v1alpha1.RuntimePolicy) (*scope, bool, error) {
	evaluated, current, err := r.inputs.evaluated(ctx, r.Client, policy)
	if err != nil || !current {
		return nil, current, err
	}
	harnesses, err := r.inputs.harnessesByID(ctx, r.Client)
	if err != nil {
		return nil, false, err
	}
	return &scope{policy: policy, evaluated: evaluated, harnesses: harnesses, now: metav1.Now()}, true, nil
}

// setCondition sets one condition of the desired status, keeping the current
// lastTransitionTime when the condition's status does not change.
func (s *scope) setCondition(typ string, status metav1.ConditionStatus, reason v1alpha1.PolicyConditionReason, msg string) {
	conditions.Set(&s.desired.Conditions, s.policy.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: string(reason), Message: msg,
		ObservedGeneration: s.policy.Generation, LastTransitionTime: s.now,
	})
}

// reconcileAcceptance: Accepted is True unless the spec cannot be evaluated
// (an invalid namespaceSelector); such a policy is not in force.
func reconcileAcceptance(s *scope) {
	if err := s.evaluated.invalid; err != nil {
		s.setCondition(v1alpha1.PolicyConditionAccepted, metav1.ConditionFalse, v1alpha1.PolicyReasonInvalid,
			fmt.Sprintf("The policy is not in force: %v.", err))
		return
	}
	s.setCondition(v1alpha1.PolicyConditionAccepted, metav1.ConditionTrue, v1alpha1.PolicyReasonAccepted,
		"The policy is in force; keys it loses to other policies are listed in status.conflicts.")
}

// reconcileMatchedNamespaces counts the namespaces the policy selects.
func reconcileMatchedNamespaces(s *scope) {
	s.desired.MatchedNamespaces = int32(len(s.evaluated.selected))
}

// reconcileConflicts lists the keys the policy loses to older or enforcing
// policies over overlapping namespaces (docs/controllers.md, RuntimePolicy).
func reconcileConflicts(s *scope) {
	if s.evaluated.invalid != nil {
		s.setCondition(v1alpha1.PolicyConditionConflicted, metav1.ConditionUnknown, v1alpha1.PolicyReasonInvalid,
			"Conflicts are not evaluated: the policy is not in force.")
		return
	}
	lost := s.evaluated.conflicts
	if len(lost) == 0 {
		s.setCondition(v1alpha1.PolicyConditionConflicted, metav1.ConditionFalse, v1alpha1.PolicyReasonNoConflicts,
			"No key conflicts with another policy.")
		return
	}
	reason := v1alpha1.PolicyReasonOlderPolicyWins
	var keys []string
	for i, c := range lost {
		if c.Reason == v1alpha1.PolicyReasonDenyPolicyWins {
			reason = v1alpha1.PolicyReasonDenyPolicyWins
		}
		if i < maxConflicts {
			s.desired.Conflicts = append(s.desired.Conflicts, v1alpha1.PolicyConflict{
				Key: c.Key, Runtime: v1alpha1.RuntimeID(c.LoserRuntime),
				Winner: c.Winner, WinnerRuntime: v1alpha1.RuntimeID(c.WinnerRuntime),
			})
		}
		if i < maxMessageKeys {
			keys = append(keys, fmt.Sprintf("%s (RuntimePolicy %s requires %s)", c.Key, c.Winner, c.WinnerRuntime))
		}
	}
	msg := fmt.Sprintf("%d key(s) resolve to another policy's runtime: %s", len(lost), strings.Join(keys, ", "))
	if len(lost) > maxMessageKeys {
		msg += fmt.Sprintf(", and %d more (see status.conflicts)", len(lost)-maxMessageKeys)
	}
	s.setCondition(v1alpha1.PolicyConditionConflicted, metav1.ConditionTrue, reason, msg+".")
}

// reconcileReferences checks that every runtime id the policy names is
// built in (auto, openclaw, a CLI backend alias) or declared by an
// AgentHarness visible to some namespace the policy selects.
func reconcileReferences(s *scope) {
	if s.evaluated.invalid != nil {
		s.setCondition(v1alpha1.PolicyConditionReferencesResolved, metav1.ConditionUnknown, v1alpha1.PolicyReasonInvalid,
			"References are not evaluated: the policy is not in force.")
		return
	}
	missing := selection.UnresolvedRuntimeIDs(s.policy, s.harnesses.declaredFor(s.evaluated.selected))
	if len(missing) == 0 {
		s.setCondition(v1alpha1.PolicyConditionReferencesResolved, metav1.ConditionTrue, v1alpha1.PolicyReasonResolved,
			"Every runtime id names a visible AgentHarness, a built-in runtime or a CLI backend alias.")
		return
	}
	s.setCondition(v1alpha1.PolicyConditionReferencesResolved, metav1.ConditionFalse, v1alpha1.PolicyReasonHarnessNotFound,
		fmt.Sprintf("No AgentHarness visible to a namespace this policy selects declares harness id(s) %s; turns that need them fail closed (HarnessNotRegistered).",
			strings.Join(missing, ", ")))
}

// writeStatus applies the desired status with server-side apply when it
// differs from the current one (conditions compared without
// lastTransitionTime); the StatusWriter emits an Event per changed condition.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) error {
	cur := &s.policy.Status
	if statusEqual(cur, &s.desired) {
		return nil
	}
	if err := r.status.Apply(ctx, s.policy, &s.desired, cur.Conditions, s.desired.Conditions); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("runtime policy status applied", "matchedNamespaces", s.desired.MatchedNamespaces,
		"conflicts", len(s.desired.Conflicts), "observedGeneration", s.desired.ObservedGeneration)
	// A spec change of an existing policy re-resolves the runtime of every
	// session it selects (or selected); it is announced here, once, rather
	// than by an Event on each of those sessions (see the AgentSession
	// controller): their status.policy says what each one resolved to.
	if r.status.Recorder != nil && cur.ObservedGeneration != 0 && cur.ObservedGeneration != s.desired.ObservedGeneration &&
		r.announce(s.policy.Name, s.desired.ObservedGeneration) {
		r.status.Recorder.Eventf(s.policy, nil, corev1.EventTypeNormal, "SpecApplied", "ResolveSessions",
			"Generation %d applied: the sessions of the %d namespaces it selects, and of those it no longer selects, re-resolve their runtime (status.policy of each AgentSession).",
			s.desired.ObservedGeneration, s.desired.MatchedNamespaces)
	}
	return nil
}

// announce records generation as the policy's announced one and reports
// whether it was not already.
func (r *Reconciler) announce(name string, generation int64) bool {
	r.announcedMu.Lock()
	defer r.announcedMu.Unlock()
	if r.announced[name] == generation {
		return false
	}
	if r.announced == nil {
		r.announced = map[string]int64{}
	}
	r.announced[name] = generation
	return true
}

// forget drops what was announced of a deleted policy.
func (r *Reconciler) forget(name string) {
	r.announcedMu.Lock()
	defer r.announcedMu.Unlock()
	delete(r.announced, name)
}

// warningCondition: a condition that needs an operator's attention.
func warningCondition(c metav1.Condition) bool {
	if c.Type == v1alpha1.PolicyConditionConflicted {
		return c.Status == metav1.ConditionTrue
	}
	return c.Status == metav1.ConditionFalse
}

// statusEqual compares two statuses, conditions without lastTransitionTime.
func statusEqual(a, b *v1alpha1.RuntimePolicyStatus) bool {
	if a.ObservedGeneration != b.ObservedGeneration || a.MatchedNamespaces != b.MatchedNamespaces ||
		!equality.Semantic.DeepEqual(normalizeConflicts(a.Conflicts), normalizeConflicts(b.Conflicts)) {
		return false
	}
	return len(a.Conditions) == len(b.Conditions) && conditions.SameTypes(a.Conditions, b.Conditions, conditions.Types(a.Conditions)...)
}

func normalizeConflicts(cs []v1alpha1.PolicyConflict) []v1alpha1.PolicyConflict {
	if len(cs) == 0 {
		return nil
	}
	return cs
}

// SetupWithManager registers the reconciler with the manager. A spec change,
// creation or deletion of any RuntimePolicy and a Namespace's creation,
// deletion or label change reconcile every policy; an AgentHarness's
// creation, deletion or spec change reconciles the policies that name its
// harness id (before and after the change). Each handler first tells the
// shared inputs that their part changed; nothing polls.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.status = conditions.StatusWriter{Client: r.Client,
		Recorder:     mgr.GetEventRecorder(conditions.EventReporter("manager", controllerName)),
		FieldManager: conditions.FieldManager("manager"), Warning: warningCondition}
	allPolicies := handler.EnqueueRequestsFromMapFunc(r.allPolicies)
	if err := ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.RuntimePolicy{}).
		Watches(&v1alpha1.RuntimePolicy{}, allPolicies, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Namespace{}, allPolicies, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Watches(&v1alpha1.AgentHarness{}, r.policiesNamingHarness(), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Named(controllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Complete(r); err != nil {
		return fmt.Errorf("set up runtimepolicy controller: %w", err)
	}
	return nil
}

// allPolicies maps a change of a policy or a namespace to every
// RuntimePolicy, sorted by name.
func (r *Reconciler) allPolicies(ctx context.Context, _ client.Object) []reconcile.Request {
	r.inputs.policiesChanged()
	return r.policiesNaming(ctx, nil)
}

// policiesNamingHarness maps a change of an AgentHarness to the policies
// whose runtime ids include the harness id it declared or declares.
func (r *Reconciler) policiesNamingHarness() handler.EventHandler {
	enqueue := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], objs ...client.Object) {
		r.inputs.harnessesChanged()
		ids := map[string]bool{}
		for _, obj := range objs {
			if h, ok := obj.(*v1alpha1.AgentHarness); ok {
				if id, ok := selection.DeclaredHarnessID(h); ok {
					ids[id] = true
				}
			}
		}
		if len(ids) == 0 {
			return
		}
		for _, req := range r.policiesNaming(ctx, ids) {
			q.Add(req)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, q, e.Object)
		},
	}
}

// policiesNaming returns the RuntimePolicies that name one of ids (every
// policy when ids is nil) as reconcile requests, sorted by name.
func (r *Reconciler) policiesNaming(ctx context.Context, ids map[string]bool) []reconcile.Request {
	var policies v1alpha1.RuntimePolicyList
	if err := r.List(ctx, &policies, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list RuntimePolicies to re-evaluate")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(policies.Items))
	for i := range policies.Items {
		p := &policies.Items[i]
		if ids == nil || slices.ContainsFunc(selection.PolicyRuntimeIDs(p), func(id string) bool { return ids[id] }) {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}})
		}
	}
	slices.SortFunc(reqs, func(a, b reconcile.Request) int { return strings.Compare(a.Name, b.Name) })
	return reqs
}
