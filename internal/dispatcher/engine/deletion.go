package engine

import (
	"context"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// What the AgentSession finalizer (internal/dispatcher/sessionfinalizer)
// needs of the engine for a deleted session. The finalizer holds them
// through an interface of its own, so the engine never imports it.

// InterruptSession interrupts the session's running turn, if any: it ends
// aborted and recorded as usual.
func (e *Engine) InterruptSession(session string) { e.interruptSession(session) }

// AcquireLease takes the session's lease as a turn does (this engine's
// owner and lease TTL): it waits, in arrival order, for the turns ahead.
func (e *Engine) AcquireLease(ctx context.Context, session string) (store.Lease, error) {
	return e.store.Acquire(ctx, session, e.opts.Owner, e.opts.LeaseTTL)
}

// ReleaseLease gives a lease taken with AcquireLease back.
func (e *Engine) ReleaseLease(lease store.Lease) { e.release(lease) }

// ForgetSession drops what the engine remembers of the deleted session s
// and removes its native state from the app-servers: its threads archived
// and its working directory removed through the app-server's own API.
func (e *Engine) ForgetSession(ctx context.Context, s *v1alpha1.AgentSession) error {
	e.forget(s.UID)
	return e.forgetNative(ctx, s)
}
