package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
)

// A call — an isolated completion or a settled-turn finalization — runs
// inference with the harness's credential as a turn does, so it is metered
// like one:
//
//   - One call at a time per session. A call waits, in arrival order, for
//     its session's call lease: a store lease on the session's call key
//     (callKey), renewed while the call runs. It is not the session's own
//     lease, so a call still runs beside the session's turn: it touches no
//     state of the session, and a host tool that asks for a completion
//     while its turn holds the session's lease would otherwise wait for
//     that very turn.
//   - Places. A session bound to the harness already holds its places (its
//     namespace's place on a shared harness, and a place on its pod); its
//     call runs in them. Every other place the call needs it takes for
//     itself, held by the call key, with a turn's limits and refusal
//     (HarnessAtCapacity, retryable), and gives it back when it ends. So a
//     namespace's sessions and calls together stay within
//     maxSessionsPerNamespace, and a pod's within maxSessionsPerReplica.
//
// An external harness has no places, for turns or calls; its calls still
// take the call lease.
//
// The call key is a store session of its own. A call that ended deletes it;
// what a dispatcher that stopped mid-call left behind (a lease, places) is
// removed by the garbage collector once the lease expired, like a deleted
// session's state. DeleteSession refuses a held lease, so the collector never
// removes a running call's places.

// callKey is the store key of the session's calls, "<namespace>/<uid>.call".
// It never equals a session's key: a UID has no dot.
func callKey(sess *v1alpha1.AgentSession) string {
	return journal.SessionKey(sess.Namespace, string(sess.UID)+".call")
}

// callPlaces is what one running call holds: its session's call lease and
// the places it took for itself.
type callPlaces struct {
	e      *Engine
	lease  store.Lease
	places []string // reservation keys held by the call key
	stop   func()   // stops renewing the lease; nil until it renews
}

// holdCallPlaces waits for the session's call lease and takes the places a
// call on server srv of h needs. It returns the context the call runs in
// (ctx, also ended when the lease cannot be renewed) and what the call must
// give back when it ends, or the refusal; a refused call holds nothing.
func (e *Engine) holdCallPlaces(ctx context.Context, sess *v1alpha1.AgentSession, h *v1alpha1.AgentHarness, srv Server) (context.Context, *callPlaces, error) {
	lease, err := e.store.Acquire(ctx, callKey(sess), e.opts.Owner, e.opts.LeaseTTL)
	if err != nil {
		return nil, nil, fmt.Errorf("dispatch: wait for the call lease of AgentSession %s/%s: %w", sess.Namespace, sess.Name, err)
	}
	c := &callPlaces{e: e, lease: lease}
	if terr := c.take(ctx, sess, h, srv); terr != nil {
		c.giveBack()
		return nil, nil, terr
	}
	ctx, c.stop = c.renew(ctx)
	return ctx, c, nil
}

// take reserves the places of the call that its session does not hold.
func (c *callPlaces) take(ctx context.Context, sess *v1alpha1.AgentSession, h *v1alpha1.AgentHarness, srv Server) *wire.Error {
	if h.Spec.External != nil {
		return nil
	}
	b := sess.Status.NativeBinding
	if sess.Namespace != h.Namespace && !boundToHarness(b, h) {
		key, limit := tenantPlaces(h, sess.Namespace)
		if terr := tenantPlaceRefused(c.e.store.Reserve(ctx, key, c.lease.Session, limit), h, sess.Namespace); terr != nil {
			return terr
		}
		c.places = append(c.places, key)
	}
	if !boundToPod(b, h, srv) {
		key, limit := podPlaces(h, srv)
		if terr := podPlaceRefused(c.e.store.Reserve(ctx, key, c.lease.Session, limit), h, srv); terr != nil {
			return terr
		}
		c.places = append(c.places, key)
	}
	return nil
}

// renew renews the call lease every third of its TTL until stop is called.
// A renewal that is refused ends the returned context: the call's places
// are no longer its own once the lease has expired.
func (c *callPlaces) renew(ctx context.Context) (context.Context, func()) {
	callCtx, endCall := context.WithCancel(ctx)
	renewCtx, cancel := context.WithCancel(c.e.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(c.e.opts.LeaseTTL / 3)
		defer tick.Stop()
		for {
			select {
			case <-renewCtx.Done():
				return
			case <-tick.C:
			}
			lease, err := c.e.store.Renew(renewCtx, c.lease, c.e.opts.LeaseTTL)
			if err != nil {
				if renewCtx.Err() == nil {
					c.e.log.Error(err, "the call lease was not renewed; ending the call", "session", c.lease.Session)
					endCall()
				}
				return
			}
			c.lease = lease // only this goroutine writes it until stop returns
		}
	}()
	return callCtx, func() {
		cancel()
		<-done
		endCall()
	}
}

// giveBack returns the call's places and its lease, and deletes the call
// key. Whatever cannot be given back now stays held by the call key until
// the garbage collector deletes it.
func (c *callPlaces) giveBack() {
	if c.stop != nil {
		c.stop()
	}
	ctx := context.WithoutCancel(c.e.ctx)
	for _, key := range c.places {
		if err := c.e.store.Unreserve(ctx, key, c.lease.Session); err != nil {
			c.e.log.Error(err, "give back a call's place", "place", key, "call", c.lease.Session)
		}
	}
	c.places = nil
	c.e.release(c.lease)
	// Another call of the session may hold the lease already: the key is
	// then its to delete.
	if err := c.e.store.DeleteSession(c.lease.Session); err != nil && !errors.Is(err, store.ErrSessionBusy) {
		c.e.log.Error(err, "delete a call's key", "call", c.lease.Session)
	}
}

// boundToPod reports whether binding b is to pod srv of h.
func boundToPod(b *v1alpha1.NativeBinding, h *v1alpha1.AgentHarness, srv Server) bool {
	return b != nil && b.Pod == srv.Name && b.HarnessNamespace == h.Namespace
}
