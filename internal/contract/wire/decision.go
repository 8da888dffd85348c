package wire

import "github.com/openclaw/harness-operator/api/v1alpha1"

// Decision is the outcome of selection.Select for one attempt: which runtime
// runs the turn and why, or the typed error that fails it closed. It is the
// `selected` event (SelectedEvent), the body of `explain` and of the
// dispatcher's /decide, and the source of status.lastSelection.
type Decision struct {
	// Runtime is the harness id that runs the turn, or `openclaw` for every
	// embedded outcome (CLI passthrough included). Empty when Error is set.
	Runtime string `json:"runtime,omitempty"`
	// RequestedRuntime is the normalized runtime id that precedence resolved
	// (`auto`, `openclaw`, a harness id or a CLI backend alias) before support
	// was checked.
	RequestedRuntime string `json:"requestedRuntime,omitempty"`
	// HarnessID is the plugin harness that runs the turn; on an error, the
	// harness the error is about. Empty for embedded outcomes.
	HarnessID string `json:"harnessId,omitempty"`
	// HarnessRef is the AgentHarness object of HarnessID.
	HarnessRef *HarnessRef `json:"harnessRef,omitempty"`
	// Reason is the selection reason; empty when Error is set.
	Reason Reason `json:"reason,omitempty"`
	// RuntimeSource is where the runtime id came from, errors included (empty
	// only for a SessionMismatch, which is refused before precedence runs).
	RuntimeSource v1alpha1.RuntimeSource `json:"runtimeSource,omitempty"`
	// CLIBackend is the CLI backend alias of a cli_runtime_passthrough_openclaw
	// decision (claude-cli, google-gemini-cli).
	CLIBackend string `json:"cliBackend,omitempty"`
	// Candidates lists every visible AgentHarness with its support result,
	// sorted by priority (highest first), then harness id.
	Candidates []Candidate `json:"candidates,omitempty"`
	// Routes are the per-route decisions of a retry set (two or more routes).
	Routes []RouteDecision `json:"routes,omitempty"`
	// ToolPolicy is the tool-policy verdict for the selected plugin harness
	// (absent for embedded outcomes: the gateway enforces its own policy).
	ToolPolicy *ToolPolicyDecision `json:"toolPolicy,omitempty"`
	// MatchedPolicies are the RuntimePolicies with an entry for the attempt's
	// agent and model: the deciding policy first, then the others oldest first.
	MatchedPolicies []string `json:"matchedPolicies,omitempty"`
	// Pin says whether and how an ownership pin took part: the session's
	// status.agentHarnessId, or a what-if attempt's agentHarnessId. Absent
	// when there is none.
	Pin *PinUse `json:"pin,omitempty"`
	// Error is set when the attempt fails closed or contradicts its session.
	Error *Error `json:"error,omitempty"`
	// Capabilities are what the selected harness offers (its
	// status.capabilities), resolved for the session's model: a
	// ModelDependent capability is Supported or Unsupported for it once the
	// harness's model catalog is known. A gateway tells an absent capability
	// from a failed call.
	Capabilities []v1alpha1.HarnessCapability `json:"capabilities,omitzero"`
	// AuthBootstrap is the selected harness's spec.authBootstrap (the harness SDK's
	// "harness-owned auth bootstrap"): Harness means the harness's runtime
	// authenticates with its own credentials, so the gateway skips its own
	// provider credential bootstrap and missing-credential failure for this
	// attempt. Empty when no harness was selected.
	AuthBootstrap v1alpha1.AuthBootstrap `json:"authBootstrap,omitempty"`
}

// PinUse is how an ownership pin took part in a decision.
type PinUse struct {
	// HarnessID is the pinned runtime id, as the session or attempt gave it.
	HarnessID string `json:"harnessId"`
	// Use is how it took part.
	Use PinUseKind `json:"use"`
}

// PinUseKind is how an ownership pin took part in a decision. Only a locked
// session's pin takes part (OpenClaw's resolveSessionPinnedHarnessId); a
// what-if attempt's pin counts as a locked session's.
type PinUseKind string

const (
	// PinUnchecked: the pin was the requested runtime and the attempt's route
	// facts were pending: the pinned harness runs without a support check.
	PinUnchecked PinUseKind = "Unchecked"
	// PinChecked: the pin was the requested runtime and was checked against
	// every route of the attempt.
	PinChecked PinUseKind = "Checked"
	// PinUnlocked: the session's model selection is not locked: the pin took
	// no part.
	PinUnlocked PinUseKind = "Unlocked"
	// PinStale: a reset made the pin stale: it took no part.
	PinStale PinUseKind = "Stale"
	// PinAuto: a pin of `auto` leaves policy in charge and sets the session
	// override aside.
	PinAuto PinUseKind = "Auto"
)

// HarnessRef names an AgentHarness object.
type HarnessRef struct {
	// Namespace is the AgentHarness's namespace.
	Namespace string `json:"namespace"`
	// Name is the AgentHarness's metadata.name.
	Name string `json:"name"`
}

// Candidate is one visible harness and its answer for the attempt's routes.
type Candidate struct {
	// HarnessID is the candidate's harness id.
	HarnessID string `json:"harnessId"`
	// HarnessRef is the AgentHarness object (two objects may share an id in an
	// admission race; the older one counts).
	HarnessRef HarnessRef `json:"harnessRef"`
	// Label is the harness's label, else its id.
	Label string `json:"label"`
	// Supported is true when the harness supports every route.
	Supported bool `json:"supported"`
	// Priority is the effective priority (missing is 0).
	Priority int32 `json:"priority"`
	// Reason explains an unsupported result or why the harness was not asked.
	Reason string `json:"reason,omitempty"`
	// FallbackRuntime is `openclaw` when the unsupported result declares the
	// lossless fallback.
	FallbackRuntime string `json:"fallbackRuntime,omitempty"`
}

// RouteDecision is the decision for one route of a retry set.
type RouteDecision struct {
	// Route is the attempt field of the route: `modelProvider` or `modelProviders[i]`.
	Route string `json:"route"`
	// Runtime is the runtime this route alone would run on; empty on an error.
	Runtime string `json:"runtime,omitempty"`
	// HarnessID is the plugin harness this route alone would run on.
	HarnessID string `json:"harnessId,omitempty"`
	// Reason is this route's selection reason; empty on an error.
	Reason Reason `json:"reason,omitempty"`
	// Error is this route's fail-closed error.
	Error *Error `json:"error,omitempty"`
}

// ToolPolicyDecision is the tool-policy verdict for the selected harness.
type ToolPolicyDecision struct {
	// Restricted is the pluginHarnessToolPolicyRestricted the adapter receives:
	// the harness must isolate its native tool surface.
	Restricted bool `json:"restricted"`
	// SafeDeniedTools are denied tools the harness's safe-deny list covered; the
	// harness must deny them on its native surface.
	SafeDeniedTools []string `json:"safeDeniedTools,omitempty"`
	// Reasons explain each rule that restricted the turn.
	Reasons []string `json:"reasons,omitempty"`
}

// Reason is why a runtime was selected.
type Reason string

// Selection reasons (exact strings of the contract).
const (
	// ReasonAutoPlugin: `auto` chose the highest-priority supporting harness.
	ReasonAutoPlugin Reason = "auto_plugin"
	// ReasonAutoOpenClaw: `auto` found no supporting harness (or, for OpenAI, the
	// route is not an official Responses route).
	ReasonAutoOpenClaw Reason = "auto_openclaw"
	// ReasonForcedPlugin: an explicit runtime, a pin, or implicit Codex selected a harness.
	ReasonForcedPlugin Reason = "forced_plugin"
	// ReasonForcedOpenClaw: the runtime id is `openclaw`.
	ReasonForcedOpenClaw Reason = "forced_openclaw"
	// ReasonImplicitPluginUnavailableOpenClaw: implicit Codex is not registered.
	ReasonImplicitPluginUnavailableOpenClaw Reason = "implicit_plugin_unavailable_openclaw"
	// ReasonImplicitPluginUnsupportedOpenClaw: implicit Codex does not support the route.
	ReasonImplicitPluginUnsupportedOpenClaw Reason = "implicit_plugin_unsupported_openclaw"
	// ReasonPluginDeclaredFallbackOpenClaw: the explicit harness is unsupported
	// but declared the lossless `openclaw` fallback.
	ReasonPluginDeclaredFallbackOpenClaw Reason = "plugin_declared_fallback_openclaw"
	// ReasonCLIRuntimePassthroughOpenClaw: the runtime id is a CLI backend alias
	// for the provider; the gateway runs it on the embedded runtime.
	ReasonCLIRuntimePassthroughOpenClaw Reason = "cli_runtime_passthrough_openclaw"
)

// SelectedEvent is the payload of the `selected` event as the API streams
// it: the decision plus the run's runId and its turnToken (which the
// tool-results and interrupt endpoints require).
type SelectedEvent struct {
	Decision
	// RunID is the turn's runId.
	RunID string `json:"runId"`
	// TurnToken authorizes the run's tool results and interrupt.
	TurnToken string `json:"turnToken"`
}
