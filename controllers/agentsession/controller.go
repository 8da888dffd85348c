// Package agentsession is the AgentSession controller: the manager's part of the session status.
// It reads as "fetch → ordered phases → one status write"; the manager never
// runs turns and never writes the dispatcher's part of a status.
package agentsession

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	harnessv1alpha1 "github.com/openclaw/harness-operator/api/v1alpha1"
)

// Reconciler reconciles the manager's part of AgentSession status
// (the policy a session falls under, and its conditions). Its phases arrive
// with the admission/policy issue; the dispatcher writes the rest.
type Reconciler struct {
	client.Client

	// MaxConcurrentReconciles bounds parallel reconciles of AgentSession objects.
	MaxConcurrentReconciles int
}

// +kubebuilder:rbac:groups=harness.openclaw.dev,resources=agentsessions,verbs=get;list;watch
// +kubebuilder:rbac:groups=harness.openclaw.dev,resources=agentsessions/status,verbs=get;patch;update

// Reconcile fetches the AgentSession; not-found means it was deleted.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var session harnessv1alpha1.AgentSession
	if err := r.Get(ctx, req.NamespacedName, &session); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("observed agent session", "generation", session.Generation)
	return ctrl.Result{}, nil
}

// SetupWithManager registers the reconciler with the manager.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := ctrl.NewControllerManagedBy(mgr).
		For(&harnessv1alpha1.AgentSession{}).
		Named("agentsession").
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Complete(r); err != nil {
		return fmt.Errorf("set up agentsession controller: %w", err)
	}
	return nil
}
