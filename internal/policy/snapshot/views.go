package snapshot

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/policy/selection"
)

// View is the part of a selection snapshot that depends only on a session's
// namespace: the harnesses visible to it and the policies selecting it, as
// selection.SnapshotFor derives them from the namespace's labels. Its
// objects are the reader's own (an informer cache's, not copies): nothing
// may change them.
type View struct {
	Namespace string
	Harnesses []*v1alpha1.AgentHarness
	Policies  []*v1alpha1.RuntimePolicy
}

// Snapshot is the view with one session: the snapshot selection.Select
// takes. The slices are shared with every other turn of the namespace.
func (v *View) Snapshot(session *v1alpha1.AgentSession) selection.Snapshot {
	return selection.Snapshot{Harnesses: v.Harnesses, Policies: v.Policies, Session: session}
}

// Views keeps one View per namespace between turns, so that a turn does not
// list and filter every AgentHarness and RuntimePolicy of the cluster. A
// view lives until an event of the reader's informers invalidates it
// (Invalidate, EventHandler): any AgentHarness or RuntimePolicy event drops
// every view, a Namespace event that namespace's. A view read before an
// event was delivered is never kept or used after it.
//
// The reader must be the informer cache whose events reach Invalidate:
// with any other reader a view would never learn of a change.
type Views struct {
	reader client.Reader
	builds singleflight.Group
	// reads counts the views read (Reads): a figure that grows with the
	// turns rather than with the events says the views do not hold.
	reads atomic.Uint64

	mu sync.Mutex
	// gen counts the events delivered so far.
	gen uint64
	// allFrom is the generation of the last AgentHarness or RuntimePolicy
	// event: a view read before it is stale.
	allFrom uint64
	// byNamespace holds each namespace's view, or, after a Namespace event,
	// the event's generation with no view.
	byNamespace map[string]viewEntry
}

// viewEntry is a namespace's view and the generation it was read at, or
// (view nil) the generation of the namespace's last event.
type viewEntry struct {
	from uint64
	view *View
}

// Watch returns Views over the informer cache c, each view dropped by c's
// own AgentHarness, RuntimePolicy and Namespace events. Call it before c
// starts, so that no event is missed.
func Watch(ctx context.Context, c cache.Cache) (*Views, error) {
	views := NewViews(c)
	for _, obj := range []client.Object{&v1alpha1.AgentHarness{}, &v1alpha1.RuntimePolicy{}, &corev1.Namespace{}} {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return nil, fmt.Errorf("the informer of %T for the selection views: %w", obj, err)
		}
		if _, err := inf.AddEventHandler(views.EventHandler()); err != nil {
			return nil, fmt.Errorf("watch %T for the selection views: %w", obj, err)
		}
	}
	return views, nil
}

// NewViews returns Views that read through r (see Views); Watch is how the
// dispatcher makes them.
func NewViews(r client.Reader) *Views {
	return &Views{reader: r, byNamespace: map[string]viewEntry{}}
}

// For returns the selection snapshot of session: its namespace's view, read
// once per change, with the session. Errors are those of For (the
// function); they are not kept, so the next turn reads again.
func (v *Views) For(ctx context.Context, session *v1alpha1.AgentSession) (selection.Snapshot, error) {
	view, err := v.View(ctx, session.Namespace)
	if err != nil {
		return selection.Snapshot{}, err
	}
	return view.Snapshot(session), nil
}

// View returns the namespace's view, reading it when no valid one is kept.
func (v *Views) View(ctx context.Context, namespace string) (*View, error) {
	v.mu.Lock()
	e, ok := v.byNamespace[namespace]
	gen := v.gen
	v.mu.Unlock()
	if ok && e.view != nil {
		return e.view, nil
	}
	// Turns of one namespace that find no view at the same generation share
	// one read; a turn that comes after another event reads anew. The read
	// does not end with the turn that started it (the others wait for it);
	// each turn waits only as long as its own context.
	done := v.builds.DoChan(namespace+"\x00"+strconv.FormatUint(gen, 10), func() (any, error) {
		v.reads.Add(1)
		view, err := readView(context.WithoutCancel(ctx), v.reader, namespace)
		if err != nil {
			return nil, err
		}
		v.keep(namespace, gen, view)
		return view, nil
	})
	select {
	case res := <-done:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(*View), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("read the selection view of namespace %s: %w", namespace, context.Cause(ctx))
	}
}

// Reads is the number of views read so far (each lists the cluster's
// AgentHarnesses and RuntimePolicies from the reader), failed reads
// included; the dispatcher exports it as a metric.
func (v *Views) Reads() uint64 { return v.reads.Load() }

// keep stores a view read at generation gen unless an event that concerns
// its namespace was delivered since, or a newer view is kept.
func (v *Views) keep(namespace string, gen uint64, view *View) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if gen < v.allFrom {
		return
	}
	if e, ok := v.byNamespace[namespace]; ok && e.from > gen {
		return
	}
	v.byNamespace[namespace] = viewEntry{from: gen, view: view}
}

// InvalidateAll drops every view: an AgentHarness or RuntimePolicy was
// added, changed or deleted.
func (v *Views) InvalidateAll() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.gen++
	v.allFrom = v.gen
	clear(v.byNamespace)
}

// InvalidateNamespace drops the view of one namespace: it was added,
// changed (its labels) or deleted.
func (v *Views) InvalidateNamespace(name string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.gen++
	v.byNamespace[name] = viewEntry{from: v.gen}
}

// Invalidate drops what an informer event of obj makes stale: a Namespace
// its own view, anything else (an AgentHarness, a RuntimePolicy, an
// object of a kind it does not know) every view.
func (v *Views) Invalidate(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if ns, ok := obj.(*corev1.Namespace); ok {
		v.InvalidateNamespace(ns.Name)
		return
	}
	v.InvalidateAll()
}

// EventHandler invalidates on every add, update and delete; register it on
// the AgentHarness, RuntimePolicy and Namespace informers of the reader.
func (v *Views) EventHandler() toolscache.ResourceEventHandlerFuncs {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { v.Invalidate(obj) },
		UpdateFunc: func(_, obj any) { v.Invalidate(obj) },
		DeleteFunc: func(obj any) { v.Invalidate(obj) },
	}
}

// readView reads one namespace's view through r without copying the
// objects (client.UnsafeDisableDeepCopy: they are only read).
func readView(ctx context.Context, r client.Reader, namespace string) (*View, error) {
	var ns corev1.Namespace
	if err := r.Get(ctx, client.ObjectKey{Name: namespace}, &ns, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("read Namespace %s: %w", namespace, err)
	}
	var harnesses v1alpha1.AgentHarnessList
	if err := r.List(ctx, &harnesses, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list AgentHarnesses: %w", err)
	}
	var policies v1alpha1.RuntimePolicyList
	if err := r.List(ctx, &policies, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list RuntimePolicies: %w", err)
	}
	snap, err := selection.SnapshotFor(Pointers(harnesses.Items), Pointers(policies.Items), ns.Name, ns.Labels, nil)
	if err != nil {
		return nil, fmt.Errorf("resolve the policies of namespace %s: %w", ns.Name, err)
	}
	// Clipped, so that a caller appending to a turn's snapshot never writes
	// into the slices other turns share.
	return &View{Namespace: namespace, Harnesses: slices.Clip(snap.Harnesses), Policies: slices.Clip(snap.Policies)}, nil
}
