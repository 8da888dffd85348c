package engine

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// dispatcherStatus is the dispatcher's part of AgentSession status
// (docs/api.md, AgentSession). Every apply carries the whole part: with
// server-side apply a field the field manager owned and leaves out is removed,
// which is how activeTurn is cleared.
type dispatcherStatus struct {
	AgentHarnessID string                    `json:"agentHarnessId,omitempty"`
	LastSelection  *v1alpha1.LastSelection   `json:"lastSelection,omitempty"`
	NativeBinding  *v1alpha1.NativeBinding   `json:"nativeBinding,omitempty"`
	ActiveTurn     *v1alpha1.ActiveTurn      `json:"activeTurn,omitempty"`
	LastTurn       *v1alpha1.LastTurn        `json:"lastTurn,omitempty"`
	Counters       *v1alpha1.SessionCounters `json:"counters,omitempty"`
}

// dispatcherPart copies the dispatcher's fields out of a status.
func dispatcherPart(s *v1alpha1.AgentSessionStatus) *dispatcherStatus {
	c := s.DeepCopy()
	return &dispatcherStatus{
		AgentHarnessID: c.AgentHarnessID, LastSelection: c.LastSelection, NativeBinding: c.NativeBinding,
		ActiveTurn: c.ActiveTurn, LastTurn: c.LastTurn, Counters: c.Counters,
	}
}

// into writes the part into a status.
func (d *dispatcherStatus) into(s *v1alpha1.AgentSessionStatus) {
	c := d.deepCopy()
	s.AgentHarnessID, s.LastSelection, s.NativeBinding = c.AgentHarnessID, c.LastSelection, c.NativeBinding
	s.ActiveTurn, s.LastTurn, s.Counters = c.ActiveTurn, c.LastTurn, c.Counters
}

func (d *dispatcherStatus) deepCopy() *dispatcherStatus {
	s := &v1alpha1.AgentSessionStatus{
		AgentHarnessID: d.AgentHarnessID, LastSelection: d.LastSelection, NativeBinding: d.NativeBinding,
		ActiveTurn: d.ActiveTurn, LastTurn: d.LastTurn, Counters: d.Counters,
	}
	return dispatcherPart(s)
}

// statusCache remembers the last status the engine applied per AgentSession
// UID, so a lagging informer cache never rolls counters back (one
// dispatcher writes these fields, docs/api.md). Its lock guards only the
// map.
type statusCache struct {
	mu      sync.Mutex
	applied map[k8stypes.UID]*dispatcherStatus
}

// current is the dispatcher's part of sess's status as this engine last
// knows it. What the engine remembers is keyed by the object's UID: a session
// deleted and created again under its name is another session, which starts
// from its own (empty) status, never from its predecessor's thread and
// counters.
func (e *Engine) current(sess *v1alpha1.AgentSession) *dispatcherStatus {
	e.status.mu.Lock()
	st := e.status.applied[sess.UID]
	e.status.mu.Unlock()
	if st != nil {
		return st.deepCopy()
	}
	return dispatcherPart(&sess.Status)
}

// apply writes the dispatcher's part of a session's status by server-side
// apply under the engine's field manager (forcing ownership of its fields).
// A status apply cannot carry a UID precondition (the API server keeps the
// stored metadata on the status subresource); a same-named successor is
// never written to because the finalizer removes a session only after its
// running turn has ended and written its status, under the session lease.
func (e *Engine) apply(ctx context.Context, sess *v1alpha1.AgentSession, st *dispatcherStatus) error {
	ns, name := sess.Namespace, sess.Name
	status, err := runtime.DefaultUnstructuredConverter.ToUnstructured(st)
	if err != nil {
		return fmt.Errorf("dispatch: convert status: %w", err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("AgentSession"))
	u.SetNamespace(ns)
	u.SetName(name)
	if status == nil {
		status = map[string]any{} // apply "nothing" (drops every field this manager owned)
	}
	u.Object["status"] = status
	if err := e.writer.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(e.opts.FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("dispatch: apply status of AgentSession %s/%s: %w", ns, name, err)
	}
	e.remember(sess.UID, st)
	return nil
}

// remember records st as the dispatcher's part of the status of the session
// with UID uid, as last written.
func (e *Engine) remember(uid k8stypes.UID, st *dispatcherStatus) {
	e.status.mu.Lock()
	if e.status.applied == nil {
		e.status.applied = map[k8stypes.UID]*dispatcherStatus{}
	}
	e.status.applied[uid] = st
	e.status.mu.Unlock()
}

// forget drops what the engine remembers of the session with UID uid (its
// finalizer ran).
func (e *Engine) forget(uid k8stypes.UID) {
	e.status.mu.Lock()
	delete(e.status.applied, uid)
	e.status.mu.Unlock()
}

// rememberedUIDs lists the UIDs of the sessions the engine remembers.
func (e *Engine) rememberedUIDs() []k8stypes.UID {
	e.status.mu.Lock()
	defer e.status.mu.Unlock()
	uids := make([]k8stypes.UID, 0, len(e.status.applied))
	for uid := range e.status.applied {
		uids = append(uids, uid)
	}
	return uids
}
