package httpapi

import (
	"net/http"
	"strings"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// Delegated execution (docs/security.md): a delegate runs an existing
// locked session on behalf of its owner.
const (
	// VerbDelegate is the RBAC verb on agentsessions/turns that lets a
	// caller run turns as a delegate; it grants nothing without the
	// harness's consent (AgentHarness spec.delegates) and never lets the
	// caller do what `create` lets an owner do on an unlocked session.
	VerbDelegate = "delegate"
	// DelegateHeader, set to "true", says the caller acts as a delegate: the
	// request is then authorized with VerbDelegate instead of VerbCreate,
	// and the turn is admitted by engine.Engine.StartDelegated. The caller
	// says so explicitly rather than the dispatcher guessing from a missing
	// `create`: one SubjectAccessReview per request, and a caller holding
	// both verbs chooses which rules apply to it.
	DelegateHeader = "X-Harness-Delegate"
)

// delegated reads DelegateHeader: absent is false, "true" is true, anything
// else is answered 400 and ok is false.
func (h *Handler) delegated(w http.ResponseWriter, r *http.Request) (delegate, ok bool) {
	v, set := r.Header[http.CanonicalHeaderKey(DelegateHeader)]
	if !set {
		return false, true
	}
	if len(v) != 1 || !strings.EqualFold(strings.TrimSpace(v[0]), "true") {
		h.writeError(w, wire.Errorf(wire.CodeBadRequest, "", "header %s must be \"true\" (act as a delegate) or absent", DelegateHeader), h.retryAfter)
		return false, false
	}
	return true, true
}

// authorizeRun authorizes the requests that run a turn or answer a running
// one (turns, decide, tool-results, interrupt, approvals, user-input): a
// delegate (DelegateHeader) needs VerbDelegate, every other caller
// VerbCreate. A delegate's follow-up requests need the turn token of a run
// it started, which only its own stream hands out.
func (h *Handler) authorizeRun(w http.ResponseWriter, r *http.Request) (v Verdict, delegate, ok bool) {
	delegate, ok = h.delegated(w, r)
	if !ok {
		return Verdict{}, false, false
	}
	verb := VerbCreate
	if delegate {
		verb = VerbDelegate
	}
	v, ok = h.authorize(w, r, attrs(r, verb))
	return v, delegate, ok
}

// delegateRefusal says which field of req a delegate may not set, or nil.
// The harness SDK gives a delegate work admission and embedded execution only: a
// prompt (with images), a narrower tool policy, timeouts. Whatever would
// change the owner's session beyond that turn, or let the model reach more
// than the owner chose, stays the owner's:
//   - gatewayTranscript writes history into the owner's thread and
//     transcript mirror (a delegate could forge assistant messages);
//   - mcpServers and tools give the model servers and host tools the owner
//     did not offer;
//   - approvalMode other than never lets the model ask to leave Codex's
//     sandbox, and the delegate would answer those approvals;
//   - authProfile rebinds the session's model credential.
//
// The refusal is 403 Forbidden naming the field, before anything runs.
func delegateRefusal(req *wire.TurnRequest) error {
	var field string
	switch {
	case req.GatewayTranscript != nil:
		field = "gatewayTranscript"
	case len(req.MCPServers) > 0:
		field = "mcpServers"
	case len(req.Tools) > 0:
		field = "tools"
	case req.ApprovalMode != "" && req.ApprovalMode != wire.ApprovalModeNever:
		field = "approvalMode"
	case req.AuthProfile != nil:
		field = "authProfile"
	default:
		return nil
	}
	return wire.Errorf(wire.CodeForbidden, "",
		"a delegate (%s: true) may not set %s: a delegated turn carries the prompt, images, a narrower tool policy and timeouts; the rest stays the session owner's", DelegateHeader, field)
}
