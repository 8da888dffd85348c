package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Attempt is the prepared attempt the gateway sends for one turn, without the
// turn-only fields (prompt, images, tools, …). It is the selection input and the
// core of the dispatcher's request body: a turn request embeds it (an embedded
// struct field keeps the JSON flat), decodes with DecodeStrict and then calls
// Validate. Every field is optional; the AgentSession, when there is one, is
// authoritative and repeated fields must match it (ValidateAgainstSession).
type Attempt struct {
	// RunID identifies the turn (journal key, idempotency).
	RunID string `json:"runId,omitempty"`
	// AgentID is the OpenClaw agent id.
	AgentID string `json:"agentId,omitempty"`
	// SessionKey is OpenClaw's session key.
	SessionKey string `json:"sessionKey,omitempty"`
	// SessionID is OpenClaw's session id.
	SessionID string `json:"sessionId,omitempty"`
	// Provider is the resolved provider id; empty takes the provider from a
	// `provider/model` ModelID.
	Provider string `json:"provider,omitempty"`
	// ModelID is the resolved model id, bare or `provider/model`.
	ModelID string `json:"modelId,omitempty"`
	// ThinkLevel is the prepared thinking level (passed through, not used by selection).
	ThinkLevel string `json:"thinkLevel,omitempty"`
	// AgentHarnessID repeats the session's persisted harness pin; without a
	// session it is the pin to evaluate ("what if").
	AgentHarnessID string `json:"agentHarnessId,omitempty"`
	// AgentHarnessRuntimeOverride repeats the session's runtime override; without
	// a session it is the override to evaluate ("what if").
	AgentHarnessRuntimeOverride string `json:"agentHarnessRuntimeOverride,omitempty"`
	// ModelProvider is the resolved transport of the selected route (its route
	// facts). Absent means the attempt carries no route facts.
	ModelProvider *ModelProvider `json:"modelProvider,omitempty"`
	// ModelProviders is the retry set when auth preparation yielded several
	// routes; each is decided on its own (docs/design/contract-rules.md, rule 4).
	ModelProviders []ModelProvider `json:"modelProviders,omitzero"`
	// ToolPolicy is the prepared conversation tool policy.
	ToolPolicy *ToolPolicy `json:"toolPolicy,omitempty"`
	// ToolsAllow is the turn's toolsAllow: nil is absent (no narrowing), a
	// non-nil empty list denies every tool.
	ToolsAllow ToolList `json:"toolsAllow,omitzero"`
	// DisableTools denies every tool for the turn.
	DisableTools bool `json:"disableTools,omitempty"`
	// PluginHarnessToolPolicyRestricted is the host's prepared verdict that the
	// native tool surface must be isolated; the stricter verdict wins.
	PluginHarnessToolPolicyRestricted bool `json:"pluginHarnessToolPolicyRestricted,omitempty"`
}

// ModelProvider holds the secret-free facts of one prepared route (the harness SDK's
// ctx.modelProvider).
type ModelProvider struct {
	// API is the provider API of the route, e.g. openai-responses.
	API string `json:"api,omitempty"`
	// BaseURL is the route's base URL.
	BaseURL string `json:"baseUrl,omitempty"`
	// RequestTransportOverrides says whether authored request behaviour must be
	// reproduced: none or present. Required whenever a route is given.
	RequestTransportOverrides TransportOverrides `json:"requestTransportOverrides,omitempty"`
	// EndpointOverrides says whether the gateway's config authored the route's
	// api or base URL: none or present; absent when the gateway did not
	// prepare the fact. It is recorded and part of the route's identity, not
	// a support condition: the route's runtimePolicy is the provider's
	// verdict on which runtimes reproduce an authored endpoint.
	EndpointOverrides TransportOverrides `json:"endpointOverrides,omitempty"`
	// RuntimePolicy is the provider's route-level compatibility declaration.
	// Absent means undeclared, which is not permission.
	RuntimePolicy *RouteRuntimePolicy `json:"runtimePolicy,omitempty"`
	// PreparedAuth describes the prepared authorization of the route.
	PreparedAuth *PreparedAuth `json:"preparedAuth,omitempty"`
}

// RouteRuntimePolicy is the runtime policy a provider declares for one route.
type RouteRuntimePolicy struct {
	// CompatibleIDs lists the runtime ids the provider declares compatible with
	// the route; ids are normalized like every runtime id before comparison.
	CompatibleIDs []string `json:"compatibleIds,omitzero"`
}

// PreparedAuth is the prepared authorization of a route.
type PreparedAuth struct {
	// Source is who supplies the credential: profile, direct, harness or none.
	Source AuthSource `json:"source,omitempty"`
	// Mode is the auth mode, e.g. oauth, token, api-key.
	Mode string `json:"mode,omitempty"`
	// Requirement is the kind of auth the route requires: api-key or
	// subscription; empty means no requirement (no auth check).
	Requirement AuthRequirement `json:"requirement,omitempty"`
}

// ToolPolicy is the prepared conversation tool policy of a turn.
type ToolPolicy struct {
	// Profile is the effective tool profile (minimal, coding, messaging, full);
	// empty means full.
	Profile string `json:"profile,omitempty"`
	// AlsoAllow adds tools or groups on top of the profile.
	AlsoAllow []string `json:"alsoAllow,omitzero"`
	// Layers are the explicit policy layers in precedence order.
	Layers []ToolPolicyLayer `json:"layers,omitzero"`
}

// ToolPolicyLayer is one explicit tool-policy layer.
type ToolPolicyLayer struct {
	// Name identifies the layer in explanations.
	Name string `json:"name,omitempty"`
	// Allow is the layer's allowlist: nil is absent, a non-nil empty list
	// denies every tool.
	Allow ToolList `json:"allow,omitzero"`
	// Deny lists the tools, groups or "*" the layer denies.
	Deny []string `json:"deny,omitzero"`
}

// ToolList is a list of tool names where absence and emptiness differ: nil means
// the field was absent (no narrowing), a non-nil empty list denies every tool.
// In JSON an absent field is nil, `[]` is empty, and `null` is refused because it
// could be read either way.
type ToolList []string

// UnmarshalJSON decodes a JSON array of strings (encoding/json keeps `[]`
// non-nil) and refuses null.
func (l *ToolList) UnmarshalJSON(data []byte) error {
	if string(bytes.TrimSpace(data)) == "null" {
		return errToolListNull
	}
	var names []string
	if err := json.Unmarshal(data, &names); err != nil {
		return err
	}
	*l = names
	return nil
}

// TransportOverrides is the requestTransportOverrides fact of a route.
type TransportOverrides string

const (
	// TransportOverridesNone means no authored request override must be reproduced.
	TransportOverridesNone TransportOverrides = "none"
	// TransportOverridesPresent means authored headers, auth transport, proxy,
	// TLS, private-network behaviour or request parameters exist.
	TransportOverridesPresent TransportOverrides = "present"
)

// AuthSource is the source of a route's prepared authorization.
type AuthSource string

const (
	// AuthSourceProfile is an OpenClaw auth profile.
	AuthSourceProfile AuthSource = "profile"
	// AuthSourceDirect is a credential given directly in config.
	AuthSourceDirect AuthSource = "direct"
	// AuthSourceHarness means the harness owns auth; it is an auth owner, not
	// permission to infer route support.
	AuthSourceHarness AuthSource = "harness"
	// AuthSourceNone means no credential was prepared.
	AuthSourceNone AuthSource = "none"
)

// AuthRequirement is the kind of authorization a route requires.
type AuthRequirement string

const (
	// AuthRequirementAPIKey needs source profile or direct with an api-key mode.
	AuthRequirementAPIKey AuthRequirement = "api-key"
	// AuthRequirementSubscription needs source profile with a subscription mode.
	AuthRequirementSubscription AuthRequirement = "subscription"
)

// FieldError is a bad-input error that names the JSON field path it is about,
// e.g. `modelProviders[1].requestTransportOverrides: must be none or present`.
// Callers answer it as a request error (HTTP 400, `explain` exit 2).
type FieldError struct {
	// Field is the JSON path (`a.b[2].c`); empty for the document itself.
	Field string
	// Message says what is wrong.
	Message string
}

// Error implements error.
func (e *FieldError) Error() string {
	if e.Field == "" {
		return e.Message
	}
	return e.Field + ": " + e.Message
}

// DecodeAttempt decodes and validates one Attempt JSON object. It refuses
// unknown fields (names match exactly, not case-insensitively), duplicate
// fields, wrong JSON types, null where it is ambiguous, trailing data and
// invalid enum values, with a *FieldError naming the field path. It reads r to
// the end; bound r (http.MaxBytesReader) when it comes from a client.
func DecodeAttempt(r io.Reader) (*Attempt, error) {
	a := &Attempt{}
	if err := DecodeStrict(r, a); err != nil {
		return nil, err
	}
	if err := a.Validate(); err != nil {
		return nil, err
	}
	return a, nil
}

// Validate checks the enum fields of every route: requestTransportOverrides is
// required and none or present, endpointOverrides is none, present or
// absent, preparedAuth.source is required and one of
// profile, direct, harness or none, preparedAuth.requirement is api-key,
// subscription or empty, and compatible ids are not blank. The error is a
// *FieldError naming the first bad field.
func (a *Attempt) Validate() error {
	if a.ModelProvider != nil {
		if err := a.ModelProvider.validate("modelProvider"); err != nil {
			return err
		}
	}
	for i := range a.ModelProviders {
		if err := a.ModelProviders[i].validate("modelProviders[" + strconv.Itoa(i) + "]"); err != nil {
			return err
		}
	}
	return nil
}

func (m *ModelProvider) validate(path string) error {
	switch m.RequestTransportOverrides {
	case TransportOverridesNone, TransportOverridesPresent:
	default:
		// Required: an unknown fact cannot prove that no authored behaviour exists.
		return &FieldError{Field: path + ".requestTransportOverrides", Message: "must be none or present"}
	}
	switch m.EndpointOverrides {
	case "", TransportOverridesNone, TransportOverridesPresent:
	default:
		return &FieldError{Field: path + ".endpointOverrides", Message: "must be none or present"}
	}
	if m.RuntimePolicy != nil {
		for i, id := range m.RuntimePolicy.CompatibleIDs {
			if strings.TrimSpace(id) == "" {
				return &FieldError{Field: fmt.Sprintf("%s.runtimePolicy.compatibleIds[%d]", path, i), Message: "must not be blank"}
			}
		}
	}
	if pa := m.PreparedAuth; pa != nil {
		switch pa.Source {
		case AuthSourceProfile, AuthSourceDirect, AuthSourceHarness, AuthSourceNone:
		default:
			return &FieldError{Field: path + ".preparedAuth.source", Message: "must be profile, direct, harness or none"}
		}
		switch pa.Requirement {
		case "", AuthRequirementAPIKey, AuthRequirementSubscription:
		default:
			return &FieldError{Field: path + ".preparedAuth.requirement", Message: "must be api-key or subscription"}
		}
	}
	return nil
}
