package engine

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/policy/selection"
	"github.com/openclaw/harness-operator/internal/policy/snapshot"
)

// selectTurn decides the runtime of a turn of sess: the selection snapshot
// (selectionSnapshot), Select and the chosen harness's capabilities. The
// error is for inputs that could not be read.
func (e *Engine) selectTurn(ctx context.Context, sess *v1alpha1.AgentSession, a *wire.Attempt) (selection.Snapshot, wire.Decision, error) {
	snap, err := e.selectionSnapshot(ctx, sess)
	if err != nil {
		return selection.Snapshot{}, wire.Decision{}, err
	}
	d := selection.Select(snap, a)
	d.Capabilities = harnessCapabilities(snap, d)
	return snap, d, nil
}

// selectionSnapshot is the session's selection snapshot. With
// Options.SelectionViews it is the namespace's kept view (read again only
// after an AgentHarness, RuntimePolicy or Namespace event), so a turn's
// cost does not grow with the harnesses and policies of other namespaces.
// Without, it is read now. Either way nothing is deep-copied: the snapshot
// is only read, and let go when the turn has decided.
func (e *Engine) selectionSnapshot(ctx context.Context, sess *v1alpha1.AgentSession) (selection.Snapshot, error) {
	if v := e.opts.SelectionViews; v != nil {
		return v.For(ctx, sess)
	}
	return snapshot.For(ctx, e.reader, sess, client.UnsafeDisableDeepCopy)
}

// decidedHarness is the AgentHarness the decision names, as the snapshot
// that decided it holds it: the turn runs on the object it was selected
// with. The engine only reads it (it may be the informer cache's own).
func (e *Engine) decidedHarness(ctx context.Context, snap selection.Snapshot, d wire.Decision) (*v1alpha1.AgentHarness, error) {
	for _, h := range snap.Harnesses {
		if h != nil && h.Namespace == d.HarnessRef.Namespace && h.Name == d.HarnessRef.Name {
			return h, nil
		}
	}
	h := &v1alpha1.AgentHarness{}
	if err := e.reader.Get(ctx, client.ObjectKey{Namespace: d.HarnessRef.Namespace, Name: d.HarnessRef.Name}, h); err != nil {
		return nil, err
	}
	return h, nil
}
