package webhook

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/policy/selection"
)

var sessionGK = v1alpha1.GroupVersion.WithKind("AgentSession").GroupKind()

// defaultSession writes spec.runtimeOverride in normalized form, with a warning.
func defaultSession(_ context.Context, s *v1alpha1.AgentSession) (admission.Warnings, error) {
	var warnings admission.Warnings
	if s.Spec.RuntimeOverride != "" {
		normalizeRuntime(&s.Spec.RuntimeOverride, field.NewPath("spec", "runtimeOverride"), &warnings)
	}
	return warnings, nil
}

// sessionValidator enforces the session rules that need other objects or
// status: a runtimeOverride may not contradict an enforcing Deny policy, a
// model-locked session keeps its model and override, and nothing switches
// the runtime while a turn runs.
type sessionValidator struct {
	reader readers
	// now is the clock for deciding whether status.activeTurn is stale.
	now func() time.Time
}

func (v *sessionValidator) ValidateCreate(ctx context.Context, s *v1alpha1.AgentSession) (admission.Warnings, error) {
	errs, err := v.overrideDenied(ctx, s)
	if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(sessionGK, s.Name, errs)
	}
	return nil, nil
}

func (v *sessionValidator) ValidateUpdate(ctx context.Context, old, s *v1alpha1.AgentSession) (admission.Warnings, error) {
	spec := field.NewPath("spec")
	modelChanged := old.Spec.Model != s.Spec.Model
	overrideChanged := old.Spec.RuntimeOverride != s.Spec.RuntimeOverride
	var errs field.ErrorList

	if old.Spec.ModelSelectionLocked == v1alpha1.ModelSelectionLocked {
		if modelChanged {
			errs = append(errs, field.Forbidden(spec.Child("model"), "the session's model selection is Locked (spec.modelSelectionLocked); the model cannot change"))
		}
		if overrideChanged {
			errs = append(errs, field.Forbidden(spec.Child("runtimeOverride"), "the session's model selection is Locked (spec.modelSelectionLocked); the runtime override cannot change"))
		}
	}
	if t := old.Status.ActiveTurn; t != nil && v.clock().Before(t.Deadline.Time) {
		msg := fmt.Sprintf("turn %s is running (until %s); do not switch harnesses in the middle of a turn — change it after the turn ends",
			t.RunID, t.Deadline.UTC().Format(time.RFC3339))
		if modelChanged {
			errs = append(errs, field.Forbidden(spec.Child("model"), msg))
		}
		if overrideChanged {
			errs = append(errs, field.Forbidden(spec.Child("runtimeOverride"), msg))
		}
	}
	// Only a changed model or override is checked against Deny policies: a
	// policy applied later must not block unrelated updates such as /reset.
	if modelChanged || overrideChanged {
		denied, err := v.overrideDenied(ctx, s)
		if err != nil {
			return nil, err
		}
		errs = append(errs, denied...)
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(sessionGK, s.Name, errs)
	}
	return nil, nil
}

func (v *sessionValidator) ValidateDelete(context.Context, *v1alpha1.AgentSession) (admission.Warnings, error) {
	return nil, nil
}

func (v *sessionValidator) clock() time.Time {
	if v.now != nil {
		return v.now()
	}
	return time.Now()
}

// overrideDenied refuses a runtimeOverride that contradicts a Deny policy
// governing the session's namespace and model (OverrideDenied at dispatch).
func (v *sessionValidator) overrideDenied(ctx context.Context, s *v1alpha1.AgentSession) (field.ErrorList, error) {
	if s.Spec.RuntimeOverride == "" {
		return nil, nil
	}
	policies, err := selectingPolicies(ctx, v.reader, s.Namespace)
	if err != nil {
		return nil, err
	}
	policy, required, denied := selection.OverrideDeniedBy(policies, s.Spec.AgentID, s.Spec.Model, s.Spec.RuntimeOverride)
	if !denied {
		return nil, nil
	}
	return field.ErrorList{field.Forbidden(field.NewPath("spec", "runtimeOverride"), fmt.Sprintf(
		"runtime override %q contradicts RuntimePolicy %q (sessionOverrides: Deny), which requires runtime %q for %s in this namespace",
		s.Spec.RuntimeOverride, policy, required, s.Spec.Model))}, nil
}

// selectingPolicies returns the RuntimePolicies that select a namespace.
func selectingPolicies(ctx context.Context, r readers, namespace string) ([]*v1alpha1.RuntimePolicy, error) {
	namespaces, err := namespaceLabels(ctx, r.cached)
	if err != nil {
		return nil, err
	}
	policies, err := r.listPolicies(ctx, r.cached)
	if err != nil {
		return nil, err
	}
	labels := withNameLabel(namespace, namespaces[namespace])
	var out []*v1alpha1.RuntimePolicy
	for _, p := range policies {
		if ok, err := selection.PolicySelects(p, labels); err == nil && ok {
			out = append(out, p)
		}
	}
	return out, nil
}
