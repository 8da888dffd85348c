package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ModelSelectionLock says whether the session's model may change.
// +kubebuilder:validation:Enum=Locked;Unlocked
type ModelSelectionLock string

const (
	// ModelSelectionLocked pins the session's model and runtime.
	ModelSelectionLocked ModelSelectionLock = "Locked"
	// ModelSelectionUnlocked lets the gateway switch models.
	ModelSelectionUnlocked ModelSelectionLock = "Unlocked"
)

// PolicySource is the kind of entry that decided the runtime a policy asks for.
// +kubebuilder:validation:Enum=agent;model;catalog;provider-wildcard;provider;override;default
type PolicySource string

const (
	// PolicySourceAgent: a per-agent model entry.
	PolicySourceAgent PolicySource = "agent"
	// PolicySourceModel: an exact `provider/model` or bare model ref.
	PolicySourceModel PolicySource = "model"
	// PolicySourceCatalog: a provider catalog row.
	PolicySourceCatalog PolicySource = "catalog"
	// PolicySourceProviderWildcard: a `provider/*` ref.
	PolicySourceProviderWildcard PolicySource = "provider-wildcard"
	// PolicySourceProvider: a provider-wide runtime.
	PolicySourceProvider PolicySource = "provider"
	// PolicySourceOverride: the session's runtimeOverride.
	PolicySourceOverride PolicySource = "override"
	// PolicySourceDefault: no entry applies; the runtime is auto.
	PolicySourceDefault PolicySource = "default"
)

// RuntimeSource is where the runtime id of a decision came from.
// +kubebuilder:validation:Enum=session;override;model;provider;implicit
type RuntimeSource string

const (
	// RuntimeSourceSession: the session's persisted harness pin.
	RuntimeSourceSession RuntimeSource = "session"
	// RuntimeSourceOverride: the session's runtimeOverride.
	RuntimeSourceOverride RuntimeSource = "override"
	// RuntimeSourceModel: a model-scoped policy entry.
	RuntimeSourceModel RuntimeSource = "model"
	// RuntimeSourceProvider: a provider-scoped policy entry.
	RuntimeSourceProvider RuntimeSource = "provider"
	// RuntimeSourceImplicit: no policy; auto (or implicit Codex for OpenAI).
	RuntimeSourceImplicit RuntimeSource = "implicit"
)

// SupportResult is a candidate harness's answer to supports(ctx).
// +kubebuilder:validation:Enum=Supported;Unsupported
type SupportResult string

const (
	// SupportResultSupported: the harness supports the route.
	SupportResultSupported SupportResult = "Supported"
	// SupportResultUnsupported: the harness does not support the route or was not asked.
	SupportResultUnsupported SupportResult = "Unsupported"
)

// TurnOutcome is how a turn ended.
// +kubebuilder:validation:Enum=Succeeded;Failed;Interrupted;TimedOut
type TurnOutcome string

const (
	// TurnSucceeded: the native turn completed.
	TurnSucceeded TurnOutcome = "Succeeded"
	// TurnFailed: the turn failed (see the error of the turn's result).
	TurnFailed TurnOutcome = "Failed"
	// TurnInterrupted: the turn was interrupted by the client.
	TurnInterrupted TurnOutcome = "Interrupted"
	// TurnTimedOut: the turn passed its deadline.
	TurnTimedOut TurnOutcome = "TimedOut"
)

// TerminalClassification classifies a completed turn with no visible assistant text.
// +kubebuilder:validation:Enum=empty;reasoning-only;planning-only
type TerminalClassification string

const (
	// ClassificationEmpty: no visible text, plan or reasoning.
	ClassificationEmpty TerminalClassification = "empty"
	// ClassificationReasoningOnly: only reasoning text.
	ClassificationReasoningOnly TerminalClassification = "reasoning-only"
	// ClassificationPlanningOnly: only plan text.
	ClassificationPlanningOnly TerminalClassification = "planning-only"
)

// AgentSession condition types (written by the manager).
const (
	// SessionConditionPolicyResolved: the runtime policy for the session is known.
	SessionConditionPolicyResolved = "PolicyResolved"
	// SessionConditionReady: the session can take turns as far as policy says.
	SessionConditionReady = "Ready"
)

// SessionConditionReason is the machine-readable reason of an AgentSession condition.
type SessionConditionReason string

// AgentSession condition reasons.
const (
	// SessionReasonPolicyMatched: one or more policies set the runtime.
	SessionReasonPolicyMatched SessionConditionReason = "PolicyMatched"
	// SessionReasonNoPolicy: no policy applies; the runtime is auto.
	SessionReasonNoPolicy SessionConditionReason = "NoPolicy"
	// SessionReasonOverrideDenied: the override or pin contradicts a Deny policy.
	SessionReasonOverrideDenied SessionConditionReason = "OverrideDenied"
	// SessionReasonReady: the session can take turns.
	SessionReasonReady SessionConditionReason = "Ready"
)

// AgentSessionSpec is written by the gateway; the session is authoritative for
// every turn sent for it.
type AgentSessionSpec struct {
	// agentId is the OpenClaw agent id. Immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._-]*$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.agentId is immutable"
	AgentID string `json:"agentId"`

	// sessionKey is OpenClaw's session key (e.g. agent:main:main). Immutable;
	// OpenClaw's /new keeps the key and starts a new AgentSession.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.sessionKey is immutable"
	// +kubebuilder:validation:XValidation:rule="self.trim() == self && !self.matches('[\\\\x00-\\\\x1f]')",message="spec.sessionKey must not have surrounding spaces or control characters"
	SessionKey string `json:"sessionKey"`

	// sessionId is OpenClaw's session id. Immutable.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._:-]*$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.sessionId is immutable"
	SessionID string `json:"sessionId"`

	// model is the session's model as `provider/model` (e.g. openai/gpt-5.5).
	// +required
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=192
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([a-z0-9._-]*[a-z0-9])?/[^/*\\\\s]+$')",message="spec.model must be provider/model with a lowercase provider id (e.g. openai/gpt-5.5)"
	Model string `json:"model"`

	// runtimeOverride is the session's runtime override (a normalized runtime id).
	// A Deny policy makes a contradicting override fail closed.
	// +optional
	RuntimeOverride RuntimeID `json:"runtimeOverride,omitempty"`

	// modelSelectionLocked is Locked or Unlocked (default).
	// +optional
	// +kubebuilder:default=Unlocked
	ModelSelectionLocked ModelSelectionLock `json:"modelSelectionLocked,omitempty"`

	// resetGeneration counts OpenClaw /reset requests; it only grows. When it
	// differs from status.nativeBinding.generation, the next turn starts a new native thread.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:XValidation:rule="self >= oldSelf",message="spec.resetGeneration must not decrease"
	ResetGeneration int64 `json:"resetGeneration,omitempty"`
}

// SessionPolicy is what runtime policy asks for, without route facts (manager).
type SessionPolicy struct {
	// runtime is the runtime id policy asks for (auto when none applies).
	// +required
	Runtime RuntimeID `json:"runtime"`

	// source is the kind of entry that decided it.
	// +required
	Source PolicySource `json:"source"`

	// matchedPolicies are the RuntimePolicies that select the session's namespace.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	MatchedPolicies []string `json:"matchedPolicies,omitempty"`
}

// SelectionCandidate is one harness considered by a selection.
type SelectionCandidate struct {
	// harnessId is the candidate's harness id.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	HarnessID string `json:"harnessId"`

	// result is Supported or Unsupported.
	// +required
	Result SupportResult `json:"result"`

	// priority is the candidate's priority.
	// +optional
	Priority int32 `json:"priority,omitempty"`

	// reason explains an unsupported result.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Reason string `json:"reason,omitempty"`
}

// LastSelection is the decision of the last turn (dispatcher).
type LastSelection struct {
	// runtime is the selected runtime id.
	// +required
	Runtime RuntimeID `json:"runtime"`

	// reason is the selection reason (auto_plugin, auto_openclaw, forced_plugin, …).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Reason string `json:"reason"`

	// runtimeSource is where the runtime id came from.
	// +required
	RuntimeSource RuntimeSource `json:"runtimeSource"`

	// runId is the turn the decision was made for.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	RunID string `json:"runId,omitempty"`

	// candidates are the harnesses considered, with their support results.
	// +optional
	// +listType=map
	// +listMapKey=harnessId
	// +kubebuilder:validation:MaxItems=64
	Candidates []SelectionCandidate `json:"candidates,omitempty"`
}

// ThreadState says whether a bound native thread has ended a turn with a
// result.
// +kubebuilder:validation:Enum=Provisional;Established
type ThreadState string

const (
	// ThreadProvisional: no turn on the thread has ended with a result.
	ThreadProvisional ThreadState = "Provisional"
	// ThreadEstablished: a turn on the thread ended with a result.
	ThreadEstablished ThreadState = "Established"
)

// NativeBinding binds the session to a native thread (dispatcher).
type NativeBinding struct {
	// threadId is the native thread id.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	ThreadID string `json:"threadId"`

	// pod is the server pod the thread lives on, or `external`.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Pod string `json:"pod"`

	// generation is the spec.resetGeneration the thread was started for.
	// +required
	// +kubebuilder:validation:Minimum=0
	Generation int64 `json:"generation"`

	// sessionUID is the UID of the AgentSession the binding was written for.
	// The dispatcher trusts a binding only when it names this object's UID: a
	// binding without it (written before the field existed) or naming another
	// object is refused with NativeThreadLost until the session is reset.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	SessionUID string `json:"sessionUID,omitempty"`

	// harnessNamespace is the namespace of the AgentHarness whose server
	// holds the thread: the dispatcher's finalizer archives the thread and
	// removes the session's working directory there.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	HarnessNamespace string `json:"harnessNamespace,omitempty"`

	// harnessName is the name of that AgentHarness.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	HarnessName string `json:"harnessName,omitempty"`

	// hostToolsFingerprint identifies the host tools the thread was started
	// with (`sha256:` and a hash of their names, descriptions and parameter
	// schemas, as offered after the tool policy). A turn that offers other
	// host tools continues the conversation on a new thread started with
	// them (a re-seed). Empty means unknown (a thread bound before the field
	// existed): the next turn that offers host tools re-seeds.
	// +optional
	// +kubebuilder:validation:MaxLength=80
	HostToolsFingerprint string `json:"hostToolsFingerprint,omitempty"`

	// authProfile is the id of the auth profile the thread's model requests
	// authenticate with (the turn's authProfile.id); empty: the app-server's
	// own login. Codex fixes how a thread authenticates when it starts, so a
	// turn that adds or drops an auth profile continues the conversation on
	// a new thread (a re-seed); another profile id, or a rotated key, uses
	// the same thread.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	AuthProfile string `json:"authProfile,omitempty"`

	// modelProvider is the model provider the thread was started with, when
	// the dispatcher chose it: `harness-gateway` (the harness's
	// spec.modelGateway) or `harness-auth-profile` (an auth profile without
	// the gateway). Empty: the app-server's own provider, or
	// `harness-auth-profile` when authProfile is set (a binding written before
	// the field existed). Codex refuses to resume a thread with another
	// provider, so a turn that needs another one continues the conversation
	// on a new thread (a re-seed).
	// +optional
	// +kubebuilder:validation:MaxLength=64
	ModelProvider string `json:"modelProvider,omitempty"`

	// threadState is Provisional while no turn on the thread has ended with
	// a result: the turn that started it failed (for example, its app-server
	// died mid-turn). If the server then no longer has such a thread, there
	// is no conversation to lose, and the next turn starts a new thread
	// without a reset. Established once a turn on it ended with a result: a
	// lost established thread is NativeThreadLost until a reset. Empty (a
	// binding written before the field existed) counts as Established.
	// +optional
	ThreadState ThreadState `json:"threadState,omitempty"`
}

// ActiveTurn is the turn running now (dispatcher).
type ActiveTurn struct {
	// runId is the turn's run id.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	RunID string `json:"runId"`

	// startedAt is when the turn started.
	// +required
	StartedAt metav1.Time `json:"startedAt"`

	// deadline is when the turn is stale; admission ignores a stale active turn.
	// +required
	Deadline metav1.Time `json:"deadline"`

	// native locates the turn on its app-server once it started there: a
	// dispatcher that restarts interrupts it (it would otherwise keep
	// running, and spending, with nobody following it).
	// +optional
	Native *NativeTurn `json:"native,omitempty"`
}

// NativeTurn locates a running turn on its app-server.
type NativeTurn struct {
	// threadId is the native thread.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	ThreadID string `json:"threadId"`

	// turnId is the native turn; empty while its start was not confirmed.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	TurnID string `json:"turnId,omitempty"`

	// pod is the server pod, or `external`.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Pod string `json:"pod"`

	// harnessNamespace is the namespace of the server's AgentHarness.
	// +required
	// +kubebuilder:validation:MaxLength=63
	HarnessNamespace string `json:"harnessNamespace"`

	// harnessName is the name of the server's AgentHarness.
	// +required
	// +kubebuilder:validation:MaxLength=253
	HarnessName string `json:"harnessName"`
}

// LastTurn is the outcome of the last finished turn (dispatcher).
type LastTurn struct {
	// runId is the turn's run id.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	RunID string `json:"runId"`

	// outcome is Succeeded, Failed, Interrupted or TimedOut.
	// +required
	Outcome TurnOutcome `json:"outcome"`

	// classification classifies a completed turn without visible text.
	// +optional
	Classification TerminalClassification `json:"classification,omitempty"`

	// errorCode is the error code of a failed turn.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	ErrorCode string `json:"errorCode,omitempty"`

	// startedAt is when the turn started.
	// +required
	StartedAt metav1.Time `json:"startedAt"`

	// finishedAt is when the turn finished.
	// +required
	FinishedAt metav1.Time `json:"finishedAt"`
}

// SessionCounters are cumulative counts of the session's turns (dispatcher).
type SessionCounters struct {
	// turns is the number of turns run.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Turns int64 `json:"turns,omitempty"`

	// failedTurns is the number of turns that did not succeed.
	// +optional
	// +kubebuilder:validation:Minimum=0
	FailedTurns int64 `json:"failedTurns,omitempty"`

	// inputTokens is the number of input tokens used.
	// +optional
	// +kubebuilder:validation:Minimum=0
	InputTokens int64 `json:"inputTokens,omitempty"`

	// cachedInputTokens is the number of cached input tokens used.
	// +optional
	// +kubebuilder:validation:Minimum=0
	CachedInputTokens int64 `json:"cachedInputTokens,omitempty"`

	// outputTokens is the number of output tokens produced.
	// +optional
	// +kubebuilder:validation:Minimum=0
	OutputTokens int64 `json:"outputTokens,omitempty"`
}

// AgentSessionStatus is split by writer: the manager writes policy and conditions,
// the dispatcher writes the rest (server-side apply, one field manager each).
type AgentSessionStatus struct {
	// conditions are PolicyResolved and Ready (manager).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation the manager's part describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// policy is what runtime policy asks for, without route facts (manager).
	// +optional
	Policy *SessionPolicy `json:"policy,omitempty"`

	// agentHarnessId is the ownership pin: written only when a plugin harness ran a
	// turn, never for openclaw, never after an implicit fallback (dispatcher).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	AgentHarnessID string `json:"agentHarnessId,omitempty"`

	// lastSelection is the decision of the last turn (dispatcher).
	// +optional
	LastSelection *LastSelection `json:"lastSelection,omitempty"`

	// nativeBinding binds the session to a native thread (dispatcher).
	// +optional
	NativeBinding *NativeBinding `json:"nativeBinding,omitempty"`

	// activeTurn is the turn running now (dispatcher).
	// +optional
	ActiveTurn *ActiveTurn `json:"activeTurn,omitempty"`

	// lastTurn is the outcome of the last finished turn (dispatcher).
	// +optional
	LastTurn *LastTurn `json:"lastTurn,omitempty"`

	// counters are cumulative counts of the session's turns (dispatcher).
	// +optional
	Counters *SessionCounters `json:"counters,omitempty"`
}

// AgentSession is one OpenClaw session whose prepared turns the dispatcher executes.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=asess,categories=openclaw
// +kubebuilder:printcolumn:name="Model",type=string,JSONPath=`.spec.model`
// +kubebuilder:printcolumn:name="Runtime",type=string,JSONPath=`.status.policy.runtime`
// +kubebuilder:printcolumn:name="Harness",type=string,JSONPath=`.status.agentHarnessId`
// +kubebuilder:printcolumn:name="Turns",type=integer,JSONPath=`.status.counters.turns`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type AgentSession struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is written by the gateway.
	// +required
	Spec AgentSessionSpec `json:"spec"`

	// status is split between the manager and the dispatcher.
	// +optional
	Status AgentSessionStatus `json:"status,omitempty"`
}

// AgentSessionList is a list of AgentSession.
// +kubebuilder:object:root=true
type AgentSessionList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the AgentSession objects.
	Items []AgentSession `json:"items"`
}
