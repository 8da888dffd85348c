package dispatch

import (
	"context"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/wire"
)

// A reset (spec.resetGeneration bumped past status.nativeBinding.generation)
// ends the session's ownership of its native thread: the pin
// (status.agentHarnessId) and the binding go together (DESIGN.md §5 rule 1;
// the seed keeps a persisted agentHarnessId only for the native transcript
// it owns). Every decision ignores a stale pin at once
// (selection.SessionPin); the dispatcher, which owns both fields (its field
// manager applies them, the manager never writes them), removes them under
// the session's lease when the session's next turn starts, whatever runtime
// that turn is then decided for.

// clearReset removes the pin and the binding of a session reset since its
// binding was written, in the API and in sess (the turn goes on from the
// cleared status): the places the old binding held are given back, and the
// transcript mirror starts over with the reset marker. A session that was
// not reset is left alone. It runs under the session's lease.
func (e *Engine) clearReset(ctx context.Context, sess *v1alpha1.AgentSession) *wire.Error {
	old := sess.Status.NativeBinding
	if old == nil || old.Generation == sess.Spec.ResetGeneration {
		return nil
	}
	st := dispatcherPart(&sess.Status)
	st.AgentHarnessID, st.NativeBinding = "", nil
	// Server-side apply of the dispatcher's whole part without the two
	// fields removes them: its field manager owns them (endStatus wrote them).
	if err := e.apply(ctx, sess, st); err != nil {
		return wire.Errorf(wire.CodeHarnessUnavailable, "", "clear the ownership pin and native binding of reset AgentSession %s/%s: %v",
			sess.Namespace, sess.Name, err)
	}
	st.into(&sess.Status)
	session := SessionKey(sess)
	if err := e.store.ResetTranscript(session, sess.Spec.ResetGeneration); err != nil {
		e.log.Error(err, "transcript reset marker failed", "session", session)
	}
	e.leavePlaces(session, sess.Namespace, old, false)
	e.log.Info("session reset: ownership pin and native binding cleared", "session", session,
		"generation", sess.Spec.ResetGeneration, "thread", old.ThreadID)
	return nil
}
