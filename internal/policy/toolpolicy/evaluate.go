package toolpolicy

import (
	"fmt"
	"slices"
	"strings"
)

// Support is a harness's conversationToolPolicySupport declaration.
type Support string

const (
	// SupportUnset means the harness made no promise: every explicit restriction
	// isolates its native surface and its safe-deny list is ignored.
	SupportUnset Support = ""
	// SupportExact means the harness enforces every explicit OpenClaw tool-policy
	// layer itself; only then is its safe-deny list honoured.
	SupportExact Support = "Exact"
)

// Layer is one explicit tool-policy layer (global, agent, provider, group, …).
type Layer struct {
	// Name identifies the layer in Verdict.Reasons; layers[i] is used when empty.
	Name string
	// Allow is the layer's allowlist. nil means the layer has no allowlist; a
	// non-nil empty slice denies every tool.
	Allow []string
	// Deny lists tools, groups or "*" the layer denies.
	Deny []string
}

// Input is everything the restriction rule needs for one prepared turn. Names may be
// in any spelling; they are normalized and expanded before they are compared.
type Input struct {
	// Profile is the effective tool profile; empty means full (no narrowing).
	Profile string
	// AlsoAllow adds tools (or groups) on top of Profile.
	AlsoAllow []string
	// Layers are the explicit policy layers in precedence order.
	Layers []Layer
	// ToolsAllow is the turn's toolsAllow. nil means absent (no narrowing); a
	// non-nil empty slice denies every tool.
	ToolsAllow []string
	// DisableTools denies every tool for the turn.
	DisableTools bool
	// HostRestricted is the host's prepared pluginHarnessToolPolicyRestricted.
	HostRestricted bool
	// Support is the harness's conversationToolPolicySupport.
	Support Support
	// SafeDenyTools is the harness's conversationToolPolicySafeDenyTools. Only
	// entries that normalize to known core tool ids count; wildcards, groups and
	// unknown names in it cover nothing, so a bad declaration fails closed.
	SafeDenyTools []string
	// NativeTools is the harness's conversationToolPolicyNativeTools: tools its
	// native surface exposes whatever OpenClaw offers.
	NativeTools []string
}

// Verdict is the outcome of Evaluate.
type Verdict struct {
	// Restricted is true when the harness's native tool surface must be isolated
	// for this turn (pluginHarnessToolPolicyRestricted).
	Restricted bool
	// SafeDeniedTools are the canonical ids of deny layers that the safe-deny list
	// fully covered, sorted and de-duplicated. They did not restrict the turn, so
	// the harness must deny them on its own native surface. They are reported even
	// when another rule restricted the turn; isolation then supersedes them.
	SafeDeniedTools []string
	// Reasons explains each rule that restricted the turn, in a fixed order: host,
	// disableTools, toolsAllow, layers (allow before deny, in layer order), profile
	// and native tools. It is nil when the turn is not restricted.
	Reasons []string
}

// Evaluate applies the tool-policy restriction rule
// (docs/design/contract-rules.md, rule 6) to one
// turn. It is pure and deterministic. Default profile narrowing alone never
// restricts; only explicit layers, toolsAllow, disableTools, declared native tools
// the profile does not allow, an unknown profile (fail closed) or the host's own
// verdict do — the stricter of the host's and the computed verdict wins.
func Evaluate(in Input) Verdict {
	var v Verdict
	restrict := func(format string, args ...any) {
		v.Reasons = append(v.Reasons, fmt.Sprintf(format, args...))
	}

	if in.HostRestricted {
		restrict("host prepared pluginHarnessToolPolicyRestricted")
	}
	if in.DisableTools {
		restrict("disableTools denies every tool")
	}
	if reason, ok := allowRestriction(in.ToolsAllow); ok {
		restrict("toolsAllow %s", reason)
	}

	safe, safeNote := safeDenySet(in)
	var relaxed []string
	for i, layer := range in.Layers {
		name := layer.Name
		if name == "" {
			name = fmt.Sprintf("layers[%d]", i)
		}
		if reason, ok := allowRestriction(layer.Allow); ok {
			restrict("layer %q: allow %s", name, reason)
		}
		deny := ExpandNames(layer.Deny)
		if len(deny) == 0 {
			continue
		}
		if safe == nil {
			restrict("layer %q: deny %s restricts (%s)", name, strings.Join(deny, ", "), safeNote)
			continue
		}
		var uncovered []string
		for _, id := range deny {
			if _, ok := safe[id]; !ok {
				uncovered = append(uncovered, id)
			}
		}
		if len(uncovered) > 0 {
			restrict("layer %q: deny %s not covered by the safe-deny list", name, strings.Join(uncovered, ", "))
			continue
		}
		relaxed = append(relaxed, deny...)
	}

	profile := effectiveProfile(in.Profile)
	if _, ok := profileSets[profile]; !ok {
		restrict("unknown tool profile %q (fails closed)", profile)
	} else if missing := nativeToolsNotAllowed(profile, in.AlsoAllow, in.NativeTools); len(missing) > 0 {
		restrict("native tools not allowed by profile %q: %s", profile, strings.Join(missing, ", "))
	}

	if len(relaxed) > 0 {
		slices.Sort(relaxed)
		v.SafeDeniedTools = slices.Compact(relaxed)
	}
	v.Restricted = len(v.Reasons) > 0
	return v
}

// allowRestriction reports whether an allowlist narrows tools: nil is absent, and
// anything else narrows unless its expansion contains Wildcard.
func allowRestriction(allow []string) (string, bool) {
	if allow == nil {
		return "", false
	}
	expanded := ExpandNames(allow)
	if len(expanded) == 0 {
		return "is empty: every tool is denied", true
	}
	if slices.Contains(expanded, Wildcard) {
		return "", false
	}
	return `is a finite allowlist (no "*")`, true
}

// safeDenySet returns the honoured safe-deny ids, or nil with a note saying why
// there is none. The list is honoured only for SupportExact, since only such a
// harness has promised to enforce the relaxed denies itself.
func safeDenySet(in Input) (map[string]struct{}, string) {
	if len(in.SafeDenyTools) == 0 {
		return nil, "no safe-deny list"
	}
	if in.Support != SupportExact {
		return nil, "safe-deny list is honoured only with support Exact"
	}
	set := make(map[string]struct{}, len(in.SafeDenyTools))
	for _, raw := range in.SafeDenyTools {
		if id := Normalize(raw); IsCoreTool(id) {
			set[id] = struct{}{}
		}
	}
	return set, ""
}

// nativeToolsNotAllowed returns, sorted, the declared native tools that the known
// profile plus alsoAllow do not admit. Such tools would be reachable natively even
// though OpenClaw would not offer them, so they force isolation.
func nativeToolsNotAllowed(profile string, alsoAllow, native []string) []string {
	set := profileSets[profile]
	if _, all := set[Wildcard]; all || len(native) == 0 {
		return nil
	}
	extra := ExpandNames(alsoAllow)
	if slices.Contains(extra, Wildcard) {
		return nil
	}
	var missing []string
	for _, id := range ExpandNames(native) {
		if _, ok := set[id]; ok || slices.Contains(extra, id) {
			continue
		}
		missing = append(missing, id)
	}
	slices.Sort(missing)
	return missing
}
