package selection

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/policy/toolpolicy"
)

// Evaluating the candidate harnesses of a decision: support of the route,
// availability, tool policy, and the messages of a candidate that cannot run
// the turn.

// evaluate lists every visible harness as a candidate and decides each route
// for the mode. target is the requested harness (explicit, pin); in implicit
// mode it is looked up as `codex`. Without list, it only decides the routes
// and returns no candidates. The outcomes are the engine's scratch: they are
// read before evaluate runs again.
func (e *engine) evaluate(mode, target int, list bool) ([]wire.Candidate, []outcome) {
	if mode == modeImplicit {
		target = e.lookup(string(v1alpha1.RuntimeCodex))
	}
	nr := len(e.routes)
	rs := resized(e.rs, nr)
	e.rs = rs
	for i := range rs {
		rs[i] = routeScratch{best: -1}
	}
	targetAdmitted := false

	var cands []wire.Candidate
	var unlisted wire.Candidate
	if list {
		cands = make([]wire.Candidate, len(e.order))
	}
	routes, views := e.routes, e.views
	for k, key := range e.order {
		hi := int(key)
		v := &views[hi]
		c := &unlisted
		if list {
			c = &cands[k]
		} else {
			unlisted = wire.Candidate{}
		}
		// Field by field into the zeroed slice: assigning a whole struct
		// literal moves all of its pointers again.
		c.HarnessID, c.HarnessRef, c.Label, c.Priority = v.id, v.ref(), v.label(), v.priority
		switch {
		case v.shadowed:
			c.Reason = reasonShadowed
			continue
		case v.reserved:
			c.Reason = reasonReserved
			continue
		case mode == modeImplicit && hi != target:
			c.Reason = reasonOpenAIImplicit
			continue
		case mode == modeImplicit && e.pending && !e.judgingPin:
			c.Reason = reasonNoRouteFacts // not asked, as in OpenClaw
			continue
		case mode == modePin && hi == target:
			c.Supported, c.Reason = true, reasonPinUnchecked
			continue
		}
		if mode == modeAuto || mode == modeImplicit {
			if ok, why := v.autoAdmits(e.supportProvider); !ok {
				c.Reason = why
				continue
			}
		}
		if hi == target {
			targetAdmitted = true
		}
		c.Supported = true
		allFallback := true
		byProvider := v.supportsProvider(e.supportProvider)
		for ri := range routes {
			r := &routes[ri]
			if r.same >= 0 {
				// Answered as its earlier twin, which came first: it adds
				// no refusal and no fallback (best and target are copied
				// below).
				continue
			}
			res := byProvider
			if res.ok() {
				res = v.supportsRoute(e.supportProvider, r, hi)
			}
			if res.ok() && mode == modeAuto && r.mp == nil && !v.claimsWithoutFacts(e.supportProvider) {
				res = support{why: refusalRouteIndeterminate}
			}
			if hi == target {
				rs[ri].target = res
			}
			if res.ok() {
				// Candidates come by priority, then id: the first supporter wins.
				if mode == modeAuto && rs[ri].best < 0 {
					rs[ri].best = hi
				}
				continue
			}
			if c.Supported {
				c.Supported, c.Reason = false, r.reason(res.why, nr > 1)
			}
			allFallback = allFallback && res.fallback
		}
		if !c.Supported && allFallback {
			c.FallbackRuntime = string(v1alpha1.RuntimeOpenClaw)
		}
	}
	if mode == modeList {
		return cands, nil
	}
	for ri := range rs {
		if same := e.routes[ri].same; same >= 0 {
			rs[ri] = rs[same]
		}
	}

	outs := resized(e.outs, nr)
	e.outs = outs
	for ri := range e.routes {
		o := &outs[ri]
		*o = outcome{harness: -1}
		switch mode {
		case modeAuto:
			if o.harness = rs[ri].best; o.harness >= 0 {
				o.reason = wire.ReasonAutoPlugin
			} else {
				o.reason = wire.ReasonAutoOpenClaw
			}
		case modeImplicit:
			switch {
			case e.routes[ri].mp == nil && !e.judgingPin:
				// The harness SDK: "The openai/* prefix alone never selects Codex."
				o.reason = wire.ReasonAutoOpenClaw
			case !officialOpenAIRoute(e.routes[ri].mp):
				o.reason = wire.ReasonAutoOpenClaw
			case target < 0:
				o.reason = wire.ReasonImplicitPluginUnavailableOpenClaw
			case !targetAdmitted || !rs[ri].target.ok():
				o.reason = wire.ReasonImplicitPluginUnsupportedOpenClaw
			default:
				o.harness, o.reason = target, wire.ReasonForcedPlugin
			}
		case modeExplicit, modePin:
			res := rs[ri].target
			if mode == modePin {
				// While route facts are pending a locked session's pin keeps
				// ownership without a support check (with facts the pin is
				// checked as an explicit harness: modeExplicit).
				res = support{}
			}
			switch {
			case res.ok():
				o.harness, o.reason = target, wire.ReasonForcedPlugin
			case res.fallback:
				o.reason = wire.ReasonPluginDeclaredFallbackOpenClaw
			default:
				// No scope: the refusal is about this provider and route; another
				// model on the same harness may well be supported
				// (docs/design/contract-rules.md, rule 5).
				o.err = wire.Errorf(wire.CodeHarnessUnsupported, "", "%s", e.unsupportedMessage(e.views[target].id, &e.routes[ri], res.why))
			}
		}
	}
	return cands, outs
}

// routeScratch is what evaluate keeps per route: the first supporter (auto)
// and the target's answer.
type routeScratch struct {
	best   int
	target support
}

// combine merges per-route outcomes (docs/design/contract-rules.md, rule 4):
// the first fail-closed route fails the set; routes that agree run on their
// runtime; routes that disagree run the set on openclaw, with the reason of the
// first route that chose openclaw (auto_openclaw when none did).
func combine(outs []outcome) (int, wire.Reason, *wire.Error) {
	for _, o := range outs {
		if o.err != nil {
			return -1, "", o.err
		}
	}
	first := outs[0]
	for _, o := range outs[1:] {
		if o.harness != first.harness {
			for _, o := range outs {
				if o.harness < 0 {
					return -1, o.reason, nil
				}
			}
			return -1, wire.ReasonAutoOpenClaw, nil
		}
	}
	return first.harness, first.reason, nil
}

func (e *engine) unsupportedMessage(id string, r *route, why refusal) string {
	return fmt.Sprintf("Requested agent harness %q does not support %s (%s).", id, modelLabel(e.provider, e.model), r.reason(why, len(e.routes) > 1))
}

// modelLabel is provider/model, or whichever part is known.
func modelLabel(provider, model string) string {
	switch {
	case provider != "" && model != "":
		return provider + "/" + model
	case provider != "":
		return provider
	case model != "":
		return model
	}
	return "an unknown provider"
}

func unavailableMessage(id, condType string, c *metav1.Condition) string {
	if c == nil {
		return fmt.Sprintf("Agent harness %q is unavailable: %s is not reported yet. Retry later.", id, condType)
	}
	detail := c.Reason
	if c.Message != "" {
		detail += ": " + c.Message
	}
	return fmt.Sprintf("Agent harness %q is unavailable: %s is %s (%s). Retry later.", id, condType, c.Status, detail)
}

// toolVerdict applies the tool-policy restriction rule with the harness's
// declarations (docs/design/contract-rules.md, rule 6). Its input is built in
// the engine's scratch: Evaluate keeps none of it.
func (e *engine) toolVerdict(v *hview) toolpolicy.Verdict {
	a := e.a
	in := toolpolicy.Input{
		ToolsAllow:     a.ToolsAllow,
		DisableTools:   a.DisableTools,
		HostRestricted: a.PluginHarnessToolPolicyRestricted,
	}
	names := e.toolNames[:0]
	native := v.nativeTools()
	names = appendToolIDs(names, native)
	var safe []v1alpha1.ToolID
	if v.h.Spec.ConversationToolPolicySupport == v1alpha1.ToolPolicySupportExact {
		in.Support = toolpolicy.SupportExact
		safe = v.h.Spec.ConversationToolPolicySafeDenyTools
		names = appendToolIDs(names, safe)
	}
	e.toolNames = names
	// An empty declaration stays nil, as Evaluate was always given.
	if len(native) > 0 {
		in.NativeTools = names[:len(native):len(native)]
	}
	if len(safe) > 0 {
		in.SafeDenyTools = names[len(native):]
	}
	if tp := a.ToolPolicy; tp != nil {
		in.Profile, in.AlsoAllow = tp.Profile, tp.AlsoAllow
		in.Layers = resized(e.layers, len(tp.Layers))
		e.layers = in.Layers
		for i, l := range tp.Layers {
			in.Layers[i] = toolpolicy.Layer{Name: l.Name, Allow: l.Allow, Deny: l.Deny}
		}
	}
	return toolpolicy.Evaluate(in)
}

func appendToolIDs(dst []string, ids []v1alpha1.ToolID) []string {
	for _, id := range ids {
		dst = append(dst, string(id))
	}
	return dst
}
