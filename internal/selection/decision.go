package selection

import (
	"net/http"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// Decision is the outcome of Select for one attempt: which runtime runs the
// turn and why, or the typed error that fails it closed. It is the `selected`
// event, the body of `explain` and of the dispatcher's /decide, and the source
// of status.lastSelection.
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
	// Error is set when the attempt fails closed or contradicts its session.
	Error *Error `json:"error,omitempty"`
}

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

// Scope says how far a fallback chain may go after an error.
type Scope string

// ScopeHarness marks an error local to the selected harness: the gateway's
// fallback chain skips only candidates of the same harness. An error without
// scope ends the whole chain.
const ScopeHarness Scope = "harness"

// Error is a typed error of DESIGN.md §7.
type Error struct {
	// Code is the error code.
	Code ErrorCode `json:"code"`
	// Message is the human-readable message.
	Message string `json:"message"`
	// Scope is `harness` where a fallback chain may try another harness.
	Scope Scope `json:"scope,omitempty"`
	// Retryable says whether the same request may succeed later.
	Retryable bool `json:"retryable"`
}

// Error implements error.
func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// newError builds an Error whose retryability comes from the code table.
func newError(code ErrorCode, scope Scope, msg string) *Error {
	return &Error{Code: code, Message: msg, Scope: scope, Retryable: code.Retryable()}
}

// ErrorCode is a machine-readable error code shared by the selection engine,
// the dispatcher and the CLI (DESIGN.md §7).
type ErrorCode string

// Error codes. Select produces HarnessNotRegistered, HarnessUnsupported,
// VersionBelowFloor, ToolPolicyUnenforceable, OverrideDenied,
// HarnessUnavailable and SessionMismatch; the others belong to the dispatcher.
const (
	// CodeHarnessNotRegistered: an explicit id with no visible AgentHarness.
	CodeHarnessNotRegistered ErrorCode = "HarnessNotRegistered"
	// CodeHarnessUnsupported: the harness's support facts reject the route.
	CodeHarnessUnsupported ErrorCode = "HarnessUnsupported"
	// CodeVersionBelowFloor: the server is older than the version floor.
	CodeVersionBelowFloor ErrorCode = "VersionBelowFloor"
	// CodeToolPolicyUnenforceable: a restricted turn on a harness that cannot enforce it.
	CodeToolPolicyUnenforceable ErrorCode = "ToolPolicyUnenforceable"
	// CodeOverrideDenied: an override or pin contradicts a Deny policy.
	CodeOverrideDenied ErrorCode = "OverrideDenied"
	// CodeArtifactMismatch: the expected runtime artifact differs or is unattested.
	CodeArtifactMismatch ErrorCode = "ArtifactMismatch"
	// CodeNativeThreadLost: the bound server is gone; reset the session.
	CodeNativeThreadLost ErrorCode = "NativeThreadLost"
	// CodeSessionMismatch: the attempt contradicts its AgentSession.
	CodeSessionMismatch ErrorCode = "SessionMismatch"
	// CodeEmbeddedRuntimeSelected: the decision is `openclaw`; run it on the gateway.
	CodeEmbeddedRuntimeSelected ErrorCode = "EmbeddedRuntimeSelected"
	// CodeRunIDConflict: a runId reused with a different body.
	CodeRunIDConflict ErrorCode = "RunIdConflict"
	// CodeTranscriptLimitExceeded: the session's transcript is full.
	CodeTranscriptLimitExceeded ErrorCode = "TranscriptLimitExceeded"
	// CodeRunPayloadPruned: the runId is known and ended, but retention
	// pruned its events and result; it is never run again.
	CodeRunPayloadPruned ErrorCode = "RunPayloadPruned"
	// CodeRetentionLimitReached: the session's namespace holds as many runs
	// as the journal keeps for one namespace; new runIds wait until old ones
	// age out.
	CodeRetentionLimitReached ErrorCode = "RetentionLimitReached"
	// CodeHarnessUnavailable: registered but not ready now.
	CodeHarnessUnavailable ErrorCode = "HarnessUnavailable"
	// CodeHarnessAtCapacity: every ready server is full.
	CodeHarnessAtCapacity ErrorCode = "HarnessAtCapacity"
)

// errorCodes is the one table of HTTP status and retryability per code
// (DESIGN.md §7). It is read-only.
var errorCodes = [...]struct {
	code      ErrorCode
	status    int
	retryable bool
}{
	{CodeHarnessNotRegistered, http.StatusUnprocessableEntity, false},
	{CodeHarnessUnsupported, http.StatusUnprocessableEntity, false},
	{CodeVersionBelowFloor, http.StatusUnprocessableEntity, false},
	{CodeToolPolicyUnenforceable, http.StatusUnprocessableEntity, false},
	{CodeOverrideDenied, http.StatusUnprocessableEntity, false},
	{CodeArtifactMismatch, http.StatusUnprocessableEntity, false},
	{CodeNativeThreadLost, http.StatusUnprocessableEntity, false},
	{CodeSessionMismatch, http.StatusUnprocessableEntity, false},
	{CodeEmbeddedRuntimeSelected, http.StatusConflict, false},
	{CodeRunIDConflict, http.StatusConflict, false},
	{CodeTranscriptLimitExceeded, http.StatusRequestEntityTooLarge, false},
	// 410: the run existed and its record is gone for good; 429: the
	// namespace ran more turns than the retention window can remember, and
	// the same request succeeds once old runs age out (Retry-After).
	{CodeRunPayloadPruned, http.StatusGone, false},
	{CodeRetentionLimitReached, http.StatusTooManyRequests, true},
	{CodeHarnessUnavailable, http.StatusServiceUnavailable, true},
	{CodeHarnessAtCapacity, http.StatusServiceUnavailable, true},
}

// ErrorCodes returns every error code of DESIGN.md §7 in table order.
func ErrorCodes() []ErrorCode {
	out := make([]ErrorCode, len(errorCodes))
	for i, e := range errorCodes {
		out[i] = e.code
	}
	return out
}

// HTTPStatus is the HTTP status the dispatcher answers the code with; an
// unknown code is 500.
func (c ErrorCode) HTTPStatus() int {
	for _, e := range errorCodes {
		if e.code == c {
			return e.status
		}
	}
	return http.StatusInternalServerError
}

// Retryable says whether a request that failed with the code may succeed when
// repeated unchanged; an unknown code is not retryable.
func (c ErrorCode) Retryable() bool {
	for _, e := range errorCodes {
		if e.code == c {
			return e.retryable
		}
	}
	return false
}
