package dispatch

import (
	"context"
	"errors"
	"math"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/store"
	"github.com/openclaw/harness-operator/internal/wire"
)

// A managed harness's pod holds at most spec.appServer.maxSessionsPerReplica
// sessions. The count is the store's capacity reservations per pod: a
// session takes its place atomically (store.Reserve) when it is first
// placed on the pod, keeps it while bound there, and gives it back when it
// moves to another pod or is deleted (store.DeleteSession). Two turns racing
// for the last place never both get it, and no turn lists AgentSessions.

// serverKey names an app-server pod to the store.
func serverKey(h *v1alpha1.AgentHarness, pod string) string { return h.Namespace + "/" + pod }

// reserve takes the session's place on the chosen pod. A session already
// bound there keeps its place (one bound before reservations existed takes
// it whatever the count). Every place taken meanwhile is HarnessAtCapacity.
func (e *Engine) reserve(ctx context.Context, sess *v1alpha1.AgentSession, p *prepared, srv Server) *wire.Error {
	h := p.harness
	if h.Spec.External != nil {
		return nil
	}
	key, limit := serverKey(h, srv.Name), int(ptrOr(h.Spec.AppServer.MaxSessionsPerReplica, 32))
	if b := sess.Status.NativeBinding; b != nil && b.Pod == srv.Name && b.HarnessNamespace == h.Namespace {
		limit, p.keepsPlace = math.MaxInt32, true // its place is its own
	}
	err := e.store.Reserve(ctx, key, SessionKey(sess), limit)
	var full *store.CapacityError
	switch {
	case errors.As(err, &full):
		return wire.Errorf(wire.CodeHarnessAtCapacity, wire.ScopeHarness,
			"app-server pod %s of AgentHarness %s/%s holds %d sessions (maxSessionsPerReplica %d)", srv.Name, h.Namespace, h.Name, full.Held, full.Limit)
	case err != nil:
		return wire.Errorf(wire.CodeHarnessUnavailable, wire.ScopeHarness, "reserve a place on app-server pod %s: %v", srv.Name, err)
	}
	p.reserved = key
	return nil
}

// unreserve gives back a place reserve took for a turn that then did not
// bind the session to the pod (it was refused before it started there).
func (e *Engine) unreserve(p *prepared) {
	if p == nil || p.reserved == "" || p.keepsPlace {
		return
	}
	if err := e.store.Unreserve(context.WithoutCancel(e.ctx), p.reserved, p.session); err != nil {
		e.log.Error(err, "give back a place on an app-server pod", "server", p.reserved, "session", p.session)
	}
	p.reserved = ""
}

// settlePlace keeps the place of a session the turn bound to its pod and
// gives back the one of the pod it left; a turn that bound nothing gives
// back the place it took.
func (t *runningTurn) settlePlace() {
	if t.native == nil || t.native.ThreadID() == "" {
		t.e.unreserve(t.p)
		return
	}
	old := t.sess.Status.NativeBinding
	if old == nil || old.HarnessName == "" || (old.HarnessNamespace == t.p.harness.Namespace && old.Pod == t.p.server.Name) {
		return
	}
	key := old.HarnessNamespace + "/" + old.Pod
	if err := t.e.store.Unreserve(context.WithoutCancel(t.e.ctx), key, t.session); err != nil {
		t.e.log.Error(err, "give back the place on the pod the session left", "server", key, "session", t.session)
	}
}
