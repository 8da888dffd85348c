package selection

import (
	"cmp"
	"slices"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// Candidate reasons. They are fixed strings so a decision allocates no text per
// supported or skipped candidate.
const (
	reasonExplicitOnly       = "harness is explicit-only"
	reasonNotAutoSelectable  = "provider is not auto-selectable"
	reasonUnknownAutoMode    = "unknown autoSelection mode"
	reasonOpenAIImplicit     = "auto asks no plugin for provider openai (implicit codex only)"
	reasonShadowed           = "harness id is also used by an older visible AgentHarness"
	reasonReserved           = "harness id is reserved for a built-in runtime"
	reasonNoSupportFacts     = "no support facts: support is omitted and the adapter has no defaults"
	reasonProvider           = "provider is not supported"
	reasonTransportOverrides = "request transport overrides are present"
	reasonRouteUndeclared    = "route runtime policy is not declared"
	reasonRouteNotListed     = "route runtime policy does not list the harness"
	reasonAuthSubscription   = "prepared auth does not satisfy the subscription requirement"
	reasonAuthAPIKey         = "prepared auth does not satisfy the api-key requirement"
	reasonAuthUnknown        = "unknown prepared auth requirement"
	reasonPinUnchecked       = "support not checked: session pin without route facts"
	reasonNoRouteFacts       = "no route facts: the openai/* prefix alone never selects implicit codex"
	reasonRouteIndeterminate = "no route facts: its route policy needs the route declared, and the provider is not native to it"
)

// hview is one visible AgentHarness with its effective declarations. It holds
// only what sorting and every candidate need (the label and native tools are
// read from the object when used): Select builds one per visible harness per
// call, so its size and pointers are paid for every harness, matching or not.
type hview struct {
	h  *v1alpha1.AgentHarness
	id string
	// idPrefix is the id's first 8 bytes, big-endian, zero-padded: ids that
	// differ there compare as these integers do (compareViews).
	idPrefix uint64
	support  *v1alpha1.HarnessSupport // nil: no facts, supports nothing
	priority int32
	shadowed bool // an older visible harness has the same id
	reserved bool // the id is a built-in runtime id or alias: never selected
}

// init fills the view in place (copying a view into the slice would move its
// pointers a second time).
func (v *hview) init(h *v1alpha1.AgentHarness) {
	v.h, v.support = h, h.Spec.Support
	v.id, v.reserved = harnessID(h)
	v.idPrefix = prefixKey(v.id)
	v.shadowed, v.priority = false, 0
	if v.support == nil {
		if d := adapterDefaults(h.Spec.Adapter); d != nil {
			v.support = &d.Support
		}
	}
	if v.support != nil && v.support.Priority != nil {
		v.priority = *v.support.Priority
	}
}

// label is the harness's label, else its id.
func (v *hview) label() string {
	if v.h.Spec.Label != "" {
		return v.h.Spec.Label
	}
	return v.id
}

// nativeTools are the declared native tools, else the adapter's.
func (v *hview) nativeTools() []v1alpha1.ToolID {
	if len(v.h.Spec.ConversationToolPolicyNativeTools) == 0 {
		if d := adapterDefaults(v.h.Spec.Adapter); d != nil {
			return d.ConversationToolPolicyNativeTools
		}
	}
	return v.h.Spec.ConversationToolPolicyNativeTools
}

// harnessID is spec.harnessId, else metadata.name, trimmed and lowercased.
// Admission refuses the reserved ids (openclaw, pi, auto, default,
// codex-app-server), but manifests evaluated offline skip admission: such a
// harness keeps its raw id, so a lookup never finds it, and is reserved.
func harnessID(h *v1alpha1.AgentHarness) (string, bool) {
	raw := h.Spec.HarnessID
	if raw == "" {
		raw = h.Name
	}
	id := lowerTrimmed(raw)
	return id, reservedID(id)
}

// reservedID reports whether a trimmed, lowercased id is a built-in runtime
// id or one of its aliases: one that NormalizeRuntimeID changes, or that
// names auto or openclaw. Select asks it of every harness, so it is one
// switch rather than a normalization and three comparisons.
func reservedID(id string) bool {
	switch id {
	case "", "default", "pi", "codex-app-server", string(v1alpha1.RuntimeAuto), string(v1alpha1.RuntimeOpenClaw):
		return true
	}
	return false
}

// lowerTrimmed is strings.ToLower(strings.TrimSpace(s)) in one pass for what
// is already lowercase ASCII with no space or control byte at either end, as
// admitted ids and object names are: Select computes it for every harness.
// Anything else takes the general path.
func lowerTrimmed(s string) string {
	if len(s) > 0 && (s[0] <= ' ' || s[len(s)-1] <= ' ') {
		return strings.ToLower(strings.TrimSpace(s))
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || c-'A' < 26 { // c-'A' wraps below 'A'
			return strings.ToLower(strings.TrimSpace(s))
		}
	}
	return s
}

func (v *hview) ref() wire.HarnessRef {
	return wire.HarnessRef{Namespace: v.h.Namespace, Name: v.h.Name}
}

// compareViews orders by harness id, then age (creationTimestamp, namespace,
// name), so the first view of an id is the one that counts.
func compareViews(a, b hview) int {
	if a.idPrefix != b.idPrefix {
		return cmp.Compare(a.idPrefix, b.idPrefix)
	}
	if c := strings.Compare(a.id, b.id); c != 0 {
		return c
	}
	if c := a.h.CreationTimestamp.Compare(b.h.CreationTimestamp.Time); c != 0 {
		return c
	}
	if c := strings.Compare(a.h.Namespace, b.h.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.h.Name, b.h.Name)
}

// prefixKey is s's first 8 bytes as a big-endian integer, zero-padded. Two
// strings whose keys differ compare as their keys do: the first byte where
// the keys differ is the first where the strings differ, or the end of the
// shorter string (a zero byte) against a byte of the longer one. Equal keys
// say nothing; the strings must then be compared.
func prefixKey(s string) uint64 {
	if len(s) >= 8 {
		_ = s[7] // one bounds check
		return uint64(s[0])<<56 | uint64(s[1])<<48 | uint64(s[2])<<40 | uint64(s[3])<<32 |
			uint64(s[4])<<24 | uint64(s[5])<<16 | uint64(s[6])<<8 | uint64(s[7])
	}
	var k uint64
	for i := 0; i < len(s); i++ {
		k = k<<8 | uint64(s[i])
	}
	return k << (8 * (8 - len(s)))
}

// autoAdmits reports whether `auto` may ask the harness about provider.
func (v *hview) autoAdmits(provider string) (bool, string) {
	as := v.h.Spec.AutoSelection
	if as == nil {
		return true, ""
	}
	switch as.Mode {
	case "", v1alpha1.AutoSelectionAllProviders:
		return true, ""
	case v1alpha1.AutoSelectionExplicitOnly:
		return false, reasonExplicitOnly
	case v1alpha1.AutoSelectionListed:
		if provider != "" && containsProvider(as.Providers, provider) {
			return true, ""
		}
		return false, reasonNotAutoSelectable
	}
	return false, reasonUnknownAutoMode // fail closed on a mode this build does not know
}

// refusal is why a harness does not support a route; refusalNone: it does.
// An index rather than the text, so that each route builds its named reason
// ("modelProviders[1]: …") once per refusal, not once per candidate.
type refusal uint8

const (
	refusalNone refusal = iota
	refusalNoSupportFacts
	refusalProvider
	refusalTransportOverrides
	refusalRouteUndeclared
	refusalRouteNotListed
	refusalAuthSubscription
	refusalAuthAPIKey
	refusalAuthUnknown
	refusalRouteIndeterminate
	refusalCount
)

var refusalText = [refusalCount]string{
	refusalNoSupportFacts:     reasonNoSupportFacts,
	refusalProvider:           reasonProvider,
	refusalTransportOverrides: reasonTransportOverrides,
	refusalRouteUndeclared:    reasonRouteUndeclared,
	refusalRouteNotListed:     reasonRouteNotListed,
	refusalAuthSubscription:   reasonAuthSubscription,
	refusalAuthAPIKey:         reasonAuthAPIKey,
	refusalAuthUnknown:        reasonAuthUnknown,
	refusalRouteIndeterminate: reasonRouteIndeterminate,
}

// support is a harness's answer for one route.
type support struct {
	why      refusal
	fallback bool // unsupported, and the lossless openclaw fallback is declared
}

func (s support) ok() bool { return s.why == refusalNone }

// The declared support facts are evaluated in the harness SDK's order: provider
// membership (supportsProvider, once per harness), then per route
// request-transport overrides, route policy and prepared auth (supportsRoute).

// supportsProvider is the route-independent first check: provider membership.
func (v *hview) supportsProvider(provider string) support {
	s := v.support
	if s == nil {
		return support{why: refusalNoSupportFacts}
	}
	if len(s.Providers) > 0 && (provider == "" || !containsProvider(s.Providers, provider)) {
		return support{why: refusalProvider}
	}
	return support{}
}

// supportsRoute checks one route's facts for the harness of view index hi,
// whose provider check passed. A route without facts (nil mp) is supported.
func (v *hview) supportsRoute(provider string, rt *route, hi int) support {
	s, r := v.support, rt.mp
	if r == nil {
		return support{}
	}
	// Anything but an explicit "none" counts as present: an unknown fact cannot
	// prove that no authored request behaviour must be reproduced.
	if r.RequestTransportOverrides != wire.TransportOverridesNone {
		switch s.RequestTransportOverrides {
		case v1alpha1.RequestTransportOverridesSupported:
		case v1alpha1.RequestTransportOverridesUnsupportedWithFallback:
			return support{why: refusalTransportOverrides, fallback: true}
		default: // Unsupported, the CRD default when empty
			return support{why: refusalTransportOverrides}
		}
	}
	if r.RuntimePolicy != nil || !containsProvider(s.NativeProviders, provider) {
		switch s.RoutePolicy {
		case v1alpha1.RoutePolicyAny:
		case v1alpha1.RoutePolicyMustBeDeclared:
			if r.RuntimePolicy == nil {
				return support{why: refusalRouteUndeclared}
			}
		default: // MustListHarness, the CRD default when empty
			if r.RuntimePolicy == nil {
				return support{why: refusalRouteUndeclared}
			}
			if !slices.Contains(rt.listed, int32(hi)) {
				return support{why: refusalRouteNotListed}
			}
		}
	}
	if pa := r.PreparedAuth; pa != nil && pa.Requirement != "" && s.PreparedAuth != nil {
		mode := rt.authMode
		switch pa.Requirement {
		case wire.AuthRequirementSubscription:
			if pa.Source != wire.AuthSourceProfile || !containsFold(s.PreparedAuth.SubscriptionModes, mode) {
				return support{why: refusalAuthSubscription}
			}
		case wire.AuthRequirementAPIKey:
			if (pa.Source != wire.AuthSourceProfile && pa.Source != wire.AuthSourceDirect) || !containsFold(s.PreparedAuth.APIKeyModes, mode) {
				return support{why: refusalAuthAPIKey}
			}
		default:
			return support{why: refusalAuthUnknown}
		}
	}
	return support{}
}

// claimsWithoutFacts reports whether auto may select the harness for an
// attempt without route facts: its route policy accepts any route, or the
// provider is native to it. Otherwise the route is indeterminate and the
// harness does not claim it, as Codex's own support answer in OpenClaw
// ("does not infer native support for an indeterminate OpenAI route"): a
// provider's name alone never selects a route-bound harness.
func (v *hview) claimsWithoutFacts(provider string) bool {
	s := v.support
	return s != nil && (s.RoutePolicy == v1alpha1.RoutePolicyAny || containsProvider(s.NativeProviders, provider))
}

// containsProvider and containsFold compare exactly first: declarations are
// usually spelled as the (lowercased) attempt spells them, and Select asks
// these of every harness and route.
func containsProvider(list []v1alpha1.ProviderID, provider string) bool {
	for _, p := range list {
		if string(p) == provider || strings.EqualFold(string(p), provider) {
			return true
		}
	}
	return false
}

func containsFold(list []string, s string) bool {
	for _, e := range list {
		if e == s || strings.EqualFold(e, s) {
			return true
		}
	}
	return false
}

// readiness of a harness that claims a turn.
type readiness int

const (
	ready readiness = iota
	unavailable
	belowFloor
)

// readinessOf reads the manager's conditions (docs/design/contract-rules.md,
// rule 3).
// VersionSupported False with reason VersionBelowFloor is below the floor.
// Otherwise the harness is unavailable unless WorkloadReady and
// VersionSupported are both True; a missing condition counts as Unknown, and
// VersionSupported False for another reason (HandshakeFailed or one this build
// does not know) counts as unavailable. With assumeReady, a harness whose
// status has no conditions at all is ready (offline explain of hand-written
// manifests). It returns the type of the deciding condition and the condition
// itself when it exists.
func readinessOf(h *v1alpha1.AgentHarness, assumeReady bool) (readiness, string, *metav1.Condition) {
	conds := h.Status.Conditions
	if assumeReady && len(conds) == 0 {
		return ready, "", nil
	}
	vs := meta.FindStatusCondition(conds, v1alpha1.HarnessConditionVersionSupported)
	if vs != nil && vs.Status == metav1.ConditionFalse && vs.Reason == string(v1alpha1.HarnessReasonVersionBelowFloor) {
		return belowFloor, v1alpha1.HarnessConditionVersionSupported, vs
	}
	wr := meta.FindStatusCondition(conds, v1alpha1.HarnessConditionWorkloadReady)
	if wr == nil || wr.Status != metav1.ConditionTrue {
		return unavailable, v1alpha1.HarnessConditionWorkloadReady, wr
	}
	if vs == nil || vs.Status != metav1.ConditionTrue {
		return unavailable, v1alpha1.HarnessConditionVersionSupported, vs
	}
	return ready, "", nil
}

// officialOpenAIRoute reports whether a route is an official OpenAI Responses
// route with no authored overrides, where `auto` is implicit Codex. A nil route
// (no route facts) is the default official route.
func officialOpenAIRoute(r *wire.ModelProvider) bool {
	if r == nil {
		return true
	}
	if r.RequestTransportOverrides != wire.TransportOverridesNone {
		return false
	}
	host, path, ok := splitHTTPS(r.BaseURL)
	if !ok {
		return false
	}
	switch r.API {
	case "openai-responses":
		return strings.EqualFold(host, "api.openai.com") &&
			(path == "" || path == "/" || path == "/v1" || path == "/v1/")
	case "openai-chatgpt-responses":
		return strings.EqualFold(host, "chatgpt.com") && chatGPTPath(path)
	}
	return false
}

// splitHTTPS splits an https URL into host and path. It refuses other schemes,
// ports (even :443), user info, queries (even an empty `?`), fragments,
// percent-escapes, backslashes and whitespace: an official route is spelled
// exactly.
func splitHTTPS(u string) (host, path string, ok bool) {
	const scheme = "https://"
	if len(u) < len(scheme) || !strings.EqualFold(u[:len(scheme)], scheme) {
		return "", "", false
	}
	rest := u[len(scheme):]
	if strings.ContainsAny(rest, "?#@%\\ \t\r\n") {
		return "", "", false
	}
	host, path = rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		host, path = rest[:i], rest[i:]
	}
	if host == "" || strings.IndexByte(host, ':') >= 0 {
		return "", "", false
	}
	return host, path, true
}

// chatGPTPath matches /backend-api[/codex][/v1|/responses][/].
func chatGPTPath(p string) bool {
	p, ok := strings.CutPrefix(p, "/backend-api")
	if !ok {
		return false
	}
	p = cutSegment(p, "/codex")
	if q := cutSegment(p, "/v1"); q != p {
		p = q
	} else {
		p = cutSegment(p, "/responses")
	}
	return p == "" || p == "/"
}

// cutSegment removes a leading path segment seg ("/x") when it is a whole segment.
func cutSegment(p, seg string) string {
	if rest, ok := strings.CutPrefix(p, seg); ok && (rest == "" || rest[0] == '/') {
		return rest
	}
	return p
}
