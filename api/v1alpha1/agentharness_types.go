package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HarnessAdapter names the protocol adapter that drives a harness's native runtime.
// +kubebuilder:validation:Enum=codex-app-server
type HarnessAdapter string

const (
	// AdapterCodexAppServer drives `codex app-server` over its JSON-RPC protocol.
	AdapterCodexAppServer HarnessAdapter = "codex-app-server"
)

// AutoSelectionMode says which providers `auto` may ask a harness about.
// +kubebuilder:validation:Enum=AllProviders;Listed;ExplicitOnly
type AutoSelectionMode string

const (
	// AutoSelectionAllProviders lets `auto` ask the harness about every provider.
	AutoSelectionAllProviders AutoSelectionMode = "AllProviders"
	// AutoSelectionListed lets `auto` ask the harness about the listed providers only.
	AutoSelectionListed AutoSelectionMode = "Listed"
	// AutoSelectionExplicitOnly keeps the harness out of `auto`: only an explicit runtime id selects it.
	AutoSelectionExplicitOnly AutoSelectionMode = "ExplicitOnly"
)

// RequestTransportOverrideSupport says whether a harness reproduces authored request overrides.
// +kubebuilder:validation:Enum=Supported;Unsupported;UnsupportedWithFallback
type RequestTransportOverrideSupport string

const (
	// RequestTransportOverridesSupported means routes with authored overrides are supported.
	RequestTransportOverridesSupported RequestTransportOverrideSupport = "Supported"
	// RequestTransportOverridesUnsupported means such routes are unsupported and fail closed.
	RequestTransportOverridesUnsupported RequestTransportOverrideSupport = "Unsupported"
	// RequestTransportOverridesUnsupportedWithFallback means such routes are unsupported and
	// the harness declares the lossless fallback to the embedded `openclaw` runtime.
	RequestTransportOverridesUnsupportedWithFallback RequestTransportOverrideSupport = "UnsupportedWithFallback"
)

// RoutePolicyRequirement says what a route's declared runtime policy must say for the harness to support it.
// +kubebuilder:validation:Enum=Any;MustBeDeclared;MustListHarness
type RoutePolicyRequirement string

const (
	// RoutePolicyAny accepts any route, declared or not.
	RoutePolicyAny RoutePolicyRequirement = "Any"
	// RoutePolicyMustBeDeclared requires the route to declare a runtime policy.
	RoutePolicyMustBeDeclared RoutePolicyRequirement = "MustBeDeclared"
	// RoutePolicyMustListHarness requires the route's declared policy to list the harness id;
	// an undeclared policy is not permission.
	RoutePolicyMustListHarness RoutePolicyRequirement = "MustListHarness"
)

// ToolPolicySupport says how far a harness enforces OpenClaw's conversation tool policy.
// +kubebuilder:validation:Enum=None;Exact
type ToolPolicySupport string

const (
	// ToolPolicySupportNone means explicitly restricted turns are refused before the harness runs.
	ToolPolicySupportNone ToolPolicySupport = "None"
	// ToolPolicySupportExact promises that every explicit tool-policy layer is enforced
	// across native and OpenClaw tools.
	ToolPolicySupportExact ToolPolicySupport = "Exact"
)

// AuthBootstrap says who provides model credentials to the native runtime.
// +kubebuilder:validation:Enum=Harness;Host
type AuthBootstrap string

const (
	// AuthBootstrapHarness means the app-server authenticates with its own credentials
	// (Secret references of the workload).
	AuthBootstrapHarness AuthBootstrap = "Harness"
	// AuthBootstrapHost means per-attempt host credentials; no adapter supports it yet.
	AuthBootstrapHost AuthBootstrap = "Host"
)

// NamespacesFrom says which namespaces may use a harness.
// +kubebuilder:validation:Enum=Same;All;Selector
type NamespacesFrom string

const (
	// NamespacesFromSame admits sessions of the harness's own namespace.
	NamespacesFromSame NamespacesFrom = "Same"
	// NamespacesFromAll admits sessions of every namespace.
	NamespacesFromAll NamespacesFrom = "All"
	// NamespacesFromSelector admits sessions of the namespaces the selector matches.
	NamespacesFromSelector NamespacesFrom = "Selector"
)

// ServerState is the state of one app-server as the manager last saw it.
// +kubebuilder:validation:Enum=Ready;NotReady;Terminating
type ServerState string

const (
	// ServerReady accepts new turns.
	ServerReady ServerState = "Ready"
	// ServerNotReady accepts no turns.
	ServerNotReady ServerState = "NotReady"
	// ServerTerminating is draining: running turns finish, new turns go elsewhere.
	ServerTerminating ServerState = "Terminating"
)

// AutoSelection says which providers `auto` may ask this harness about. It is
// separate from what the harness supports.
// +kubebuilder:validation:XValidation:rule="self.mode == 'Listed' || !has(self.providers)",message="autoSelection.providers may only be set when autoSelection.mode is Listed"
// +kubebuilder:validation:XValidation:rule="self.mode != 'Listed' || (has(self.providers) && size(self.providers) > 0)",message="autoSelection.providers must list at least one provider when autoSelection.mode is Listed"
type AutoSelection struct {
	// mode is AllProviders (default), Listed (only the providers below) or
	// ExplicitOnly (never chosen by `auto`; only an explicit runtime id selects it).
	// +optional
	// +kubebuilder:default=AllProviders
	Mode AutoSelectionMode `json:"mode,omitempty"`

	// providers lists the providers `auto` may ask about when mode is Listed.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	Providers []ProviderID `json:"providers,omitempty"`
}

// PreparedAuthSupport lists the prepared-auth modes a harness accepts.
type PreparedAuthSupport struct {
	// subscriptionModes are the auth modes accepted for a `subscription`
	// requirement (the source must be `profile`), e.g. oauth, token.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=64
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9][a-z0-9_-]*$`
	SubscriptionModes []string `json:"subscriptionModes,omitempty"`

	// apiKeyModes are the auth modes accepted for an `api-key` requirement
	// (the source must be `profile` or `direct`), e.g. api-key, api_key.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=64
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9][a-z0-9_-]*$`
	APIKeyModes []string `json:"apiKeyModes,omitempty"`
}

// HarnessSupport is the harness's declared `supports(ctx)` facts, evaluated in
// this order: providers, requestTransportOverrides, routePolicy, preparedAuth.
// When omitted, admission writes the adapter's defaults.
type HarnessSupport struct {
	// providers lists the providers the harness supports; omitted means any provider.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	Providers []ProviderID `json:"providers,omitempty"`

	// priority orders supported harnesses under `auto` (highest wins; missing is 0;
	// ties go to the lower harness id).
	// +optional
	// +kubebuilder:validation:Minimum=-1000
	// +kubebuilder:validation:Maximum=1000
	Priority *int32 `json:"priority,omitempty"`

	// requestTransportOverrides says whether routes with authored request overrides
	// (headers, proxy, TLS, request parameters) are supported: Supported, Unsupported,
	// or UnsupportedWithFallback, which declares the lossless fallback to `openclaw`.
	// +optional
	// +kubebuilder:default=Unsupported
	RequestTransportOverrides RequestTransportOverrideSupport `json:"requestTransportOverrides,omitempty"`

	// routePolicy says what the route's declared runtime policy must say: Any,
	// MustBeDeclared, or MustListHarness (the declared compatible ids must include
	// this harness id; an undeclared policy is not permission).
	// +optional
	// +kubebuilder:default=MustListHarness
	RoutePolicy RoutePolicyRequirement `json:"routePolicy,omitempty"`

	// nativeProviders lists providers the harness resolves itself; their routes are
	// exempt from routePolicy when no route policy is declared.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	NativeProviders []ProviderID `json:"nativeProviders,omitempty"`

	// preparedAuth lists the prepared-auth modes the harness accepts; absent means
	// no auth check.
	// +optional
	PreparedAuth *PreparedAuthSupport `json:"preparedAuth,omitempty"`
}

// AcceptHarnessesLabelPrefix begins the label by which a namespace consents to
// be served by the harnesses of another namespace: a Namespace labelled
// `accept.harness.openclaw.dev/<harness-namespace>: "true"` may use the
// harnesses of <harness-namespace> whose allowedNamespaces admit it. Without
// that label no harness of another namespace serves it, whatever its
// allowedNamespaces say (docs/tenancy.md). The prefix is a DNS subdomain
// and a namespace name is a DNS label (at most 63), so every key is valid.
const AcceptHarnessesLabelPrefix = "accept.harness.openclaw.dev/"

// AcceptHarnessesLabelValue is the one value of an accept label that consents.
const AcceptHarnessesLabelValue = "true"

// AcceptHarnessesLabel is the label key by which a namespace consents to the
// harnesses of harnessNamespace.
func AcceptHarnessesLabel(harnessNamespace string) string {
	return AcceptHarnessesLabelPrefix + harnessNamespace
}

// AllowedNamespaces says which namespaces' sessions may use a harness (the shape
// of Gateway API's allowedRoutes.namespaces). A namespace other than the
// harness's own is served only if it also consents, with the label
// AcceptHarnessesLabel(<the harness's namespace>) = "true".
// +kubebuilder:validation:XValidation:rule="self.from == 'Selector' ? has(self.selector) : !has(self.selector)",message="allowedNamespaces.selector must be set when allowedNamespaces.from is Selector, and only then"
type AllowedNamespaces struct {
	// from is Same (default: the harness's namespace), All (every namespace
	// that consents with the label accept.harness.openclaw.dev/<this
	// harness's namespace>: "true"), or Selector (the consenting namespaces
	// whose labels match selector; an empty selector is the same as All).
	// +optional
	// +kubebuilder:default=Same
	From NamespacesFrom `json:"from,omitempty"`

	// selector selects namespaces by label when from is Selector; only those
	// that consent are served.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// AgentHarnessSpec declares a harness, its support facts, tool-policy declaration and workload.
// +kubebuilder:validation:XValidation:rule="has(self.appServer) != has(self.external)",message="exactly one of spec.appServer and spec.external must be set"
// +kubebuilder:validation:XValidation:rule="has(self.conversationToolPolicySupport) && self.conversationToolPolicySupport == 'Exact' || !has(self.conversationToolPolicySafeDenyTools)",message="spec.conversationToolPolicySafeDenyTools requires spec.conversationToolPolicySupport: Exact"
// +kubebuilder:validation:XValidation:rule="!has(self.modelGateway) || has(self.appServer)",message="spec.modelGateway requires spec.appServer: the operator cannot keep credentials out of an external app-server"
// +kubebuilder:validation:XValidation:rule="!has(self.modelGateway) || !has(self.appServer) || !has(self.appServer.credentials) || size(self.appServer.credentials) == 0",message="spec.modelGateway and spec.appServer.credentials are exclusive: with the model gateway the pods hold no provider credential"
// +kubebuilder:validation:XValidation:rule="!has(self.modelGateway) || !has(self.appServer) || !has(self.appServer.args) || size(self.appServer.args) == 0",message="spec.modelGateway and spec.appServer.args are exclusive: args replace the operator's arguments, which make the model gateway the app-server's model provider"
// +kubebuilder:validation:XValidation:rule="!has(self.modelGateway) || !has(self.authBootstrap) || self.authBootstrap == 'Harness'",message="spec.modelGateway requires spec.authBootstrap: Harness (the gateway adds the harness's own credential)"
type AgentHarnessSpec struct {
	// harnessId is the id runtime policies and sessions use to select this harness;
	// defaults to metadata.name. `openclaw` (and its aliases) is reserved for the
	// embedded runtime.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([a-z0-9-]*[a-z0-9])?$')",message="spec.harnessId must be a lowercase id of letters, digits and '-'"
	// +kubebuilder:validation:XValidation:rule="!(self in ['openclaw', 'pi', 'auto', 'default', 'codex-app-server'])",message="spec.harnessId must not be a reserved runtime id (openclaw, pi, auto, default, codex-app-server)"
	HarnessID string `json:"harnessId,omitempty"`

	// label is a human-readable name used in messages.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Label string `json:"label,omitempty"`

	// adapter is the protocol adapter that drives the native runtime.
	// +required
	Adapter HarnessAdapter `json:"adapter"`

	// autoSelection says which providers `auto` may ask this harness about.
	// +optional
	AutoSelection *AutoSelection `json:"autoSelection,omitempty"`

	// support is the harness's declared supports(ctx) facts. When omitted,
	// admission writes the adapter's defaults; a written block is the declaration.
	// +optional
	Support *HarnessSupport `json:"support,omitempty"`

	// conversationToolPolicySupport is Exact only when the adapter enforces every
	// explicit tool-policy layer; restricted turns run on this harness only then.
	// +optional
	ConversationToolPolicySupport ToolPolicySupport `json:"conversationToolPolicySupport,omitempty"`

	// conversationToolPolicySafeDenyTools lists canonical core tool ids whose denial
	// does not require isolating the native surface (honoured only with Exact).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	ConversationToolPolicySafeDenyTools []ToolID `json:"conversationToolPolicySafeDenyTools,omitempty"`

	// conversationToolPolicyNativeTools lists the canonical core tool ids the native
	// runtime provides by itself (Codex: exec, process, read, write, edit, apply_patch).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	ConversationToolPolicyNativeTools []ToolID `json:"conversationToolPolicyNativeTools,omitempty"`

	// authBootstrap is Harness: the app-server authenticates with its own
	// credentials (with modelGateway, the gateway adds them for it). Host (per-attempt host credentials) is refused until an adapter supports it.
	// +optional
	// +kubebuilder:default=Harness
	AuthBootstrap AuthBootstrap `json:"authBootstrap,omitempty"`

	// minVersion raises the adapter's built-in version floor (codex-app-server:
	// 0.149.0); it can never lower it.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|[1-9][0-9]*)\\\\.(0|[1-9][0-9]*)\\\\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\\\\.[0-9A-Za-z-]+)*)?(\\\\+[0-9A-Za-z-]+(\\\\.[0-9A-Za-z-]+)*)?$')",message="spec.minVersion must be a semantic version such as 0.149.0"
	MinVersion string `json:"minVersion,omitempty"`

	// appServer runs the app-server as a StatefulSet. Exactly one of appServer and external.
	// +optional
	AppServer *AppServerWorkload `json:"appServer,omitempty"`

	// external points at an app-server the operator does not run. Exactly one of
	// appServer and external.
	// +optional
	External *ExternalServer `json:"external,omitempty"`

	// allowedNamespaces says which namespaces' sessions may use this harness
	// (default: its own namespace).
	// +optional
	AllowedNamespaces *AllowedNamespaces `json:"allowedNamespaces,omitempty"`

	// mcp says which MCP servers a turn on this harness may name (default: none).
	// +optional
	MCP *HarnessMCP `json:"mcp,omitempty"`

	// delegates are the subjects this harness's owner trusts to run existing
	// sessions with spec.modelSelectionLocked: Locked whose pin and override
	// name this harness, on behalf of their owners (default: none). Each also
	// needs the verb `delegate` on agentsessions/turns in the session's
	// namespace; see docs/security.md. Keep the list tight.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Delegates []Delegate `json:"delegates,omitempty"`

	// modelGateway sends the harness's model requests through the operator's
	// model gateway, which alone holds the provider credential; the app-server
	// pods then hold none, and their egress narrows to the gateway (and the
	// public internet only when mcp lists URL prefixes). Managed harnesses
	// only, with authBootstrap Harness, and neither appServer.credentials
	// nor appServer.args. A manager without --model-gateway-url changes no
	// workload for it and reports Ready False, ModelGatewayNotConfigured.
	// +optional
	ModelGateway *ModelGateway `json:"modelGateway,omitempty"`
}

// ServerStatus is one app-server as the manager last saw it.
type ServerStatus struct {
	// name is the server pod's name, or `external`.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// imageID is the image digest the kubelet reports for the app-server container.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	ImageID string `json:"imageID,omitempty"`

	// version is the version parsed from the handshake's userAgent.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Version string `json:"version,omitempty"`

	// userAgent is the userAgent of the initialize result.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	UserAgent string `json:"userAgent,omitempty"`

	// state is Ready, NotReady or Terminating (draining: no new turns).
	// +required
	State ServerState `json:"state"`
}

// AgentHarnessStatus is written by the manager only.
type AgentHarnessStatus struct {
	// conditions are WorkloadReady, VersionSupported, Attested and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// replicas is the number of server pods (1 for an external server).
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// readyReplicas is the number of Ready servers.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// version is the handshake version when every server reports the same one.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Version string `json:"version,omitempty"`

	// servers lists each app-server.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Servers []ServerStatus `json:"servers,omitempty"`

	// runtimeArtifact identifies the artifact when every server runs one digest.
	// +optional
	RuntimeArtifact *RuntimeArtifact `json:"runtimeArtifact,omitempty"`

	// capabilities lists what a gateway may ask this harness for (turns, isolated
	// completion, settled-turn finalization, approvals, …) and whether its adapter
	// offers each, so a gateway can tell an absent capability from a failed call.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Capabilities []HarnessCapability `json:"capabilities,omitempty"`
}

// AgentHarness registers an agent harness — a native agent runtime such as
// `codex app-server` — and the workload that serves it.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=ah,categories=openclaw
// +kubebuilder:printcolumn:name="HarnessID",type=string,JSONPath=`.spec.harnessId`
// +kubebuilder:printcolumn:name="Adapter",type=string,JSONPath=`.spec.adapter`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.version`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="has(self.spec.harnessId) || !(self.metadata.name in ['openclaw', 'pi', 'auto', 'default', 'codex-app-server'])",message="spec.harnessId defaults to metadata.name, which is a reserved runtime id here: set spec.harnessId or rename the object",fieldPath=`.spec.harnessId`
// +kubebuilder:validation:XValidation:rule="has(self.spec.harnessId) || self.metadata.name.matches('^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$')",message="spec.harnessId defaults to metadata.name, which is not a valid harness id (lowercase letters, digits and '-', at most 63): set spec.harnessId",fieldPath=`.spec.harnessId`
type AgentHarness struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec declares the harness.
	// +required
	Spec AgentHarnessSpec `json:"spec"`

	// status is the observed state, written by the manager.
	// +optional
	Status AgentHarnessStatus `json:"status,omitempty"`
}

// AgentHarnessList is a list of AgentHarness.
// +kubebuilder:object:root=true
type AgentHarnessList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the AgentHarness objects.
	Items []AgentHarness `json:"items"`
}
