package selection

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/toolpolicy"
	"github.com/openclaw/harness-operator/internal/wire"
)

// Snapshot is everything Select reads besides the attempt. The caller filters:
// Harnesses are the AgentHarnesses visible to the session's namespace
// (HarnessVisible) with their status, Policies the RuntimePolicies that select
// it (PolicySelects). Select never modifies the snapshot.
type Snapshot struct {
	// Harnesses are the visible AgentHarnesses; nil entries are skipped.
	Harnesses []*v1alpha1.AgentHarness
	// Policies are the RuntimePolicies selecting the namespace; nil entries are skipped.
	Policies []*v1alpha1.RuntimePolicy
	// Session is the AgentSession, authoritative for identity, model, pin and
	// override. Nil evaluates the attempt's own agentHarnessId and
	// agentHarnessRuntimeOverride ("what if").
	Session *v1alpha1.AgentSession
	// AssumeReadyWithoutStatus treats a harness whose status has no conditions
	// as Ready (offline explain of hand-written manifests). The dispatcher
	// leaves it false: a harness the manager has not observed is unavailable.
	AssumeReadyWithoutStatus bool
}

// route is one prepared route; a nil mp means the attempt has no route facts.
// compat holds the route's compatible ids, normalized once.
type route struct {
	name   string
	mp     *wire.ModelProvider
	compat []string
}

// Selection modes.
const (
	modeList     = iota // openclaw or a CLI passthrough: harnesses are only listed
	modeAuto            // ask every admitted harness
	modeImplicit        // auto for openai: implicit codex on official routes
	modeExplicit        // an explicit runtime id from an override or policy
	modePin             // the session's persisted harness pin
)

// outcome is the decision for one route: a harness (index into views) or
// openclaw (-1), with its reason, or an error.
type outcome struct {
	harness int
	reason  wire.Reason
	err     *wire.Error
}

type engine struct {
	a        *wire.Attempt
	snap     *Snapshot
	agentID  string
	provider string
	model    string
	pin      string
	override string
	views    []hview // in snapshot order
	byID     []int   // view indices by harness id, then age
	order    []int   // view indices by priority (highest first), then id, then age
	routes   []route
}

// Select decides which runtime runs an attempt (DESIGN.md §5, issue 3). It is
// pure: no I/O, no clock, and it modifies neither its inputs nor package state.
// A non-nil Session is checked first with ValidateAgainstSession; a mismatch is
// returned as a Decision with a SessionMismatch error and nothing else. A nil
// attempt is an empty one.
func Select(s Snapshot, a *wire.Attempt) wire.Decision {
	if a == nil {
		a = &wire.Attempt{}
	}
	if s.Session != nil {
		if err := validateAgainstSession(s.Session, a); err != nil {
			return wire.Decision{Error: err}
		}
	}
	e := engine{a: a, snap: &s}
	e.facts()
	return e.decide()
}

// facts reads identity, model, pin and override from the session, or from the
// attempt without one, and prepares the harness views and routes.
func (e *engine) facts() {
	a, sess := e.a, e.snap.Session
	if sess != nil {
		e.agentID = sess.Spec.AgentID
		e.provider, e.model = SplitModel("", sess.Spec.Model)
		e.pin = sess.Status.AgentHarnessID
		e.override = string(sess.Spec.RuntimeOverride)
	} else {
		e.agentID = a.AgentID
		e.provider, e.model = SplitModel(a.Provider, a.ModelID)
		e.pin = a.AgentHarnessID
		e.override = a.AgentHarnessRuntimeOverride
	}
	// A pin names a plugin harness; `auto` or `openclaw` there pins nothing.
	// An override of `auto` (or `default`) overrides nothing.
	if e.pin = NormalizeRuntimeID(e.pin); e.pin == string(v1alpha1.RuntimeAuto) || e.pin == string(v1alpha1.RuntimeOpenClaw) {
		e.pin = ""
	}
	if e.override = NormalizeRuntimeID(e.override); e.override == string(v1alpha1.RuntimeAuto) {
		e.override = ""
	}

	// Indices are sorted rather than the views themselves: swapping ints is
	// cheap, and candidates come out in their final order without a sort.
	e.views = make([]hview, 0, len(e.snap.Harnesses))
	for _, h := range e.snap.Harnesses {
		if h != nil {
			e.views = append(e.views, newView(h))
		}
	}
	e.byID = make([]int, len(e.views))
	for i := range e.byID {
		e.byID[i] = i
	}
	slices.SortFunc(e.byID, func(i, j int) int { return compareViews(&e.views[i], &e.views[j]) })
	for k := 1; k < len(e.byID); k++ {
		e.views[e.byID[k]].shadowed = e.views[e.byID[k]].id == e.views[e.byID[k-1]].id
	}
	e.order = slices.Clone(e.byID)
	slices.SortStableFunc(e.order, func(i, j int) int { return cmp.Compare(e.views[j].priority, e.views[i].priority) })

	if a.ModelProvider != nil {
		e.routes = append(e.routes, newRoute("modelProvider", a.ModelProvider))
	}
	for i := range a.ModelProviders {
		mp := &a.ModelProviders[i]
		if a.ModelProvider != nil && sameRoute(a.ModelProvider, mp) {
			continue // the selected route repeated in its retry set
		}
		e.routes = append(e.routes, newRoute("modelProviders["+strconv.Itoa(i)+"]", mp))
	}
	if len(e.routes) == 0 {
		e.routes = []route{{}}
	}
}

func newRoute(name string, mp *wire.ModelProvider) route {
	r := route{name: name, mp: mp}
	if mp.RuntimePolicy != nil {
		r.compat = make([]string, len(mp.RuntimePolicy.CompatibleIDs))
		for i, id := range mp.RuntimePolicy.CompatibleIDs {
			r.compat[i] = NormalizeRuntimeID(id)
		}
	}
	return r
}

// lookup returns the index of the view that counts for a harness id (the
// oldest of duplicates), or -1.
func (e *engine) lookup(id string) int {
	k, ok := slices.BinarySearchFunc(e.byID, id, func(i int, id string) int { return strings.Compare(e.views[i].id, id) })
	if !ok {
		return -1
	}
	return e.byID[k]
}

func (e *engine) decide() wire.Decision {
	pol := ResolvePolicy(e.snap.Policies, PolicyKey{AgentID: e.agentID, Provider: e.provider, Model: e.model})
	d := wire.Decision{MatchedPolicies: pol.MatchedPolicies}

	// Precedence: session pin > session override > policy > auto.
	switch {
	case e.pin != "":
		d.RequestedRuntime, d.RuntimeSource = e.pin, v1alpha1.RuntimeSourceSession
	case e.override != "":
		d.RequestedRuntime, d.RuntimeSource = e.override, v1alpha1.RuntimeSourceOverride
	default:
		d.RequestedRuntime, d.RuntimeSource = pol.Runtime, runtimeSourceOf(pol.Source)
	}

	if pol.Enforced {
		if src, err := e.enforce(pol); err != nil {
			d.Error, d.RuntimeSource = err, src
			d.Candidates, _ = e.evaluate(modeList, -1)
			return d
		}
	}

	rt := d.RequestedRuntime
	switch {
	case rt == string(v1alpha1.RuntimeAuto):
		return e.finish(d, e.autoMode(), -1)
	case rt == string(v1alpha1.RuntimeOpenClaw):
		d.Runtime, d.Reason = rt, wire.ReasonForcedOpenClaw
		d.Candidates, _ = e.evaluate(modeList, -1)
		return d
	}
	if p, ok := CLIBackendProvider(rt); ok && p == e.provider {
		// A CLI backend alias for the provider passes through to the embedded
		// runtime, whether or not a harness has that id.
		d.Runtime, d.Reason, d.CLIBackend = string(v1alpha1.RuntimeOpenClaw), wire.ReasonCLIRuntimePassthroughOpenClaw, rt
		d.Candidates, _ = e.evaluate(modeList, -1)
		return d
	}
	target := e.lookup(rt)
	if target < 0 {
		d.HarnessID = rt
		d.Error = wire.Errorf(wire.CodeHarnessNotRegistered, "", "Requested agent harness %q is not registered.", rt)
		d.Candidates, _ = e.evaluate(modeList, -1)
		return d
	}
	mode := modeExplicit
	if d.RuntimeSource == v1alpha1.RuntimeSourceSession {
		mode = modePin
	}
	return e.finish(d, mode, target)
}

// autoMode is how `auto` decides: for provider openai it asks no plugin and is
// implicit codex on the official routes; otherwise it asks every harness.
func (e *engine) autoMode() int {
	if e.provider == "openai" {
		return modeImplicit
	}
	return modeAuto
}

// enforce checks the pin and the override against a Deny policy's runtime and
// returns the OverrideDenied error with the source it is about. Under an
// enforced `auto` a pin is accepted only when auto would select the pinned
// harness itself (the pin then records auto's own choice); any override other
// than `auto` contradicts it. Both are checked: a session that carries a
// contradicting override fails even when its pin agrees.
func (e *engine) enforce(pol PolicyResolution) (v1alpha1.RuntimeSource, *wire.Error) {
	model := modelLabel(e.provider, e.model)
	if e.pin != "" && e.pin != pol.Runtime {
		contradicts := true
		if pol.Runtime == string(v1alpha1.RuntimeAuto) {
			_, outs := e.evaluate(e.autoMode(), -1)
			h, _, err := combine(outs)
			contradicts = err != nil || h < 0 || e.views[h].id != e.pin
		}
		if contradicts {
			return v1alpha1.RuntimeSourceSession, wire.Errorf(wire.CodeOverrideDenied, "",
				"Session is pinned to agent harness %q, but RuntimePolicy %q (sessionOverrides: Deny) requires runtime %q for %s. Reset the session to clear the pin.",
				e.pin, pol.Policy, pol.Runtime, model)
		}
	}
	if e.override != "" && e.override != pol.Runtime {
		return v1alpha1.RuntimeSourceOverride, wire.Errorf(wire.CodeOverrideDenied, "",
			"Runtime override %q contradicts RuntimePolicy %q (sessionOverrides: Deny), which requires runtime %q for %s.",
			e.override, pol.Policy, pol.Runtime, model)
	}
	return "", nil
}

// finish decides every route, combines them, and applies the checks that
// belong to the harness that runs the set.
func (e *engine) finish(d wire.Decision, mode, target int) wire.Decision {
	var outs []outcome
	d.Candidates, outs = e.evaluate(mode, target)
	h, reason, err := combine(outs)
	if len(e.routes) > 1 {
		d.Routes = make([]wire.RouteDecision, len(outs))
		for i, o := range outs {
			rd := wire.RouteDecision{Route: e.routes[i].name, Reason: o.reason, Error: o.err}
			if o.err == nil {
				rd.Runtime = string(v1alpha1.RuntimeOpenClaw)
				if o.harness >= 0 {
					rd.Runtime, rd.HarnessID = e.views[o.harness].id, e.views[o.harness].id
				}
			}
			d.Routes[i] = rd
		}
	}
	if err != nil {
		d.Error = err
		e.setHarness(&d, target)
		return d
	}
	if h < 0 {
		d.Runtime, d.Reason = string(v1alpha1.RuntimeOpenClaw), reason
		return d
	}
	if mode == modeImplicit {
		d.RuntimeSource = v1alpha1.RuntimeSourceImplicit
	}
	e.setHarness(&d, h)
	v := &e.views[h]

	// Order: permanent failures before the transient one, so a gateway does
	// not retry a turn that would fail anyway once the harness is back.
	state, condType, cond := readinessOf(v.h, e.snap.AssumeReadyWithoutStatus)
	if state == belowFloor {
		msg := cond.Message
		if msg == "" {
			msg = fmt.Sprintf("Agent harness %q runs a version below its floor.", v.id)
		}
		d.Error = wire.Errorf(wire.CodeVersionBelowFloor, wire.ScopeHarness, "%s", msg)
		return d
	}
	verdict := e.toolVerdict(v)
	d.ToolPolicy = &wire.ToolPolicyDecision{Restricted: verdict.Restricted, SafeDeniedTools: verdict.SafeDeniedTools, Reasons: verdict.Reasons}
	if verdict.Restricted && v.h.Spec.ConversationToolPolicySupport != v1alpha1.ToolPolicySupportExact {
		d.Error = wire.Errorf(wire.CodeToolPolicyUnenforceable, wire.ScopeHarness,
			"%s cannot enforce this conversation's tool policy. Use the embedded runtime or ask in the main conversation.", v.label)
		return d
	}
	if state == unavailable {
		d.Error = wire.Errorf(wire.CodeHarnessUnavailable, wire.ScopeHarness, "%s", unavailableMessage(v.id, condType, cond))
		return d
	}
	d.Runtime, d.Reason = v.id, reason
	return d
}

func (e *engine) setHarness(d *wire.Decision, i int) {
	if i < 0 {
		return
	}
	ref := e.views[i].ref()
	d.HarnessID, d.HarnessRef = e.views[i].id, &ref
}

// evaluate lists every visible harness as a candidate and decides each route
// for the mode. target is the requested harness (explicit, pin); in implicit
// mode it is looked up as `codex`.
func (e *engine) evaluate(mode, target int) ([]wire.Candidate, []outcome) {
	if mode == modeImplicit {
		target = e.lookup(string(v1alpha1.RuntimeCodex))
	}
	nr := len(e.routes)
	best := make([]int, nr)
	targetRes := make([]support, nr)
	for i := range best {
		best[i] = -1
	}
	targetAdmitted := false
	noFacts := e.routes[0].mp == nil

	cands := make([]wire.Candidate, len(e.order))
	for k, hi := range e.order {
		v := &e.views[hi]
		c := &cands[k]
		*c = wire.Candidate{HarnessID: v.id, HarnessRef: v.ref(), Label: v.label, Priority: v.priority}
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
		case mode == modePin && hi == target && noFacts:
			c.Supported, c.Reason = true, reasonPinUnchecked
			continue
		}
		if mode == modeAuto || mode == modeImplicit {
			if ok, why := v.autoAdmits(e.provider); !ok {
				c.Reason = why
				continue
			}
		}
		if hi == target {
			targetAdmitted = true
		}
		c.Supported = true
		allFallback := true
		byProvider := v.supportsProvider(e.provider)
		for ri := range e.routes {
			res := byProvider
			if res.ok {
				res = v.supportsRoute(e.provider, &e.routes[ri])
			}
			if hi == target {
				targetRes[ri] = res
			}
			if res.ok {
				// Candidates come by priority, then id: the first supporter wins.
				if mode == modeAuto && best[ri] < 0 {
					best[ri] = hi
				}
				continue
			}
			if c.Supported {
				c.Supported, c.Reason = false, res.reason
				if nr > 1 {
					c.Reason = e.routes[ri].name + ": " + res.reason
				}
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

	outs := make([]outcome, nr)
	for ri := range e.routes {
		o := &outs[ri]
		o.harness = -1
		switch mode {
		case modeAuto:
			if o.harness = best[ri]; o.harness >= 0 {
				o.reason = wire.ReasonAutoPlugin
			} else {
				o.reason = wire.ReasonAutoOpenClaw
			}
		case modeImplicit:
			switch {
			case !officialOpenAIRoute(e.routes[ri].mp):
				o.reason = wire.ReasonAutoOpenClaw
			case target < 0:
				o.reason = wire.ReasonImplicitPluginUnavailableOpenClaw
			case !targetAdmitted || !targetRes[ri].ok:
				o.reason = wire.ReasonImplicitPluginUnsupportedOpenClaw
			default:
				o.harness, o.reason = target, wire.ReasonForcedPlugin
			}
		case modeExplicit, modePin:
			res := targetRes[ri]
			if mode == modePin && e.routes[ri].mp == nil {
				// A pin keeps ownership while route facts are still pending.
				res = support{ok: true}
			}
			switch {
			case res.ok:
				o.harness, o.reason = target, wire.ReasonForcedPlugin
			case res.fallback:
				o.reason = wire.ReasonPluginDeclaredFallbackOpenClaw
			default:
				o.err = wire.Errorf(wire.CodeHarnessUnsupported, wire.ScopeHarness, "%s", e.unsupportedMessage(e.views[target].id, e.routes[ri], res.reason))
			}
		}
	}
	return cands, outs
}

// combine merges per-route outcomes (DESIGN.md §5 rule 4): the first
// fail-closed route fails the set; routes that agree run on their runtime;
// routes that disagree run the set on openclaw, with the reason of the first
// route that chose openclaw (auto_openclaw when none did).
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

func (e *engine) unsupportedMessage(id string, r route, reason string) string {
	if len(e.routes) > 1 {
		reason = r.name + ": " + reason
	}
	return fmt.Sprintf("Requested agent harness %q does not support %s (%s).", id, modelLabel(e.provider, e.model), reason)
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
// declarations (DESIGN.md §5 rule 6).
func (e *engine) toolVerdict(v *hview) toolpolicy.Verdict {
	a := e.a
	in := toolpolicy.Input{
		ToolsAllow:     a.ToolsAllow,
		DisableTools:   a.DisableTools,
		HostRestricted: a.PluginHarnessToolPolicyRestricted,
		NativeTools:    toolIDs(v.nativeTools),
	}
	if v.h.Spec.ConversationToolPolicySupport == v1alpha1.ToolPolicySupportExact {
		in.Support = toolpolicy.SupportExact
		in.SafeDenyTools = toolIDs(v.h.Spec.ConversationToolPolicySafeDenyTools)
	}
	if tp := a.ToolPolicy; tp != nil {
		in.Profile, in.AlsoAllow = tp.Profile, tp.AlsoAllow
		in.Layers = make([]toolpolicy.Layer, len(tp.Layers))
		for i, l := range tp.Layers {
			in.Layers[i] = toolpolicy.Layer{Name: l.Name, Allow: l.Allow, Deny: l.Deny}
		}
	}
	return toolpolicy.Evaluate(in)
}

func toolIDs(ids []v1alpha1.ToolID) []string {
	if len(ids) == 0 {
		return nil
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = string(id)
	}
	return out
}

// sameRoute reports whether two routes carry the same facts.
func sameRoute(a, b *wire.ModelProvider) bool {
	if a.API != b.API || a.BaseURL != b.BaseURL || a.RequestTransportOverrides != b.RequestTransportOverrides {
		return false
	}
	if (a.RuntimePolicy == nil) != (b.RuntimePolicy == nil) || (a.PreparedAuth == nil) != (b.PreparedAuth == nil) {
		return false
	}
	if a.RuntimePolicy != nil && !slices.Equal(a.RuntimePolicy.CompatibleIDs, b.RuntimePolicy.CompatibleIDs) {
		return false
	}
	return a.PreparedAuth == nil || *a.PreparedAuth == *b.PreparedAuth
}

// ValidateAgainstSession checks that the attempt repeats its AgentSession
// faithfully: agentId, sessionKey and sessionId exactly; provider and modelId
// against spec.model (provider and model ids case-insensitively);
// agentHarnessId against status.agentHarnessId and agentHarnessRuntimeOverride
// against spec.runtimeOverride after runtime-id normalization. Empty attempt
// fields are not compared. The error, when not nil, is an *Error with code
// SessionMismatch listing every mismatching field. Select runs it first.
func ValidateAgainstSession(sess *v1alpha1.AgentSession, a *wire.Attempt) error {
	if err := validateAgainstSession(sess, a); err != nil {
		return err
	}
	return nil
}

func validateAgainstSession(sess *v1alpha1.AgentSession, a *wire.Attempt) *wire.Error {
	if sess == nil || a == nil {
		return nil
	}
	var problems []string
	mismatch := func(field, got, sessField, want string) {
		problems = append(problems, fmt.Sprintf("%s %q does not match %s %q", field, got, sessField, want))
	}
	if a.AgentID != "" && a.AgentID != sess.Spec.AgentID {
		mismatch("agentId", a.AgentID, "spec.agentId", sess.Spec.AgentID)
	}
	if a.SessionKey != "" && a.SessionKey != sess.Spec.SessionKey {
		mismatch("sessionKey", a.SessionKey, "spec.sessionKey", sess.Spec.SessionKey)
	}
	if a.SessionID != "" && a.SessionID != sess.Spec.SessionID {
		mismatch("sessionId", a.SessionID, "spec.sessionId", sess.Spec.SessionID)
	}
	sp, sm := SplitModel("", sess.Spec.Model)
	ap, am := SplitModel(a.Provider, a.ModelID)
	if ap != "" && ap != sp {
		mismatch("provider", a.Provider, "spec.model", sess.Spec.Model)
	}
	if am != "" && !strings.EqualFold(am, sm) {
		mismatch("modelId", a.ModelID, "spec.model", sess.Spec.Model)
	}
	if strings.TrimSpace(a.AgentHarnessID) != "" && NormalizeRuntimeID(a.AgentHarnessID) != NormalizeRuntimeID(sess.Status.AgentHarnessID) {
		mismatch("agentHarnessId", a.AgentHarnessID, "status.agentHarnessId", sess.Status.AgentHarnessID)
	}
	if strings.TrimSpace(a.AgentHarnessRuntimeOverride) != "" &&
		NormalizeRuntimeID(a.AgentHarnessRuntimeOverride) != NormalizeRuntimeID(string(sess.Spec.RuntimeOverride)) {
		mismatch("agentHarnessRuntimeOverride", a.AgentHarnessRuntimeOverride, "spec.runtimeOverride", string(sess.Spec.RuntimeOverride))
	}
	if len(problems) == 0 {
		return nil
	}
	return wire.Errorf(wire.CodeSessionMismatch, "", "The attempt contradicts AgentSession %s/%s: %s.",
		sess.Namespace, sess.Name, strings.Join(problems, "; "))
}
