package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter/codex"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/policy/selection"
)

// Isolated completion and settled-turn finalization: one prompt-only call
// on the session's selected harness that touches none of the session's
// state — not the session's lease (it may run beside the session's turn,
// as a side question does), no journal run, no native thread, no binding,
// no transcript record. Selection and its refusals are the turn's (decide);
// then the harness must offer the capability (AdapterCapabilities), and
// the adapter proves isolation for the model or refuses
// (codex.Complete). The call is metered like a turn: one at a time per
// session, in places of the harness's capacity (callplaces.go).

// completionDir is the directory, under a namespace's part of the
// workspace root, that holds the ephemeral threads' working directory. It
// never collides with a session's directory (named by its UID).
const completionDir = "isolated-completion"

// Complete runs one isolated completion (runID empty) or the settled-turn
// finalization of run runID of the session ns/name. It returns the result
// and the decision (whose capabilities tell the caller what the harness
// offers), or the refusal: a *wire.Error for selection, capability and
// isolation refusals and for the call's failure, ErrSessionNotFound, a
// *wire.FieldError for the body, store.ErrNotFound for an unknown run.
//
// by is the requester: an authProfile's Secret is read only when by may get
// it (admitAuthProfile).
func (e *Engine) Complete(ctx context.Context, ns, name, runID string, req *wire.CompletionRequest, by store.Requester) (*wire.CompletionResult, *wire.Decision, error) {
	finalize := runID != ""
	if err := req.Validate(finalize); err != nil {
		return nil, nil, err
	}
	sess, err := e.session(ctx, ns, name)
	if err != nil {
		return nil, nil, err
	}
	turnReq := &wire.TurnRequest{Attempt: req.Attempt, AuthProfileTurnFields: req.AuthProfileTurnFields}
	if err := validateAgainstSession(ns, sess, turnReq); err != nil {
		return nil, nil, err
	}
	p, terr := e.decide(ctx, sess, turnReq)
	if terr != nil {
		return nil, decisionOf(p), terr
	}
	capability := v1alpha1.CapabilityIsolatedCompletion
	if finalize {
		capability = v1alpha1.CapabilitySettledTurnFinalization
		if err := e.settledRun(ctx, sess, runID, p.decision.HarnessID); err != nil {
			return nil, &p.decision, err
		}
	}
	// The adapter's table, not the decision's model resolution: whether a
	// model can be isolated is the adapter's to prove against the server's
	// live catalog (codex.Complete), not the catalog status published.
	if wire.CapabilityOf(wire.AdapterCapabilities(p.harness.Spec.Adapter), capability) == v1alpha1.CapabilityUnsupported {
		return nil, &p.decision, wire.Errorf(wire.CodeHarnessUnsupported, wire.ScopeHarness,
			"agent harness %s does not offer %s", p.decision.HarnessID, capability)
	}
	if err := e.admitAuthProfile(ctx, sess, turnReq, p, by); err != nil {
		return nil, &p.decision, err
	}
	res, err := e.completeOn(ctx, sess, p, req)
	if err != nil {
		return nil, &p.decision, err
	}
	res.HarnessID = p.decision.HarnessID
	return res, &p.decision, nil
}

func decisionOf(p *prepared) *wire.Decision {
	if p == nil {
		return nil
	}
	return &p.decision
}

// completeOn picks the server (the session's bound pod when it has one, so
// the call lands where the session's load already is; else the
// least-loaded ready pod), holds the call's places there until it ends
// (holdCallPlaces), connects and runs the adapter's completion.
func (e *Engine) completeOn(ctx context.Context, sess *v1alpha1.AgentSession, p *prepared, req *wire.CompletionRequest) (*wire.CompletionResult, error) {
	h := p.harness
	pods, err := e.serverPods(ctx, h)
	if err != nil {
		return nil, wire.Errorf(wire.CodeHarnessUnavailable, wire.ScopeHarness, "list the app-server pods: %v", err)
	}
	srv, serr := PickServer(h, pods, sess.Status.NativeBinding, p.rebind)
	if serr != nil {
		return nil, serr
	}
	ctx, places, err := e.holdCallPlaces(ctx, sess, h, srv)
	if err != nil {
		return nil, err
	}
	defer places.giveBack()
	sc, err := e.serverConn(ctx, h, srv)
	if err != nil {
		return nil, wire.Errorf(wire.CodeHarnessUnavailable, wire.ScopeHarness, "%v", err)
	}
	c, err := e.open(ctx, sc)
	if err != nil {
		return nil, wire.Errorf(wire.CodeHarnessUnavailable, wire.ScopeHarness,
			"connect to app-server %s of AgentHarness %s/%s: %v", srv.Name, h.Namespace, h.Name, err)
	}
	timeout := e.opts.DefaultTurnTimeout
	if req.TimeoutMs > 0 {
		timeout = time.Duration(req.TimeoutMs) * time.Millisecond
	}
	_, model := selection.SplitModel("", sess.Spec.Model)
	in := codex.CompletionInput{
		Model:        model,
		Cwd:          path.Join(e.workspaceRoot(c), sess.Namespace, completionDir),
		Instructions: req.Instructions,
		Messages:     req.Messages,
		Prompt:       req.Prompt,
		Deadline:     time.Now().Add(timeout),
		AuthProfile:  p.authProfile,
	}
	// The call's credential rides its call lease: the gateway accepts it
	// while the call runs.
	if terr := e.mintModelCredential(sess, p, places.lease, "", req.TimeoutMs, req.AuthProfile, time.Now()); terr != nil {
		return nil, terr
	}
	if p.modelCredential != "" {
		in.ModelCredential, in.AuthProfile = p.modelCredential, nil
	}
	res, err := codex.Complete(ctx, c, in)
	var we *wire.Error
	switch {
	case err == nil:
		return res, nil
	case errors.As(err, &we):
		return nil, we
	case errors.Is(err, adapter.ErrInvalidInput):
		return nil, wire.Errorf(wire.CodeBadRequest, "", "%v", err)
	}
	return nil, wire.Errorf(wire.CodeHarnessUnavailable, "", "isolated completion on app-server %s of AgentHarness %s/%s: %v",
		srv.Name, h.Namespace, h.Name, err)
}

// settledRun checks that run runID of the session has ended and ran on
// harnessID: a finalization answers for a settled attempt of the same
// harness, never for one still running (its tools have not settled) or one
// another runtime ran.
func (e *Engine) settledRun(ctx context.Context, sess *v1alpha1.AgentSession, runID, harnessID string) error {
	run, err := e.store.FindRun(SessionKey(sess), runID)
	if err != nil {
		return err
	}
	if run.Info().State == store.StateRunning {
		return wire.Errorf(wire.CodeBadRequest, "", "run %s of AgentSession %s/%s is still running: finalize it once its tools settled",
			runID, sess.Namespace, sess.Name)
	}
	for ev, err := range run.Events(ctx, 0) {
		if err != nil {
			return fmt.Errorf("dispatch: read run %s: %w", runID, err)
		}
		var sel wire.SelectedEvent
		if ev.Type != wire.EventSelected || json.Unmarshal(ev.Payload, &sel) != nil {
			break
		}
		if sel.HarnessID != harnessID {
			return wire.Errorf(wire.CodeBadRequest, "", "run %s ran on agent harness %s, but this finalization selects %s",
				runID, sel.HarnessID, harnessID)
		}
		return nil
	}
	return wire.Errorf(wire.CodeBadRequest, "", "run %s of AgentSession %s/%s has no selected event to finalize",
		runID, sess.Namespace, sess.Name)
}

// harnessCapabilities are the capabilities of the harness a decision names
// (the selected one, or the one its error is about), from the snapshot the
// decision was made on, resolved for the session's model (the one its
// turns and completions send): status.capabilities as the manager
// published them with the model catalog its handshakes read, or the
// adapter's table with the catalog unknown before it has. None for the
// embedded runtime.
func harnessCapabilities(snap selection.Snapshot, d wire.Decision) []v1alpha1.HarnessCapability {
	if d.HarnessRef == nil {
		return nil
	}
	for _, h := range snap.Harnesses {
		if h != nil && h.Namespace == d.HarnessRef.Namespace && h.Name == d.HarnessRef.Name {
			caps := h.Status.Capabilities
			if len(caps) == 0 {
				caps = wire.AdapterCapabilities(h.Spec.Adapter)
			}
			model := ""
			if snap.Session != nil {
				_, model = selection.SplitModel("", snap.Session.Spec.Model)
			}
			return codex.CapabilitiesFor(caps, model)
		}
	}
	return nil
}
