package engine

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// A reset (spec.resetGeneration bumped past status.nativeBinding.generation)
// ends the session's ownership of its native thread: the pin
// (status.agentHarnessId) and the binding go together
// (docs/design/contract-rules.md, rule 1; the harness SDK keeps a persisted
// agentHarnessId only for the native transcript it owns). Every decision
// ignores a stale pin at once (selection.SessionPin); the dispatcher, which
// writes both fields (its field manager applies them, the manager never writes
// them), removes them under the session's lease when the session's next turn
// starts, whatever runtime that turn is then decided for.

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
	// A merge patch with nulls removes both fields whoever else owns part of
	// them: a server-side apply that leaves them out would remove only what
	// the dispatcher's field manager owns, and a field another writer touched
	// (a hand-edited binding) would survive as a half binding the schema
	// refuses.
	patch := client.RawPatch(k8stypes.MergePatchType, []byte(`{"status":{"agentHarnessId":null,"nativeBinding":null}}`))
	target := &v1alpha1.AgentSession{ObjectMeta: metav1.ObjectMeta{Namespace: sess.Namespace, Name: sess.Name}}
	if err := e.writer.Status().Patch(ctx, target, patch, client.FieldOwner(e.opts.FieldManager)); err != nil {
		return wire.Errorf(wire.CodeHarnessUnavailable, "", "clear the ownership pin and native binding of reset AgentSession %s/%s: %v",
			sess.Namespace, sess.Name, err)
	}
	st := dispatcherPart(&sess.Status)
	st.AgentHarnessID, st.NativeBinding = "", nil
	e.remember(sess.UID, st)
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
