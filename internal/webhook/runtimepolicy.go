package webhook

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// defaultPolicy is filled in once the conflicts engine lands.
func defaultPolicy(_ context.Context, _ *v1alpha1.RuntimePolicy) (admission.Warnings, error) {
	return nil, nil
}

type policyValidator struct{ reader client.Reader }

func (v *policyValidator) ValidateCreate(context.Context, *v1alpha1.RuntimePolicy) (admission.Warnings, error) {
	return nil, nil
}

func (v *policyValidator) ValidateUpdate(context.Context, *v1alpha1.RuntimePolicy, *v1alpha1.RuntimePolicy) (admission.Warnings, error) {
	return nil, nil
}

func (v *policyValidator) ValidateDelete(context.Context, *v1alpha1.RuntimePolicy) (admission.Warnings, error) {
	return nil, nil
}
