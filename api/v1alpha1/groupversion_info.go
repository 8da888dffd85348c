// Package v1alpha1 contains the API types of the harness.openclaw.dev group:
// AgentHarness (a registered agent harness and its app-server workload),
// RuntimePolicy (which runtime a provider or model must use) and AgentSession
// (one OpenClaw session whose turns the dispatcher executes).
//
// +kubebuilder:object:generate=true
// +groupName=harness.openclaw.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every type in this package.
	GroupVersion = schema.GroupVersion{Group: "harness.openclaw.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes registers the kinds of this package (kept dependency-light:
// only apimachinery, so clients can import the API cheaply).
func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&AgentHarness{}, &AgentHarnessList{},
		&RuntimePolicy{}, &RuntimePolicyList{},
		&AgentSession{}, &AgentSessionList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
