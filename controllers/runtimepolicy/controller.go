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
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	harnessv1alpha1 "github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/conditions"
	"github.com/openclaw/harness-operator/internal/selection"
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
// policies (DESIGN.md §3, selection.ConflictsFor) and reference resolution.
// A change to one policy can change another's Conflicted state, so every
// policy is re-evaluated when any policy, a namespace's labels or an
// AgentHarness changes.
type Reconciler struct {
	client.Client

	// MaxConcurrentReconciles bounds parallel reconciles of RuntimePolicy objects.
	MaxConcurrentReconciles int

	// status applies the status and emits an Event per condition change;
	// set by SetupWithManager.
	status conditions.StatusWriter

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
	var policy harnessv1alpha1.RuntimePolicy
	if err := r.Get(ctx, req.NamespacedName, &policy); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s, err := r.newScope(ctx, &policy)
	if err != nil {
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

// scope is one reconcile: the policy, what the phases read, and the status
// they build.
type scope struct {
	policy     *harnessv1alpha1.RuntimePolicy
	policies   []*harnessv1alpha1.RuntimePolicy
	namespaces []corev1.Namespace
	harnesses  []*harnessv1alpha1.AgentHarness
	now        metav1.Time

	// valid is false when the spec cannot be evaluated (set by acceptance).
	valid bool
	// selected are the namespaces the policy selects (set by matched namespaces).
	selected []*corev1.Namespace
	// desired is the status the phases build.
	desired harnessv1alpha1.RuntimePolicyStatus
}

// newScope reads the policies, namespaces and harnesses (from the cache).
// The phases only read them, so the cache's objects are not copied: every
// policy change reconciles every policy, and with a thousand policies and
// harnesses the copies kept the manager's two cores busy (issue 18's
// admission benchmark).
func (r *Reconciler) newScope(ctx context.Context, policy *harnessv1alpha1.RuntimePolicy) (*scope, error) {
	var policies harnessv1alpha1.RuntimePolicyList
	if err := r.List(ctx, &policies, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list RuntimePolicies: %w", err)
	}
	var namespaces corev1.NamespaceList
	if err := r.List(ctx, &namespaces, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list Namespaces: %w", err)
	}
	var harnesses harnessv1alpha1.AgentHarnessList
	if err := r.List(ctx, &harnesses, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list AgentHarnesses: %w", err)
	}
	s := &scope{policy: policy, namespaces: namespaces.Items, now: metav1.Now()}
	for i := range policies.Items {
		if policies.Items[i].Name == policy.Name {
			s.policies = append(s.policies, policy) // the version just read
			continue
		}
		s.policies = append(s.policies, &policies.Items[i])
	}
	for i := range harnesses.Items {
		s.harnesses = append(s.harnesses, &harnesses.Items[i])
	}
	return s, nil
}

// setCondition sets one condition of the desired status, keeping the current
// lastTransitionTime when the condition's status does not change.
func (s *scope) setCondition(typ string, status metav1.ConditionStatus, reason harnessv1alpha1.PolicyConditionReason, msg string) {
	conditions.Set(&s.desired.Conditions, s.policy.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: string(reason), Message: msg,
		ObservedGeneration: s.policy.Generation, LastTransitionTime: s.now,
	})
}

// reconcileAcceptance: Accepted is True unless the spec cannot be evaluated
// (an invalid namespaceSelector); such a policy is not in force.
func reconcileAcceptance(s *scope) {
	if _, err := selection.PolicySelects(s.policy, nil); err != nil {
		s.setCondition(harnessv1alpha1.PolicyConditionAccepted, metav1.ConditionFalse, harnessv1alpha1.PolicyReasonInvalid,
			fmt.Sprintf("The policy is not in force: %v.", err))
		return
	}
	s.valid = true
	s.setCondition(harnessv1alpha1.PolicyConditionAccepted, metav1.ConditionTrue, harnessv1alpha1.PolicyReasonAccepted,
		"The policy is in force; keys it loses to other policies are listed in status.conflicts.")
}

// reconcileMatchedNamespaces counts the namespaces the policy selects.
func reconcileMatchedNamespaces(s *scope) {
	if !s.valid {
		return
	}
	for i := range s.namespaces {
		if ok, err := selection.PolicySelects(s.policy, s.namespaces[i].Labels); err == nil && ok {
			s.selected = append(s.selected, &s.namespaces[i])
		}
	}
	s.desired.MatchedNamespaces = int32(len(s.selected))
}

// reconcileConflicts lists the keys the policy loses to older or enforcing
// policies over overlapping namespaces (DESIGN.md §3).
func reconcileConflicts(s *scope) {
	if !s.valid {
		s.setCondition(harnessv1alpha1.PolicyConditionConflicted, metav1.ConditionUnknown, harnessv1alpha1.PolicyReasonInvalid,
			"Conflicts are not evaluated: the policy is not in force.")
		return
	}
	nsLabels := make(map[string]map[string]string, len(s.namespaces))
	for i := range s.namespaces {
		nsLabels[s.namespaces[i].Name] = s.namespaces[i].Labels
	}
	overlap := func(a, b *harnessv1alpha1.RuntimePolicy) bool { return selection.NamespacesOverlap(a, b, nsLabels) }
	lost := selection.ConflictsFor(s.policy, s.policies, overlap)
	if len(lost) == 0 {
		s.setCondition(harnessv1alpha1.PolicyConditionConflicted, metav1.ConditionFalse, harnessv1alpha1.PolicyReasonNoConflicts,
			"No key conflicts with another policy.")
		return
	}
	reason := harnessv1alpha1.PolicyReasonOlderPolicyWins
	var keys []string
	for i, c := range lost {
		if c.Reason == harnessv1alpha1.PolicyReasonDenyPolicyWins {
			reason = harnessv1alpha1.PolicyReasonDenyPolicyWins
		}
		if i < maxConflicts {
			s.desired.Conflicts = append(s.desired.Conflicts, harnessv1alpha1.PolicyConflict{
				Key: c.Key, Runtime: harnessv1alpha1.RuntimeID(c.LoserRuntime),
				Winner: c.Winner, WinnerRuntime: harnessv1alpha1.RuntimeID(c.WinnerRuntime),
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
	s.setCondition(harnessv1alpha1.PolicyConditionConflicted, metav1.ConditionTrue, reason, msg+".")
}

// reconcileReferences checks that every runtime id the policy names is
// built in (auto, openclaw, a CLI backend alias) or declared by an
// AgentHarness visible to some namespace the policy selects.
func reconcileReferences(s *scope) {
	if !s.valid {
		s.setCondition(harnessv1alpha1.PolicyConditionReferencesResolved, metav1.ConditionUnknown, harnessv1alpha1.PolicyReasonInvalid,
			"References are not evaluated: the policy is not in force.")
		return
	}
	declared := map[string]bool{}
	for _, h := range s.harnesses {
		id, ok := selection.DeclaredHarnessID(h)
		if !ok || declared[id] {
			continue
		}
		for _, ns := range s.selected {
			// A harness whose own selector is invalid is visible nowhere.
			if visible, err := selection.HarnessVisible(h, ns.Name, ns.Labels); err == nil && visible {
				declared[id] = true
				break
			}
		}
	}
	missing := selection.UnresolvedRuntimeIDs(s.policy, func(id string) bool { return declared[id] })
	if len(missing) == 0 {
		s.setCondition(harnessv1alpha1.PolicyConditionReferencesResolved, metav1.ConditionTrue, harnessv1alpha1.PolicyReasonResolved,
			"Every runtime id names a visible AgentHarness, a built-in runtime or a CLI backend alias.")
		return
	}
	s.setCondition(harnessv1alpha1.PolicyConditionReferencesResolved, metav1.ConditionFalse, harnessv1alpha1.PolicyReasonHarnessNotFound,
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
	if c.Type == harnessv1alpha1.PolicyConditionConflicted {
		return c.Status == metav1.ConditionTrue
	}
	return c.Status == metav1.ConditionFalse
}

// statusEqual compares two statuses, conditions without lastTransitionTime.
func statusEqual(a, b *harnessv1alpha1.RuntimePolicyStatus) bool {
	if a.ObservedGeneration != b.ObservedGeneration || a.MatchedNamespaces != b.MatchedNamespaces ||
		!equality.Semantic.DeepEqual(normalizeConflicts(a.Conflicts), normalizeConflicts(b.Conflicts)) {
		return false
	}
	return len(a.Conditions) == len(b.Conditions) && conditions.SameTypes(a.Conditions, b.Conditions, conditions.Types(a.Conditions)...)
}

func normalizeConflicts(cs []harnessv1alpha1.PolicyConflict) []harnessv1alpha1.PolicyConflict {
	if len(cs) == 0 {
		return nil
	}
	return cs
}

// SetupWithManager registers the reconciler with the manager: RuntimePolicies
// (a spec change, creation or deletion of any policy re-evaluates all
// policies), Namespaces (creation, deletion, label changes) and
// AgentHarnesses (creation, deletion, spec changes) are watched through
// mapping functions; nothing polls.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.status = conditions.StatusWriter{Client: r.Client,
		Recorder:     mgr.GetEventRecorder(conditions.EventReporter("manager", controllerName)),
		FieldManager: conditions.FieldManager("manager"), Warning: warningCondition}
	allPolicies := handler.EnqueueRequestsFromMapFunc(r.allPolicies)
	if err := ctrl.NewControllerManagedBy(mgr).
		For(&harnessv1alpha1.RuntimePolicy{}).
		Watches(&harnessv1alpha1.RuntimePolicy{}, allPolicies, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Namespace{}, allPolicies, builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Watches(&harnessv1alpha1.AgentHarness{}, allPolicies, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Named(controllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Complete(r); err != nil {
		return fmt.Errorf("set up runtimepolicy controller: %w", err)
	}
	return nil
}

// allPolicies maps any change that can affect conflicts, matched namespaces
// or references to every RuntimePolicy, sorted by name.
func (r *Reconciler) allPolicies(ctx context.Context, _ client.Object) []reconcile.Request {
	var policies harnessv1alpha1.RuntimePolicyList
	if err := r.List(ctx, &policies); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list RuntimePolicies to re-evaluate")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(policies.Items))
	for i := range policies.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: policies.Items[i].Name}})
	}
	slices.SortFunc(reqs, func(a, b reconcile.Request) int { return strings.Compare(a.Name, b.Name) })
	return reqs
}
