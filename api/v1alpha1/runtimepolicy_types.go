package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SessionOverridePolicy says whether sessions may override the runtime a policy sets.
// +kubebuilder:validation:Enum=Allow;Deny
type SessionOverridePolicy string

const (
	// SessionOverridesAllow lets a session's runtimeOverride or pin take precedence.
	SessionOverridesAllow SessionOverridePolicy = "Allow"
	// SessionOverridesDeny enforces the policy: a contradicting override, pin or entry
	// of another policy fails closed (OverrideDenied).
	SessionOverridesDeny SessionOverridePolicy = "Deny"
)

// RuntimePolicy condition types.
const (
	// PolicyConditionAccepted: the policy is valid and in force (possibly partly conflicted).
	PolicyConditionAccepted = "Accepted"
	// PolicyConditionConflicted: some keys lose to an older or enforcing policy.
	PolicyConditionConflicted = "Conflicted"
	// PolicyConditionReferencesResolved: every runtime id names a visible harness,
	// a built-in runtime or a CLI backend alias.
	PolicyConditionReferencesResolved = "ReferencesResolved"
)

// PolicyConditionReason is the machine-readable reason of a RuntimePolicy condition.
type PolicyConditionReason string

// RuntimePolicy condition reasons.
const (
	// PolicyReasonAccepted: the policy is in force.
	PolicyReasonAccepted PolicyConditionReason = "Accepted"
	// PolicyReasonInvalid: the policy cannot be evaluated.
	PolicyReasonInvalid PolicyConditionReason = "Invalid"
	// PolicyReasonNoConflicts: no key conflicts with another policy.
	PolicyReasonNoConflicts PolicyConditionReason = "NoConflicts"
	// PolicyReasonOlderPolicyWins: an older policy sets a different runtime for a key.
	PolicyReasonOlderPolicyWins PolicyConditionReason = "OlderPolicyWins"
	// PolicyReasonDenyPolicyWins: a Deny policy enforces a different runtime for a key.
	PolicyReasonDenyPolicyWins PolicyConditionReason = "DenyPolicyWins"
	// PolicyReasonResolved: every runtime id resolves.
	PolicyReasonResolved PolicyConditionReason = "Resolved"
	// PolicyReasonHarnessNotFound: a runtime id names no visible harness; turns fail closed.
	PolicyReasonHarnessNotFound PolicyConditionReason = "HarnessNotFound"
)

// ProviderModelRuntime is a provider catalog row: one model of the provider and its runtime.
type ProviderModelRuntime struct {
	// id is the model id within the provider, without the provider prefix (e.g. gpt-5.5).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="!self.contains('/') && !self.contains('*') && self.trim() == self",message="models[].id must be a bare model id without '/', '*' or surrounding spaces"
	ID string `json:"id"`

	// runtime is the runtime id for this model.
	// +required
	Runtime RuntimeID `json:"runtime"`
}

// ProviderRuntimePolicy is the provider-scoped policy and catalog rows of one provider.
// +kubebuilder:validation:XValidation:rule="has(self.runtime) || (has(self.models) && size(self.models) > 0)",message="providers[] entry must set runtime, models, or both"
type ProviderRuntimePolicy struct {
	// provider is the provider id (e.g. openai).
	// +required
	Provider ProviderID `json:"provider"`

	// runtime is the provider-wide runtime id.
	// +optional
	Runtime RuntimeID `json:"runtime,omitempty"`

	// models are catalog rows: per-model runtimes of this provider.
	// +optional
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MaxItems=128
	Models []ProviderModelRuntime `json:"models,omitempty"`
}

// ModelRuntimePolicy is a model-scoped runtime entry.
type ModelRuntimePolicy struct {
	// ref is `provider/model`, `provider/*` (every model of the provider), or a
	// bare `model` id.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=192
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([a-z0-9._-]*[a-z0-9])?/)?[^/*\\\\s]+$') || self.matches('^[a-z0-9]([a-z0-9._-]*[a-z0-9])?/\\\\*$')",message="ref must be provider/model, provider/* or a bare model id (lowercase provider, no spaces)"
	Ref string `json:"ref"`

	// runtime is the runtime id for the models the ref names.
	// +required
	Runtime RuntimeID `json:"runtime"`
}

// AgentRuntimePolicy holds the model-scoped entries of one agent; they take
// precedence over every other entry for that agent.
type AgentRuntimePolicy struct {
	// agentId is the OpenClaw agent id.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._-]*$`
	AgentID string `json:"agentId"`

	// models are the agent's model-scoped runtime entries.
	// +required
	// +listType=map
	// +listMapKey=ref
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	Models []ModelRuntimePolicy `json:"models"`
}

// RuntimePolicySpec says which runtime each provider or model must use in the
// namespaces the policy selects. Precedence, per session: agent entry > exact
// model ref > catalog row > provider/* > provider-wide > auto.
// +kubebuilder:validation:XValidation:rule="has(self.providers) || has(self.models) || has(self.agents)",message="spec must set at least one of providers, models and agents"
type RuntimePolicySpec struct {
	// namespaceSelector selects the namespaces whose sessions the policy governs;
	// empty or omitted selects every namespace.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// providers are provider-scoped runtimes and provider catalog rows.
	// +optional
	// +listType=map
	// +listMapKey=provider
	// +kubebuilder:validation:MaxItems=64
	Providers []ProviderRuntimePolicy `json:"providers,omitempty"`

	// models are model-scoped runtimes.
	// +optional
	// +listType=map
	// +listMapKey=ref
	// +kubebuilder:validation:MaxItems=256
	Models []ModelRuntimePolicy `json:"models,omitempty"`

	// agents are per-agent model-scoped runtimes.
	// +optional
	// +listType=map
	// +listMapKey=agentId
	// +kubebuilder:validation:MaxItems=64
	Agents []AgentRuntimePolicy `json:"agents,omitempty"`

	// sessionOverrides is Allow (default) or Deny. A Deny policy enforces: for every
	// provider and model it governs, no other policy's entry and no session override
	// or pin may resolve to a different runtime.
	// +optional
	// +kubebuilder:default=Allow
	SessionOverrides SessionOverridePolicy `json:"sessionOverrides,omitempty"`
}

// PolicyConflict is one key this policy loses.
type PolicyConflict struct {
	// key is `<agentId or *>/<provider>/<model ref or *>`.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Key string `json:"key"`

	// runtime is the runtime this policy asks for.
	// +required
	Runtime RuntimeID `json:"runtime"`

	// winner is the name of the RuntimePolicy whose runtime applies.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Winner string `json:"winner"`

	// winnerRuntime is the runtime that applies.
	// +required
	WinnerRuntime RuntimeID `json:"winnerRuntime"`
}

// RuntimePolicyStatus is written by the manager.
type RuntimePolicyStatus struct {
	// conditions are Accepted, Conflicted and ReferencesResolved.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conflicts lists the keys this policy loses (at most 64 are listed).
	// +optional
	// +listType=map
	// +listMapKey=key
	// +kubebuilder:validation:MaxItems=64
	Conflicts []PolicyConflict `json:"conflicts,omitempty"`

	// matchedNamespaces is the number of namespaces the policy selects.
	// +optional
	MatchedNamespaces int32 `json:"matchedNamespaces,omitempty"`
}

// RuntimePolicy says which runtime a provider or model must use, cluster-wide or
// in the namespaces it selects — for example "OpenAI turns run only through Codex".
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=rp,categories=openclaw
// +kubebuilder:printcolumn:name="Providers",type=string,JSONPath=`.spec.providers[*].provider`
// +kubebuilder:printcolumn:name="Models",type=string,JSONPath=`.spec.models[*].ref`
// +kubebuilder:printcolumn:name="Overrides",type=string,JSONPath=`.spec.sessionOverrides`
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RuntimePolicy struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the policy.
	// +required
	Spec RuntimePolicySpec `json:"spec"`

	// status is the observed state, written by the manager.
	// +optional
	Status RuntimePolicyStatus `json:"status,omitempty"`
}

// RuntimePolicyList is a list of RuntimePolicy.
// +kubebuilder:object:root=true
type RuntimePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the RuntimePolicy objects.
	Items []RuntimePolicy `json:"items"`
}
