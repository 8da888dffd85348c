package selection

import (
	"fmt"
	"slices"
	"strings"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// The attempt against its AgentSession: the session is authoritative, so an
// attempt that contradicts it is refused (SessionMismatch).

// ValidateAgainstSession checks that the attempt repeats its AgentSession
// faithfully: agentId, sessionKey and sessionId exactly; provider and modelId
// against spec.model (provider and model ids case-insensitively);
// agentHarnessId against status.agentHarnessId and agentHarnessRuntimeOverride
// against spec.runtimeOverride after runtime-id normalization. Empty attempt
// fields are not compared. The error, when not nil, is an *Error with code
// SessionMismatch listing every mismatching field. Select runs it first.
//
// A mismatch of the model alone has scope `harness`: every other model on
// this harness meets the same spec.model, so retrying one here would repeat
// the refusal, while a candidate of another runtime is not bound to the
// AgentSession (the contract allows the scope for exactly that case). Any
// other mismatch — the attempt names another session, pin or override — has
// none and ends the fallback chain.
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
	modelOnly := true
	mismatch := func(field, got, sessField, want string) {
		problems = append(problems, fmt.Sprintf("%s %q does not match %s %q", field, got, sessField, want))
		modelOnly = modelOnly && sessField == "spec.model"
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
	if strings.TrimSpace(a.AgentHarnessID) != "" && NormalizeRuntimeID(a.AgentHarnessID) != NormalizeRuntimeID(SessionPin(sess)) {
		mismatch("agentHarnessId", a.AgentHarnessID, "status.agentHarnessId", sess.Status.AgentHarnessID)
	}
	if strings.TrimSpace(a.AgentHarnessRuntimeOverride) != "" &&
		NormalizeRuntimeID(a.AgentHarnessRuntimeOverride) != NormalizeRuntimeID(string(sess.Spec.RuntimeOverride)) {
		mismatch("agentHarnessRuntimeOverride", a.AgentHarnessRuntimeOverride, "spec.runtimeOverride", string(sess.Spec.RuntimeOverride))
	}
	if len(problems) == 0 {
		return nil
	}
	if modelOnly {
		return wire.Errorf(wire.CodeSessionMismatch, wire.ScopeHarness, "The attempt contradicts AgentSession %s/%s: %s. %s",
			sess.Namespace, sess.Name, strings.Join(problems, "; "), modelRemedy(sess))
	}
	return wire.Errorf(wire.CodeSessionMismatch, wire.ScopeNone, "The attempt contradicts AgentSession %s/%s: %s.",
		sess.Namespace, sess.Name, strings.Join(problems, "; "))
}

// modelRemedy says how a session's model changes: not at all while its
// model selection is locked; otherwise by updating spec.model before the
// turn, as the OpenClaw plugin does.
func modelRemedy(sess *v1alpha1.AgentSession) string {
	if sess.Spec.ModelSelectionLocked == v1alpha1.ModelSelectionLocked {
		return "Its model selection is Locked (spec.modelSelectionLocked), so its model cannot change; start a new session for another model."
	}
	return "Update spec.model before the turn to change the session's model."
}

// SessionPin is the session's ownership pin (status.agentHarnessId) that a
// decision honours, or empty when a reset made it stale: the pin is written with the native binding of
// the generation it ran in, and a reset (spec.resetGeneration bumped past
// the binding's generation) clears both — the dispatcher removes them at the
// session's next turn, and until then no decision honours them.
func SessionPin(sess *v1alpha1.AgentSession) string {
	if b := sess.Status.NativeBinding; b != nil && b.Generation != sess.Spec.ResetGeneration {
		return ""
	}
	return sess.Status.AgentHarnessID
}

// sameRoute reports whether two routes carry the same facts.
func sameRoute(a, b *wire.ModelProvider) bool {
	if a.API != b.API || a.BaseURL != b.BaseURL || a.RequestTransportOverrides != b.RequestTransportOverrides ||
		a.EndpointOverrides != b.EndpointOverrides {
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
