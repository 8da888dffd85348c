package testutil

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// PolicyOption adds to a RuntimePolicy a test builds with NewPolicy.
type PolicyOption func(*v1alpha1.RuntimePolicy)

// NewPolicy is the RuntimePolicy name with opts applied in order.
func NewPolicy(name string, opts ...PolicyOption) *v1alpha1.RuntimePolicy {
	p := &v1alpha1.RuntimePolicy{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, o := range opts {
		o(p)
	}
	return p
}

// ProviderRuntime maps a provider's turns to runtime.
func ProviderRuntime(provider, runtime string) PolicyOption {
	return func(p *v1alpha1.RuntimePolicy) {
		p.Spec.Providers = append(p.Spec.Providers, v1alpha1.ProviderRuntimePolicy{
			Provider: v1alpha1.ProviderID(provider), Runtime: v1alpha1.RuntimeID(runtime)})
	}
}

// ModelRuntime maps a model ref (provider/model) to runtime.
func ModelRuntime(ref, runtime string) PolicyOption {
	return func(p *v1alpha1.RuntimePolicy) {
		p.Spec.Models = append(p.Spec.Models, v1alpha1.ModelRuntimePolicy{Ref: ref, Runtime: v1alpha1.RuntimeID(runtime)})
	}
}

// AgentModelRuntime maps one agent's model ref to runtime.
func AgentModelRuntime(agentID, ref, runtime string) PolicyOption {
	return func(p *v1alpha1.RuntimePolicy) {
		p.Spec.Agents = append(p.Spec.Agents, v1alpha1.AgentRuntimePolicy{
			AgentID: agentID, Models: []v1alpha1.ModelRuntimePolicy{{Ref: ref, Runtime: v1alpha1.RuntimeID(runtime)}}})
	}
}

// Selecting limits the policy to namespaces with these labels.
func Selecting(labels map[string]string) PolicyOption {
	return func(p *v1alpha1.RuntimePolicy) {
		p.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: labels}
	}
}

// Enforcing sets sessionOverrides: Deny.
func Enforcing() PolicyOption {
	return func(p *v1alpha1.RuntimePolicy) { p.Spec.SessionOverrides = v1alpha1.SessionOverridesDeny }
}
