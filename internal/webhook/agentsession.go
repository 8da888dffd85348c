package webhook

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

func defaultSession(_ context.Context, _ *v1alpha1.AgentSession) (admission.Warnings, error) {
	return nil, nil
}

type sessionValidator struct{ reader client.Reader }

func (v *sessionValidator) ValidateCreate(context.Context, *v1alpha1.AgentSession) (admission.Warnings, error) {
	return nil, nil
}

func (v *sessionValidator) ValidateUpdate(context.Context, *v1alpha1.AgentSession, *v1alpha1.AgentSession) (admission.Warnings, error) {
	return nil, nil
}

func (v *sessionValidator) ValidateDelete(context.Context, *v1alpha1.AgentSession) (admission.Warnings, error) {
	return nil, nil
}
