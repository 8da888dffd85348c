package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/policy/selection"
)

// StartDelegated is Start for a delegate: a caller the API authorized with
// the verb `delegate` (not `create`) on agentsessions/turns, who runs an
// existing locked session on behalf of its owner (the harness SDK's delegated
// execution). Besides what Start does, the turn runs only when all hold
// (admitDelegate):
//
//   - the session has spec.modelSelectionLocked: Locked (else Forbidden);
//   - the attempt repeats the session's identity exactly: sessionKey,
//     sessionId, agentHarnessId (status.agentHarnessId) and
//     agentHarnessRuntimeOverride (spec.runtimeOverride), empty only where
//     the session's is; the pin and override name one harness, and that
//     harness is the one selection chose (else SessionMismatch);
//   - that AgentHarness lists the caller in spec.delegates (else
//     Forbidden): the harness's owner consents, RBAC in the session's
//     namespace grants, and neither alone is enough.
//
// A delegate follows only its own runs: a runId the journal knows for
// another requester is Forbidden (DelegateMayFollow), so repeating an
// owner's request body never hands the delegate the owner's stream or turn
// token.
func (e *Engine) StartDelegated(ctx context.Context, ns, name string, req *wire.TurnRequest, by store.Requester) (store.Run, error) {
	return e.start(ctx, ns, name, req, by, true)
}

// DelegateMayFollow refuses a delegate a journaled run it did not start.
func DelegateMayFollow(run store.Run, by store.Requester) error {
	owner := run.Info().Requester
	if owner.User == by.User && owner.UID == by.UID {
		return nil
	}
	return wire.Errorf(wire.CodeForbidden, "",
		"run %q was started by another requester; a delegate may follow only the runs it started itself", run.Info().RunID)
}

// admitDelegate is the delegate's admission after selection (see
// StartDelegated). A refusal carries the decision, like every refusal
// after selection.
func (e *Engine) admitDelegate(sess *v1alpha1.AgentSession, req *wire.TurnRequest, p *prepared, by store.Requester) error {
	terr := delegateRefusal(sess, &req.Attempt, p.decision.HarnessID, p.harness, by)
	if terr == nil {
		return nil
	}
	recordRefused(labelsOf(sess.Namespace, p.decision), terr.Code)
	return &refusal{err: terr, decision: &p.decision}
}

// delegateRefusal is admitDelegate's pure rule: nil when the delegate by may
// run the attempt a on sess on harness h (selected as harnessID).
func delegateRefusal(sess *v1alpha1.AgentSession, a *wire.Attempt, harnessID string, h *v1alpha1.AgentHarness, by store.Requester) *wire.Error {
	where := sess.Namespace + "/" + sess.Name
	if sess.Spec.ModelSelectionLocked != v1alpha1.ModelSelectionLocked {
		return wire.Errorf(wire.CodeForbidden, "",
			"delegated execution needs AgentSession %s spec.modelSelectionLocked: Locked; a delegate never runs an unlocked session (its owner runs it with the verb create)", where)
	}
	pin := runtimeName(sess.Status.AgentHarnessID)
	override := runtimeName(string(sess.Spec.RuntimeOverride))
	var problems []string
	exact := func(field, got, sessField, want string) {
		if got != want {
			problems = append(problems, fmt.Sprintf("%s %q must repeat %s %q exactly", field, got, sessField, want))
		}
	}
	exact("sessionKey", a.SessionKey, "spec.sessionKey", sess.Spec.SessionKey)
	exact("sessionId", a.SessionID, "spec.sessionId", sess.Spec.SessionID)
	exact("agentHarnessId", runtimeName(a.AgentHarnessID), "status.agentHarnessId", pin)
	exact("agentHarnessRuntimeOverride", runtimeName(a.AgentHarnessRuntimeOverride), "spec.runtimeOverride", override)
	// `auto` names no harness: selection would choose one.
	named := slices.DeleteFunc([]string{pin, override}, func(s string) bool { return s == "" || s == string(v1alpha1.RuntimeAuto) })
	switch {
	case len(named) == 0:
		problems = append(problems, "the session names no harness (neither status.agentHarnessId nor spec.runtimeOverride is set)")
	case slices.ContainsFunc(named, func(s string) bool { return s != harnessID }):
		problems = append(problems, fmt.Sprintf("status.agentHarnessId %q and spec.runtimeOverride %q must both name the selected harness %q where set", pin, override, harnessID))
	}
	if len(problems) > 0 {
		return wire.Errorf(wire.CodeSessionMismatch, "", "The delegated attempt contradicts AgentSession %s: %s.", where, strings.Join(problems, "; "))
	}
	if !slices.ContainsFunc(h.Spec.Delegates, func(d v1alpha1.Delegate) bool { return d.Matches(by.User, by.Groups) }) {
		return wire.Errorf(wire.CodeForbidden, "",
			"user %q is not listed in AgentHarness %s/%s spec.delegates: only the harness's owner can consent to delegated execution on it", by.User, h.Namespace, h.Name)
	}
	return nil
}

// follow is what a request gets for a runId the journal knows: the run, or
// for a delegate the refusal of a run another requester started.
func follow(run store.Run, err error, by store.Requester, delegated bool) (store.Run, error) {
	if run == nil || err != nil || !delegated {
		return run, err
	}
	if err := DelegateMayFollow(run, by); err != nil {
		return nil, err
	}
	return run, nil
}

// runtimeName is a runtime id normalized, but empty stays empty (where
// NormalizeRuntimeID reads it as `auto`): a delegate must repeat an absent
// pin or override as absent.
func runtimeName(id string) string {
	if strings.TrimSpace(id) == "" {
		return ""
	}
	return selection.NormalizeRuntimeID(id)
}
