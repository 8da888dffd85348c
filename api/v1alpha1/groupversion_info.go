// Package v1alpha1 contains the API types of the harness.openclaw.dev group:
// AgentHarness (a registered agent harness and its app-server workload),
// RuntimePolicy (which runtime a provider or model must use) and AgentSession
// (one OpenClaw session whose turns the dispatcher executes).
//
// +kubebuilder:object:generate=true
// +groupName=harness.openclaw.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every type in this package.
	GroupVersion = schema.GroupVersion{Group: "harness.openclaw.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
