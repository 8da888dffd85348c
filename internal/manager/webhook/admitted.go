package webhook

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// admittedTTL bounds how long an admitted object stands in for what the
// cache shows: long enough for any watch event to arrive, short enough that
// an admitted write the API server refused afterwards (a resourceVersion
// conflict, another webhook) stops counting soon.
const admittedTTL = 5 * time.Second

// admitted remembers the objects of one kind this webhook server admitted,
// until the manager's informer cache shows the write. The validators read
// the cache — a List from the API server per create took seconds with a
// thousand objects (docs/benchmarks/admission.md) — and a cache is a few
// milliseconds behind: without this, a create right after another (`kubectl
// apply -f dir/`) would be checked against a cache that has not seen the first
// one yet. Together with the validators' decide lock it also closes the race of
// two concurrent creates through one webhook server, which live Lists never
// did. Writes admitted by another replica of the webhook server are seen once
// the cache has them; the controllers re-check what such a race lets through.
// T is a pointer to the kind's type.
type admitted[T object] struct {
	mu      sync.Mutex
	entries map[types.NamespacedName]admittedEntry[T]
	now     func() time.Time
}

// admittedEntry is one admitted write and how to tell the cache has it.
type admittedEntry[T object] struct {
	obj T
	at  time.Time
	// create: the cache has it once it holds an object with obj's UID.
	create bool
	// update: the cache has it once it shows a resourceVersion other than
	// these two: the one the update replaced and the one the cache showed
	// when it was admitted (older, when the cache lagged).
	replaced, seen string
}

func newAdmitted[T object]() *admitted[T] {
	return &admitted[T]{entries: map[types.NamespacedName]admittedEntry[T]{}, now: time.Now}
}

// object is what admitted holds: a pointer to an API object.
type object interface {
	client.Object
	comparable
}

// record remembers obj as admitted; old is the stored object an update
// replaces (nil on create) and cached what the cache shows under obj's name
// (nil when nothing). A create whose name the cache already holds is not
// remembered: the API server refuses it as AlreadyExists after admission,
// and a remembered copy would hide the real object.
func (a *admitted[T]) record(obj, old, cached T) {
	var none T
	e := admittedEntry[T]{obj: obj, at: a.now()}
	switch {
	case old == none && cached != none:
		return
	case old == none:
		e.create = true
	default:
		e.replaced = old.GetResourceVersion()
		if cached != none {
			e.seen = cached.GetResourceVersion()
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.entries[client.ObjectKeyFromObject(obj)] = e
}

// merge returns the cache's objects with the admitted ones it does not show
// yet in their place (or added), and forgets entries the cache has caught up
// with or that expired. The result shares the cache's objects: read only.
func (a *admitted[T]) merge(cached []T) []T {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.entries) == 0 {
		return cached
	}
	now := a.now()
	pending := make(map[types.NamespacedName]T, len(a.entries))
	for key, e := range a.entries {
		if now.Sub(e.at) > admittedTTL {
			delete(a.entries, key)
			continue
		}
		pending[key] = e.obj
	}
	out := make([]T, 0, len(cached)+len(pending))
	for _, c := range cached {
		key := client.ObjectKeyFromObject(c)
		e, ok := a.entries[key]
		switch {
		case !ok:
			out = append(out, c)
		case e.caughtUp(c):
			delete(a.entries, key)
			delete(pending, key)
			out = append(out, c)
		default:
			out = append(out, e.obj)
			delete(pending, key)
		}
	}
	for _, obj := range pending {
		out = append(out, obj)
	}
	return out
}

// observe is the informer's word that the cache now holds obj: an entry it
// shows is forgotten at once, so that a later delete (which the webhook
// never sees) cannot bring the admitted copy back. forget is its word that
// obj was deleted.
func (a *admitted[T]) observe(obj client.Object) {
	a.mu.Lock()
	defer a.mu.Unlock()
	key := client.ObjectKeyFromObject(obj)
	if e, ok := a.entries[key]; ok && e.caughtUp(obj) {
		delete(a.entries, key)
	}
}

func (a *admitted[T]) forget(obj client.Object) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.entries, client.ObjectKeyFromObject(obj))
}

// eventHandler keeps a informed of the cache's changes (observe, forget).
func (a *admitted[T]) eventHandler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { a.withObject(obj, a.observe) },
		UpdateFunc: func(_, obj any) { a.withObject(obj, a.observe) },
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			a.withObject(obj, a.forget)
		},
	}
}

func (a *admitted[T]) withObject(obj any, f func(client.Object)) {
	if o, ok := obj.(client.Object); ok {
		f(o)
	}
}

// caughtUp reports whether the cache's object c shows the admitted write.
func (e admittedEntry[T]) caughtUp(c client.Object) bool {
	if e.create {
		return c.GetUID() == e.obj.GetUID() && c.GetUID() != ""
	}
	rv := c.GetResourceVersion()
	return rv != e.replaced && rv != e.seen
}
