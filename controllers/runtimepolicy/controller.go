// Package runtimepolicy is the RuntimePolicy controller: acceptance, conflicts between policies, reference resolution.
// It reads as "fetch → ordered phases → one status write"; the manager never
// runs turns and never writes the dispatcher's part of a status.
package runtimepolicy

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	harnessv1alpha1 "github.com/openclaw/harness-operator/api/v1alpha1"
)

// Reconciler reconciles RuntimePolicy objects: acceptance,
// conflicts between policies and reference resolution. Its phases arrive with
// the admission/policy issue.
type Reconciler struct {
	client.Client

	// MaxConcurrentReconciles bounds parallel reconciles of RuntimePolicy objects.
	MaxConcurrentReconciles int
}

// +kubebuilder:rbac:groups=harness.openclaw.dev,resources=runtimepolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=harness.openclaw.dev,resources=runtimepolicies/status,verbs=get;patch;update
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// Reconcile fetches the RuntimePolicy; not-found means it was deleted.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var policy harnessv1alpha1.RuntimePolicy
	if err := r.Get(ctx, req.NamespacedName, &policy); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("observed runtime policy", "generation", policy.Generation)
	return ctrl.Result{}, nil
}

// SetupWithManager registers the reconciler with the manager.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := ctrl.NewControllerManagedBy(mgr).
		For(&harnessv1alpha1.RuntimePolicy{}).
		Named("runtimepolicy").
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Complete(r); err != nil {
		return fmt.Errorf("set up runtimepolicy controller: %w", err)
	}
	return nil
}
