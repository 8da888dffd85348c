package selection

import (
	"fmt"
	"slices"
	"strings"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
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
	snap     Snapshot
	agentID  string
	provider string
	// supportProvider is the provider harnesses are asked about: the
	// session's, the attempt's, or the one a policy entry named — never one
	// split off a what-if attempt's model id (OpenClaw's harness support
	// reads the caller's provider; only policy infers one from the model id).
	supportProvider string
	model           string
	pin             string // the ownership pin of a locked session; empty once a reset made it stale
	pinUse          *wire.PinUse
	override        string
	pending         bool // the attempt carries no route facts (modelProvider/modelProviders)
	// judgingPin makes a pending route count as the default official route
	// for implicit codex while enforce asks whether auto could have chosen
	// the pinned harness (the pin records a choice made with route facts).
	judgingPin bool
	// views are sorted by harness id, then age (compareViews): the first
	// view of an id is the one that counts, and its index is what lookup
	// returns and outcomes name.
	views []hview
	// order holds view indices by priority (highest first), then id order:
	// the order of the candidates.
	order  []int64
	routes []route
	// parts are the decision's small parts, allocated on first use.
	parts *decisionParts

	scratch
}

// Select decides which runtime runs an attempt (docs/design/contract-rules.md).
// It is pure: no I/O, no clock, it modifies none of its inputs, and its
// result depends only on them (it reuses scratch memory between calls, never
// data). A non-nil Session is checked first with ValidateAgainstSession; a
// mismatch is returned as a Decision with a SessionMismatch error and nothing
// else. A nil attempt is an empty one.
func Select(s Snapshot, a *wire.Attempt) wire.Decision {
	if a == nil {
		a = &wire.Attempt{}
	}
	if s.Session != nil {
		if err := validateAgainstSession(s.Session, a); err != nil {
			return wire.Decision{Error: err}
		}
	}
	e := enginePool.Get().(*engine)
	e.a, e.snap = a, s
	e.facts()
	d := e.decide()
	e.release()
	return d
}

// facts reads identity, model, pin and override from the session, or from the
// attempt without one, and prepares the harness views and routes.
func (e *engine) facts() {
	a, sess := e.a, e.snap.Session
	if sess != nil {
		e.agentID = sess.Spec.AgentID
		e.provider, e.model = SplitModel("", sess.Spec.Model)
		e.supportProvider = e.provider
		switch raw := strings.TrimSpace(sess.Status.AgentHarnessID); {
		case raw == "":
		case sess.Spec.ModelSelectionLocked != v1alpha1.ModelSelectionLocked:
			e.pinUse = &wire.PinUse{HarnessID: raw, Use: wire.PinUnlocked}
		case SessionPin(sess) == "":
			e.pinUse = &wire.PinUse{HarnessID: raw, Use: wire.PinStale}
		default:
			e.pin = raw
		}
		e.override = string(sess.Spec.RuntimeOverride)
	} else {
		e.agentID = a.AgentID
		e.provider, e.model = SplitModel(a.Provider, a.ModelID)
		if NormalizeProvider(a.Provider) != "" {
			e.supportProvider = e.provider
		}
		e.pin = a.AgentHarnessID
		e.override = a.AgentHarnessRuntimeOverride
	}
	// OpenClaw's requested runtime is pin ?? override: a pin of `auto`
	// leaves the configured policy in charge and sets the override aside; a
	// pin of `openclaw` forces the embedded runtime. An override of `auto`
	// (or `default`) overrides nothing.
	if e.pin != "" {
		raw := strings.TrimSpace(e.pin)
		if e.pin = NormalizeRuntimeID(e.pin); e.pin == string(v1alpha1.RuntimeAuto) {
			e.pin, e.override = "", ""
			e.pinUse = &wire.PinUse{HarnessID: raw, Use: wire.PinAuto}
		} else {
			e.pinUse = &wire.PinUse{HarnessID: raw, Use: wire.PinChecked} // Unchecked below, when pending
		}
	}
	e.override = NormalizeRuntimeID(e.override)
	if e.override == string(v1alpha1.RuntimeAuto) {
		e.override = ""
	}

	// Views are built in place (copying one into the slice would move its
	// pointers a second time) and sorted by id once; the candidates' order is
	// then a sort of integers.
	n := 0
	for _, h := range e.snap.Harnesses {
		if h != nil {
			n++
		}
	}
	e.views = resized(e.scratch.views, n)
	e.scratch.views = e.views
	n = 0
	for _, h := range e.snap.Harnesses {
		if h != nil {
			e.views[n].init(h)
			n++
		}
	}
	// A snapshot kept between turns may already be in this order
	// (SortHarnesses); checking costs one comparison of integers per view.
	if !viewsSorted(e.views) {
		slices.SortFunc(e.views, compareViews)
	}
	for i := 1; i < n; i++ {
		v, prev := &e.views[i], &e.views[i-1]
		v.shadowed = v.idPrefix == prev.idPrefix && v.id == prev.id
	}
	e.order = resized(e.scratch.order, n)
	e.scratch.order = e.order
	e.orderByPriority()

	e.routes = e.scratch.routes[:0]
	e.listed = e.listed[:0]
	if a.ModelProvider != nil {
		e.routes = append(e.routes, e.newRoute(0, a.ModelProvider))
	}
	for i := range a.ModelProviders {
		mp := &a.ModelProviders[i]
		if a.ModelProvider != nil && sameRoute(a.ModelProvider, mp) {
			continue // the selected route repeated in its retry set
		}
		e.routes = append(e.routes, e.newRoute(i+1, mp))
	}
	if len(e.routes) == 0 {
		e.pending = true
		e.routes = append(e.routes, route{same: -1})
		if e.pinUse != nil && e.pinUse.Use == wire.PinChecked {
			e.pinUse.Use = wire.PinUnchecked
		}
	}
	e.scratch.routes = e.routes
}

// viewsSorted reports whether views are in compareViews order, comparing
// the ids' prefixes where they differ.
func viewsSorted(views []hview) bool {
	for i := 1; i < len(views); i++ {
		a, b := &views[i-1], &views[i]
		if a.idPrefix < b.idPrefix {
			continue
		}
		if a.idPrefix > b.idPrefix || compareViews(*a, *b) > 0 {
			return false
		}
	}
	return true
}

// countingSortSpan is the widest range of priorities orderByPriority counts
// out rather than sorts.
const countingSortSpan = 256

// orderByPriority fills e.order with the view indices by priority, highest
// first, then id order (the views' order): the order of the candidates.
func (e *engine) orderByPriority() {
	views, order := e.views, e.order
	if len(views) == 0 {
		return
	}
	lo, hi := views[0].priority, views[0].priority
	for i := range views {
		lo, hi = min(lo, views[i].priority), max(hi, views[i].priority)
	}
	if int64(hi)-int64(lo) < countingSortSpan {
		// Priorities are usually few and close together (the adapter's
		// default, a few levels around it): a stable counting sort by
		// priority keeps the id order within one priority in one pass.
		var start [countingSortSpan + 1]int32
		for i := range views {
			start[int(uint8(hi-views[i].priority))+1]++
		}
		for k := 1; k <= int(hi-lo); k++ {
			start[k] += start[k-1]
		}
		for i := range views {
			k := uint8(hi - views[i].priority)
			order[start[k]] = int64(i)
			start[k]++
		}
		return
	}
	// Priority (highest first), then id order, packed into one integer per
	// view: ^priority in the high half (a higher priority is a smaller key),
	// the view index in the low half. The index makes keys unique, so sorting
	// them gives the order a stable sort by priority would; the priority is
	// then masked off, leaving the index.
	for i := range views {
		order[i] = int64(^views[i].priority)<<32 | int64(i)
	}
	slices.Sort(order)
	for k := range order {
		order[k] &= 1<<32 - 1
	}
}

// lookup returns the index of the view that counts for a harness id (the
// oldest of duplicates), or -1.
func (e *engine) lookup(id string) int {
	key := prefixKey(id)
	lo, hi := 0, len(e.views)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if v := &e.views[m]; v.idPrefix < key || (v.idPrefix == key && v.id < id) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == len(e.views) || e.views[lo].id != id {
		return -1
	}
	return lo
}

func (e *engine) decide() wire.Decision {
	pol := resolvePolicy(e.snap.Policies, PolicyKey{AgentID: e.agentID, Provider: e.provider, Model: e.model}, e.matchedStorage)
	d := wire.Decision{MatchedPolicies: pol.MatchedPolicies, Pin: e.pinUse}
	if pol.Provider != "" {
		// A `provider/model` or `provider/*` entry matched an unknown
		// provider: the turn is for the entry's provider (OpenClaw's
		// matchedProvider; the operator asks harnesses about it too).
		e.provider, e.supportProvider = pol.Provider, pol.Provider
	}

	// Precedence (docs/design/contract-rules.md, rule 1; the harness SDK: "A persisted
	// session agentHarnessId keeps ownership of its native transcript while
	// route/auth preparation is still pending"): a locked session's pin is
	// the requested runtime, unchecked while route facts are pending and
	// checked against them once they exist (mode below).
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
			d.Candidates, _ = e.evaluate(modeList, -1, true)
			return d
		}
	}

	rt := d.RequestedRuntime
	switch {
	case rt == string(v1alpha1.RuntimeAuto):
		return e.finish(d, e.autoMode(), -1)
	case rt == string(v1alpha1.RuntimeOpenClaw):
		d.Runtime, d.Reason = rt, wire.ReasonForcedOpenClaw
		d.Candidates, _ = e.evaluate(modeList, -1, true)
		return d
	}
	if p, ok := CLIBackendProvider(rt); ok && p == e.provider {
		// A CLI backend alias for the provider passes through to the embedded
		// runtime, whether or not a harness has that id.
		d.Runtime, d.Reason, d.CLIBackend = string(v1alpha1.RuntimeOpenClaw), wire.ReasonCLIRuntimePassthroughOpenClaw, rt
		d.Candidates, _ = e.evaluate(modeList, -1, true)
		return d
	}
	target := e.lookup(rt)
	if target < 0 {
		d.HarnessID = rt
		d.Error = wire.Errorf(wire.CodeHarnessNotRegistered, "", "Requested agent harness %q is not registered.", rt)
		d.Candidates, _ = e.evaluate(modeList, -1, true)
		return d
	}
	mode := modeExplicit
	if d.RuntimeSource == v1alpha1.RuntimeSourceSession && e.pending {
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
// returns the OverrideDenied error with the source it is about (the
// operator's addition: OpenClaw lets a locked session's pin beat policy).
// Under an enforced `auto` a pin is accepted only when auto would select the
// pinned harness itself on the attempt's routes (while facts are pending, on
// the default official route the pin was made for): the pin then records
// auto's own choice. Any override other than `auto` contradicts it. Both are
// checked: a session that carries a contradicting override fails even when
// its pin agrees.
func (e *engine) enforce(pol PolicyResolution) (v1alpha1.RuntimeSource, *wire.Error) {
	model := modelLabel(e.provider, e.model)
	if e.pin != "" && e.pin != pol.Runtime {
		contradicts := true
		if pol.Runtime == string(v1alpha1.RuntimeAuto) {
			e.judgingPin = e.pending
			_, outs := e.evaluate(e.autoMode(), -1, false)
			e.judgingPin = false
			h, _, err := combine(outs)
			contradicts = err != nil || h < 0 || e.views[h].id != e.pin
		}
		if contradicts {
			return v1alpha1.RuntimeSourceSession, wire.Errorf(wire.CodeOverrideDenied, "",
				"Session is pinned to agent harness %q (its model selection is locked), but RuntimePolicy %q (sessionOverrides: Deny) requires runtime %q for %s. "+
					"Reset the session (bump spec.resetGeneration; it clears the pin and the native thread), or unlock its model selection.",
				e.pin, pol.Policy, pol.Runtime, model)
		}
	}
	if e.override != "" && e.override != pol.Runtime {
		return v1alpha1.RuntimeSourceOverride, wire.Errorf(wire.CodeOverrideDenied, "",
			"Runtime override %q contradicts RuntimePolicy %q (sessionOverrides: Deny), which requires runtime %q for %s. "+
				"Remove spec.runtimeOverride or set it to %q.",
			e.override, pol.Policy, pol.Runtime, model, pol.Runtime)
	}
	return "", nil
}

// finish decides every route, combines them, and applies the checks that
// belong to the harness that runs the set.
func (e *engine) finish(d wire.Decision, mode, target int) wire.Decision {
	var outs []outcome
	d.Candidates, outs = e.evaluate(mode, target, true)
	h, reason, err := combine(outs)
	if len(e.routes) > 1 {
		if p := e.getParts(); len(outs) <= len(p.routes) {
			d.Routes = p.routes[:len(outs):len(outs)]
		} else {
			d.Routes = make([]wire.RouteDecision, len(outs))
		}
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
	d.ToolPolicy = &e.getParts().toolPolicy
	*d.ToolPolicy = wire.ToolPolicyDecision{Restricted: verdict.Restricted, SafeDeniedTools: verdict.SafeDeniedTools, Reasons: verdict.Reasons}
	if verdict.Restricted && v.h.Spec.ConversationToolPolicySupport != v1alpha1.ToolPolicySupportExact {
		d.Error = wire.Errorf(wire.CodeToolPolicyUnenforceable, wire.ScopeHarness,
			"%s cannot enforce this conversation's tool policy. Use the embedded runtime or ask in the main conversation.", v.label())
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
	d.HarnessID, d.HarnessRef = e.views[i].id, &e.getParts().harnessRef
	*d.HarnessRef = e.views[i].ref()
	d.AuthBootstrap = e.views[i].h.Spec.AuthBootstrap
	if d.AuthBootstrap == "" { // the API's default, for objects that predate it
		d.AuthBootstrap = v1alpha1.AuthBootstrapHarness
	}
}
