// Package agentharness is the AgentHarness controller: the app-server workload, the version floor and attestation.
// It reads as "fetch → ordered phases → one status write"; the manager never
// runs turns and never writes the dispatcher's part of a status.
package agentharness

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	harnessv1alpha1 "github.com/openclaw/harness-operator/api/v1alpha1"
)

// Reconciler reconciles AgentHarness objects: the app-server
// workload, the version floor and attestation. Its phases arrive with the
// harness issue; today it observes the objects so the wiring, RBAC and
// concurrency settings are exercised.
type Reconciler struct {
	client.Client

	// MaxConcurrentReconciles bounds parallel reconciles of AgentHarness objects.
	MaxConcurrentReconciles int
}

// +kubebuilder:rbac:groups=harness.openclaw.dev,resources=agentharnesses,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=harness.openclaw.dev,resources=agentharnesses/status,verbs=get;patch;update
// +kubebuilder:rbac:groups=harness.openclaw.dev,resources=agentharnesses/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile fetches the AgentHarness; not-found means it was deleted.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var harness harnessv1alpha1.AgentHarness
	if err := r.Get(ctx, req.NamespacedName, &harness); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("observed agent harness", "generation", harness.Generation)
	return ctrl.Result{}, nil
}

// SetupWithManager registers the reconciler with the manager.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := ctrl.NewControllerManagedBy(mgr).
		For(&harnessv1alpha1.AgentHarness{}).
		Named("agentharness").
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrentReconciles}).
		Complete(r); err != nil {
		return fmt.Errorf("set up agentharness controller: %w", err)
	}
	return nil
}
