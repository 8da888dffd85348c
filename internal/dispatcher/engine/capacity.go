package engine

import (
	"context"
	"errors"
	"math"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// A managed harness's pod holds at most spec.appServer.maxSessionsPerReplica
// sessions. The count is the store's capacity reservations per pod: a
// session takes its place atomically (store.Reserve) when it is first
// placed on the pod, keeps it while bound there, and gives it back when it
// moves to another pod or is deleted (store.DeleteSession). Two turns racing
// for the last place never both get it, and no turn lists AgentSessions.

// A shared harness's sessions are also bounded per consuming namespace
// (spec.appServer.maxSessionsPerNamespace, for namespaces other than the
// harness's own): the same store reservations, on a key per harness and
// namespace (tenantKey) instead of per pod. A session takes that place with
// its first pod place on the harness, keeps it while bound to any of the
// harness's pods, and gives it back when it moves to another harness or is
// deleted.

// Calls (isolated completions and finalizations) are counted in the same
// places while they run (callplaces.go).

// serverKey names an app-server pod to the store.
func serverKey(h *v1alpha1.AgentHarness, pod string) string { return h.Namespace + "/" + pod }

// tenantKey names the places of namespace's sessions on the harness
// harnessNS/harness. It has four segments, so it never equals a serverKey.
func tenantKey(harnessNS, harness, namespace string) string {
	return harnessNS + "/" + harness + "/namespace/" + namespace
}

// reserve takes the session's place on the chosen pod. A session already
// bound there keeps its place (one bound before reservations existed takes
// it whatever the count). Every place taken meanwhile is HarnessAtCapacity.
func (e *Engine) reserve(ctx context.Context, sess *v1alpha1.AgentSession, p *prepared, srv Server) *wire.Error {
	h := p.harness
	if h.Spec.External != nil {
		return nil
	}
	key, limit := podPlaces(h, srv)
	if b := sess.Status.NativeBinding; b != nil && b.Pod == srv.Name && b.HarnessNamespace == h.Namespace {
		limit, p.keepsPlace = math.MaxInt32, true // its place is its own
	}
	if terr := e.reserveTenant(ctx, sess, p); terr != nil {
		return terr
	}
	if terr := podPlaceRefused(e.store.Reserve(ctx, key, SessionKey(sess), limit), h, srv); terr != nil {
		e.unreserveTenant(p)
		return terr
	}
	p.reserved = key
	return nil
}

// reserveTenant takes the session's place among its namespace's sessions on
// a shared harness. A session already bound to the harness keeps its place
// (one bound before these places existed takes it whatever the count).
func (e *Engine) reserveTenant(ctx context.Context, sess *v1alpha1.AgentSession, p *prepared) *wire.Error {
	h := p.harness
	if sess.Namespace == h.Namespace {
		return nil
	}
	key, limit := tenantPlaces(h, sess.Namespace)
	bound := boundToHarness(sess.Status.NativeBinding, h)
	if bound {
		limit = math.MaxInt32
	}
	if terr := tenantPlaceRefused(e.store.Reserve(ctx, key, SessionKey(sess), limit), h, sess.Namespace); terr != nil {
		return terr
	}
	if !bound {
		p.tenant = key
	}
	return nil
}

// podPlaces is the reservation key of the places on pod srv of h, and how
// many it has.
func podPlaces(h *v1alpha1.AgentHarness, srv Server) (string, int) {
	return serverKey(h, srv.Name), int(ptrOr(h.Spec.AppServer.MaxSessionsPerReplica, 32))
}

// tenantPlaces is the reservation key of namespace's places on the shared
// harness h, and how many it has.
func tenantPlaces(h *v1alpha1.AgentHarness, namespace string) (string, int) {
	return tenantKey(h.Namespace, h.Name, namespace), int(ptrOr(h.Spec.AppServer.MaxSessionsPerNamespace, 16))
}

// boundToHarness reports whether binding b is to one of h's servers.
func boundToHarness(b *v1alpha1.NativeBinding, h *v1alpha1.AgentHarness) bool {
	return b != nil && b.HarnessNamespace == h.Namespace && b.HarnessName == h.Name
}

// podPlaceRefused is the refusal of a turn or call whose Reserve of a place
// on pod srv failed: HarnessAtCapacity when the pod is full. nil for nil.
func podPlaceRefused(err error, h *v1alpha1.AgentHarness, srv Server) *wire.Error {
	var full *store.CapacityError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &full):
		return wire.Errorf(wire.CodeHarnessAtCapacity, wire.ScopeHarness,
			"app-server pod %s of AgentHarness %s/%s holds %d sessions and calls (maxSessionsPerReplica %d)", srv.Name, h.Namespace, h.Name, full.Held, full.Limit)
	}
	return wire.Errorf(wire.CodeHarnessUnavailable, wire.ScopeHarness, "reserve a place on app-server pod %s: %v", srv.Name, err)
}

// tenantPlaceRefused is the refusal of a turn or call whose Reserve of one
// of namespace's places on h failed: HarnessAtCapacity when they are all
// taken. nil for nil.
func tenantPlaceRefused(err error, h *v1alpha1.AgentHarness, namespace string) *wire.Error {
	var full *store.CapacityError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &full):
		return wire.Errorf(wire.CodeHarnessAtCapacity, wire.ScopeHarness,
			"AgentHarness %s/%s holds %d sessions and calls of namespace %s (maxSessionsPerNamespace %d)", h.Namespace, h.Name, full.Held, namespace, full.Limit)
	}
	return wire.Errorf(wire.CodeHarnessUnavailable, wire.ScopeHarness, "reserve a place for namespace %s on AgentHarness %s/%s: %v", namespace, h.Namespace, h.Name, err)
}

// unreserveTenant gives back a namespace place this turn took.
func (e *Engine) unreserveTenant(p *prepared) {
	if p.tenant == "" {
		return
	}
	if err := e.store.Unreserve(context.WithoutCancel(e.ctx), p.tenant, p.session); err != nil {
		e.log.Error(err, "give back a namespace's place on a harness", "place", p.tenant, "session", p.session)
	}
	p.tenant = ""
}

// unreserve gives back the places reserve took for a turn that then did not
// bind the session to the pod (it was refused before it started there).
func (e *Engine) unreserve(p *prepared) {
	if p == nil {
		return
	}
	e.unreserveTenant(p)
	if p.reserved == "" || p.keepsPlace {
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
	// Another pod of the same harness: the namespace place stays.
	sameHarness := old.HarnessNamespace == t.p.harness.Namespace && old.HarnessName == t.p.harness.Name
	t.e.leavePlaces(t.session, t.sess.Namespace, old, sameHarness)
}

// leavePlaces gives back the places a session held through binding b: its
// place on b's pod and, unless keepTenant, its namespace's place on b's
// harness. A binding written before bindings named their harness holds none.
func (e *Engine) leavePlaces(session, namespace string, b *v1alpha1.NativeBinding, keepTenant bool) {
	if b.HarnessName == "" {
		return
	}
	key := b.HarnessNamespace + "/" + b.Pod
	if err := e.store.Unreserve(context.WithoutCancel(e.ctx), key, session); err != nil {
		e.log.Error(err, "give back the place on the pod the session left", "server", key, "session", session)
	}
	if keepTenant {
		return
	}
	tenant := tenantKey(b.HarnessNamespace, b.HarnessName, namespace)
	if err := e.store.Unreserve(context.WithoutCancel(e.ctx), tenant, session); err != nil {
		e.log.Error(err, "give back the namespace place on the harness the session left", "place", tenant, "session", session)
	}
}
