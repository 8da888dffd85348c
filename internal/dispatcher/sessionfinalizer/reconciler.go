// Package sessionfinalizer owns the dispatcher's AgentSession finalizer
// v1alpha1.JournalFinalizer: a session is not gone from the API before its
// journal runs, transcript mirror and native state on the app-servers are.
// It runs in the dispatcher, next to the turn engine that owns the journal;
// it reaches the engine through the Engine interface, so the engine never
// imports it (cmd/dispatcher wires the two).
package sessionfinalizer

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
)

// busyRequeue is how soon a deletion is retried while a turn of the session
// is still running.
const busyRequeue = time.Second

// finalizerLockWait bounds how long a reconcile waits for a running turn of a
// deleted session to end after interrupting it.
const finalizerLockWait = 10 * time.Second

// nativeCleanupGrace is how long after its deletion a session's finalizer
// keeps retrying the cleanup of its native state on app-servers that cannot
// be reached; after it the finalizer goes and the GarbageCollector finishes
// the cleanup once the servers are back (a deletion never hangs on a server
// that is gone).
const nativeCleanupGrace = 2 * time.Minute

// finalizerConcurrency is how many sessions the finalizer reconciles at
// once. Each add is a patch through the admission webhooks; one at a time,
// the finalizers of 1,000 new sessions arrived 15 s after the last was
// Ready (docs/benchmarks/operator-scale.md).
const finalizerConcurrency = 8

// Engine is what the finalizer needs of the turn engine
// (*engine.Engine implements it).
type Engine interface {
	// InterruptSession interrupts the session's running turn, if any.
	InterruptSession(session string)
	// AcquireLease takes the session's lease as a turn does, waiting for
	// the turns ahead; ReleaseLease gives it back.
	AcquireLease(ctx context.Context, session string) (store.Lease, error)
	ReleaseLease(lease store.Lease)
	// ForgetSession drops the engine's memory of the deleted session and
	// removes its native state from the app-servers.
	ForgetSession(ctx context.Context, s *v1alpha1.AgentSession) error
}

// Reconciler adds the finalizer to every AgentSession (a JSON merge patch
// of metadata.finalizers, never an update) and, once a session is being
// deleted, deletes its journal runs and transcript mirror
// (store.DeleteSession) and, with Engine set, its native state on the
// app-servers (Engine.ForgetSession), then removes the finalizer. An
// app-server that cannot be reached holds the finalizer back for
// nativeCleanupGrace at most; the engine's GarbageCollector finishes the
// cleanup.
//
// A session deleted while one of its turns runs: with Engine set, the turn is
// interrupted (terminal aborted, recorded as usual) and the reconcile waits,
// by taking the session's lease, for it to end — a turn that waited for the
// lease sees the deletion and is refused; without Engine, or while the
// journal still shows the run running (ErrSessionBusy), the reconcile is
// requeued after busyRequeue. The finalizer is never removed while the
// journal holds anything of the session.
type Reconciler struct {
	// Client reads AgentSessions (a cache is fine) and patches their
	// finalizers.
	Client client.Client
	// Store is the dispatcher's store (the Engine's).
	Store store.Store
	// Engine, when set, is interrupted for a turn of a deleted session and
	// removes the session's native state.
	Engine Engine
}

// The finalizer's rights, generated into the dispatcher's ClusterRole
// (`make manifests`): it adds and removes the journal finalizer.
// +kubebuilder:rbac:groups=harness.openclaw.dev,resources=agentsessions,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=harness.openclaw.dev,resources=agentsessions/finalizers,verbs=update

// SetupWithManager registers the reconciler for AgentSessions.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.Store == nil {
		return errors.New("set up the dispatcher finalizer: Client and Store are required")
	}
	if err := ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.AgentSession{}).
		Named("dispatcher-finalizer").
		WithOptions(controller.Options{MaxConcurrentReconciles: finalizerConcurrency}).
		Complete(r); err != nil {
		return fmt.Errorf("set up the dispatcher finalizer: %w", err)
	}
	return nil
}

// Reconcile adds the finalizer to a live session and finalizes a deleted one.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	s := &v1alpha1.AgentSession{}
	if err := r.Client.Get(ctx, req.NamespacedName, s); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !s.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	return ctrl.Result{}, r.ensureFinalizer(ctx, s)
}

// ensureFinalizer adds the finalizer to a live session.
func (r *Reconciler) ensureFinalizer(ctx context.Context, s *v1alpha1.AgentSession) error {
	if controllerutil.ContainsFinalizer(s, v1alpha1.JournalFinalizer) {
		return nil
	}
	base := s.DeepCopy()
	controllerutil.AddFinalizer(s, v1alpha1.JournalFinalizer)
	if err := r.Client.Patch(ctx, s, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		// A conflict means the cache was behind a write (the manager's
		// status): the watch event of that write reconciles the session
		// again, so a retry through the rate limiter would only wait.
		if apierrors.IsConflict(err) {
			return nil
		}
		return client.IgnoreNotFound(err)
	}
	return nil
}

// reconcileDelete cleans up after a deleted session, then removes the
// finalizer.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *v1alpha1.AgentSession) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(s, v1alpha1.JournalFinalizer) {
		return ctrl.Result{}, nil
	}
	if err := r.CleanUp(ctx, s); err != nil {
		if errors.Is(err, store.ErrSessionBusy) {
			return ctrl.Result{RequeueAfter: busyRequeue}, nil
		}
		return ctrl.Result{}, fmt.Errorf("finalize AgentSession %s/%s (uid %s): %w", s.Namespace, s.Name, s.UID, err)
	}
	base := s.DeepCopy()
	controllerutil.RemoveFinalizer(s, v1alpha1.JournalFinalizer)
	if err := r.Client.Patch(ctx, s, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{}, nil
}

// CleanUp deletes the deleted session s's runs and transcript. With an
// Engine it interrupts a running turn and waits for it to end — it takes
// the session's lease after it, which a turn that started meanwhile also
// waited for, and gives it back (the store deletes a session only while
// nobody holds its lease; a turn that takes it next finds the session being
// deleted and starts nothing) — and then removes the session's native state
// from the app-servers. A lease the store cannot grant for another reason
// than a turn holding it (a full disk) does not stop the deletion:
// DeleteSession checks for a running turn and a held lease itself.
func (r *Reconciler) CleanUp(ctx context.Context, s *v1alpha1.AgentSession) error {
	session, uid := journal.SessionKey(s.Namespace, string(s.UID)), s.UID
	if r.Engine == nil {
		return r.Store.DeleteSession(session)
	}
	log := ctrl.LoggerFrom(ctx)
	r.Engine.InterruptSession(session)
	lctx, cancel := context.WithTimeout(ctx, finalizerLockWait)
	defer cancel()
	lease, err := r.Engine.AcquireLease(lctx, session)
	switch {
	case err == nil:
		r.Engine.ReleaseLease(lease)
	case lctx.Err() != nil:
		// The turn has not ended yet: try again later.
		return fmt.Errorf("wait for the running turn: %w: %w", err, store.ErrSessionBusy)
	default:
		// The store could not record the grant — its disk is full, say.
		// Deleting is what frees that disk, and DeleteSession itself
		// refuses while a turn runs or holds the lease.
		log.Error(err, "the lease of a deleted session could not be taken; deleting its journal all the same", "session", session)
	}
	if err := r.Store.DeleteSession(session); err != nil {
		return err
	}
	if err := r.Engine.ForgetSession(ctx, s); err != nil {
		if time.Since(s.DeletionTimestamp.Time) < nativeCleanupGrace {
			return fmt.Errorf("remove the native threads and working directory: %w", err)
		}
		log.Error(err, "the native state of a deleted session was not removed; garbage collection removes it once its app-server is back",
			"session", s.Namespace+"/"+s.Name, "uid", uid)
	}
	return nil
}
