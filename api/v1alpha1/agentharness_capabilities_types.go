package v1alpha1

// HarnessCapabilityName names one operation a gateway may ask a harness for.
// +kubebuilder:validation:Enum=Turns;HostTools;Interrupt;Approvals;UserInput;MCP;Reseed;IsolatedCompletion;SettledTurnFinalization;DelegatedExecution;AuthProfiles
type HarnessCapabilityName string

const (
	// CapabilityTurns: prepared turns on a native thread (…/turns).
	CapabilityTurns HarnessCapabilityName = "Turns"
	// CapabilityHostTools: host tools the gateway answers (…/tool-results).
	CapabilityHostTools HarnessCapabilityName = "HostTools"
	// CapabilityInterrupt: a running turn can be interrupted (…/interrupt).
	CapabilityInterrupt HarnessCapabilityName = "Interrupt"
	// CapabilityApprovals: native approval requests reach the gateway (…/approvals).
	CapabilityApprovals HarnessCapabilityName = "Approvals"
	// CapabilityUserInput: native user-input requests reach the gateway (…/user-input).
	CapabilityUserInput HarnessCapabilityName = "UserInput"
	// CapabilityMCP: a turn's MCP servers are attached to the native runtime.
	CapabilityMCP HarnessCapabilityName = "MCP"
	// CapabilityReseed: a session's conversation continues on a new native thread
	// (new host tools, a return from another runtime).
	CapabilityReseed HarnessCapabilityName = "Reseed"
	// CapabilityIsolatedCompletion: one prompt-only inference with no tools and no
	// thread state (…/completions; the harness SDK's runIsolatedCompletionV2).
	CapabilityIsolatedCompletion HarnessCapabilityName = "IsolatedCompletion"
	// CapabilitySettledTurnFinalization: a final answer on a frozen transcript after
	// tools settled (…/turns/{runId}/finalize; the harness SDK's finalizeSettledTurn).
	CapabilitySettledTurnFinalization HarnessCapabilityName = "SettledTurnFinalization"
	// CapabilityDelegatedExecution: a delegate runs locked sessions for their owner.
	CapabilityDelegatedExecution HarnessCapabilityName = "DelegatedExecution"
	// CapabilityAuthProfiles: a turn carries a prepared auth profile for its session.
	CapabilityAuthProfiles HarnessCapabilityName = "AuthProfiles"
)

// CapabilitySupport says whether a harness offers a capability.
// +kubebuilder:validation:Enum=Supported;ModelDependent;Unsupported
type CapabilitySupport string

const (
	// CapabilitySupported: offered for every model (in a decision: for the
	// attempt's model).
	CapabilitySupported CapabilitySupport = "Supported"
	// CapabilityModelDependent: offered for every model except those
	// excludedModels matches (the message says the rule); a request for an
	// excluded model is refused visibly before any model request. With
	// excludedModels empty the harness's model catalog is not known yet, and
	// the adapter decides each request against the live catalog.
	CapabilityModelDependent CapabilitySupport = "ModelDependent"
	// CapabilityUnsupported: absent (in a decision: absent for the attempt's
	// model); a request for it is refused, never attempted.
	CapabilityUnsupported CapabilitySupport = "Unsupported"
)

// HarnessCapability is one capability of a harness and whether it is offered.
type HarnessCapability struct {
	// name is the capability.
	// +required
	Name HarnessCapabilityName `json:"name"`

	// support is Supported, ModelDependent or Unsupported.
	// +required
	Support CapabilitySupport `json:"support"`

	// message says which models have a ModelDependent capability, or why one is
	// Unsupported.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Message string `json:"message,omitempty"`

	// excludedModels lists, for a ModelDependent capability, the models it is
	// not offered for: every name of the app-server's model catalog
	// (model/list, hidden models included), the union over the handshakes of
	// the harness's servers. A model id is excluded when it contains one of
	// them, case-insensitively (Codex gives catalog metadata to ids that start
	// with a catalog name after one `namespace/` prefix). Empty when the
	// catalog is not known (no handshake read it, or it exceeds these limits);
	// a decision resolves the capability for its model and lists none.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=128
	ExcludedModels []string `json:"excludedModels,omitempty"`
}
