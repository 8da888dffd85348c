// Package testutil holds helpers shared by the envtest suites.
package testutil

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller"
)

// Calls records what a reconciler asks of the API through its client, one
// record per reconcile (controller-runtime's reconcileID): the object it
// reconciled, the resourceVersion of every object it read (Get and List),
// every write, and whether it has returned. A zero-write spec proves with it
// that the reconciler acted — a reconcile that read the current state has
// returned — before it asserts that nothing was written; a settled state is
// one whose latest reconcile read it and wrote nothing, never a quiet period.
//
// Calls learns that a reconcile returned from the record controller-runtime
// logs right after Reconcile returns ("Reconcile successful", "Reconcile
// done, …", "Reconciler error"), so the manager must log through
// Calls.Logger. If a controller-runtime upgrade renames those records, specs
// waiting for a returned reconcile time out naming it; they never pass.
type Calls struct {
	mu         sync.Mutex
	writes     []string
	reconciles map[types.UID]*reconcileRecord
	order      []*reconcileRecord // reconciles that fetched their object, in order of that fetch
}

type reconcileRecord struct {
	key      string            // the reconciled object (namespace/name, or name when cluster-scoped); "" before its Get
	read     map[string]string // the latest resourceVersion read of every object read, by objectRef
	writes   []string
	returned string // how it returned; "" while it runs
	// wrote is the resourceVersion the API server gave the reconciled
	// object for the reconcile's latest apply to it.
	wrote string
}

// Reset forgets everything recorded so far.
func (c *Calls) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes, c.reconciles, c.order = nil, nil, nil
}

// Writes returns every write since the last Reset, e.g. "apply/status RuntimePolicy p1".
func (c *Calls) Writes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.writes...)
}

// Reconcile is what one reconcile of an object did, as its client saw it.
type Reconcile struct {
	// Writes are its writes, in order.
	Writes []string
	// Returned tells how Reconcile returned: "" while it runs, else
	// controller-runtime's record ("Reconcile successful", "error: …").
	Returned string
	read     map[string]string
	wrote    string
}

// Read reports whether the reconcile read obj at obj's resourceVersion or a
// later one (resourceversion.CompareResourceVersion).
func (r Reconcile) Read(obj client.Object) bool {
	rv, ok := r.read[objectRef(obj)]
	return ok && notOlder(rv, obj.GetResourceVersion())
}

// notOlder reports whether resourceVersion a is b or later.
func notOlder(a, b string) bool {
	cmp, err := resourceversion.CompareResourceVersion(a, b)
	return err == nil && cmp >= 0
}

// Reconciles returns the reconciles of the object key (namespace/name, or
// name when cluster-scoped) since the last Reset, in the order they fetched it.
func (c *Calls) Reconciles(key string) []Reconcile {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Reconcile
	for _, r := range c.order {
		if r.key == key {
			read := make(map[string]string, len(r.read))
			for k, rv := range r.read {
				read[k] = rv
			}
			out = append(out, Reconcile{Writes: append([]string(nil), r.writes...), Returned: r.returned, read: read, wrote: r.wrote})
		}
	}
	return out
}

// ReconciledAt returns nil once a reconcile of obj since the last Reset has
// returned that read obj and every one of also at their resourceVersions (as
// the caller read them from the API server) or later ones: the reconciler
// acted on the current state. The error says what is missing.
func (c *Calls) ReconciledAt(obj client.Object, also ...client.Object) error {
	key := Key(obj)
	rs := c.Reconciles(key)
	for _, r := range rs {
		if r.Returned != "" && r.Read(obj) && readAll(r, also) {
			return nil
		}
	}
	return fmt.Errorf("no returned reconcile of %s read it at resourceVersion %s or later%s (%d reconciles since the last Reset: %s)",
		key, obj.GetResourceVersion(), describe(also), len(rs), summary(rs))
}

// Settled returns nil once the latest reconcile of obj since the last Reset
// read obj at its current resourceVersion, returned, and wrote nothing: the
// reconciler's fixpoint. For a reconciler that does not reconcile the echo
// of its own write, a latest reconcile that returned and whose apply gave
// obj its current resourceVersion is the fixpoint too. The error says what
// is missing.
func (c *Calls) Settled(obj client.Object) error {
	key := Key(obj)
	rs := c.Reconciles(key)
	if len(rs) == 0 {
		return fmt.Errorf("%s was not reconciled since the last Reset", key)
	}
	last := rs[len(rs)-1]
	switch {
	case last.Returned == "":
		return fmt.Errorf("the latest reconcile of %s has not returned", key)
	case last.wrote != "" && last.wrote == obj.GetResourceVersion():
		return nil
	case !last.Read(obj):
		return fmt.Errorf("the latest reconcile of %s read it before its resourceVersion %s", key, obj.GetResourceVersion())
	case len(last.Writes) > 0:
		return fmt.Errorf("the latest reconcile of %s wrote %v", key, last.Writes)
	}
	return nil
}

// Key is the key Calls records an object under: namespace/name, or name
// when cluster-scoped.
func Key(obj client.Object) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}

func readAll(r Reconcile, objs []client.Object) bool {
	for _, o := range objs {
		if !r.Read(o) {
			return false
		}
	}
	return true
}

func describe(objs []client.Object) string {
	var b strings.Builder
	for _, o := range objs {
		fmt.Fprintf(&b, ", and %s at %s or later", objectRef(o), o.GetResourceVersion())
	}
	return b.String()
}

func summary(rs []Reconcile) string {
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		state := r.Returned
		if state == "" {
			state = "running"
		}
		parts = append(parts, fmt.Sprintf("[%s, %d writes]", state, len(r.Writes)))
	}
	return strings.Join(parts, " ")
}

// objectRef names an object by its Go type (so that kinds of different
// groups stay apart) and key.
func objectRef(obj client.Object) string {
	t := reflect.TypeOf(obj)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath() + "." + t.Name() + " " + Key(obj)
}

// saw records that r read obj, keeping the latest resourceVersion.
func (r *reconcileRecord) saw(obj client.Object) {
	ref, rv := objectRef(obj), obj.GetResourceVersion()
	if prev, ok := r.read[ref]; !ok || notOlder(rv, prev) {
		r.read[ref] = rv
	}
}

// record returns the record of the reconcile running in ctx, or nil outside one.
func (c *Calls) record(ctx context.Context) *reconcileRecord {
	id := controller.ReconcileIDFromContext(ctx)
	if id == "" {
		return nil
	}
	return c.recordOf(id)
}

func (c *Calls) recordOf(id types.UID) *reconcileRecord {
	if c.reconciles == nil {
		c.reconciles = map[types.UID]*reconcileRecord{}
	}
	r := c.reconciles[id]
	if r == nil {
		r = &reconcileRecord{read: map[string]string{}}
		c.reconciles[id] = r
	}
	return r
}

// fetched records a Get; reconciled is true for the reconciled kind.
func (c *Calls) fetched(ctx context.Context, obj client.Object, reconciled bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.record(ctx)
	if r == nil {
		return
	}
	r.saw(obj)
	if reconciled && r.key == "" {
		r.key = Key(obj)
		c.order = append(c.order, r)
	}
}

// listed records the items of a List.
func (c *Calls) listed(ctx context.Context, list client.ObjectList) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.record(ctx)
	if r == nil {
		return
	}
	_ = meta.EachListItem(list, func(o runtime.Object) error {
		if obj, ok := o.(client.Object); ok {
			r.saw(obj)
		}
		return nil
	})
}

func (c *Calls) write(ctx context.Context, verb, what string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := verb + " " + what
	c.writes = append(c.writes, w)
	if r := c.record(ctx); r != nil {
		r.writes = append(r.writes, w)
	}
}

// appliedSelf records the resourceVersion an apply gave the reconciled object.
func (c *Calls) appliedSelf(ctx context.Context, ac runtime.ApplyConfiguration) {
	applied, ok := ac.(interface {
		GetNamespace() string
		GetName() string
		GetResourceVersion() string
	})
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	key := applied.GetName()
	if applied.GetNamespace() != "" {
		key = applied.GetNamespace() + "/" + key
	}
	if r := c.record(ctx); r != nil && r.key == key {
		r.wrote = applied.GetResourceVersion()
	}
}

func (c *Calls) returned(id types.UID, how string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.recordOf(id)
	if r.returned == "" {
		r.returned = how
	}
}

// objectName is "Kind namespace/name" of a typed object.
func objectName(obj client.Object) string {
	t := reflect.TypeOf(obj)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name() + " " + Key(obj)
}

// applyName is "Kind namespace/name" of an apply configuration (typed, or
// built from an Unstructured).
func applyName(ac runtime.ApplyConfiguration) string {
	switch a := ac.(type) {
	case interface {
		GetKind() *string
		GetNamespace() *string
		GetName() *string
	}:
		deref := func(s *string) string {
			if s == nil {
				return ""
			}
			return *s
		}
		if ns := deref(a.GetNamespace()); ns != "" {
			return deref(a.GetKind()) + " " + ns + "/" + deref(a.GetName())
		}
		return deref(a.GetKind()) + " " + deref(a.GetName())
	case interface {
		GetKind() string
		GetNamespace() string
		GetName() string
	}:
		if a.GetNamespace() != "" {
			return a.GetKind() + " " + a.GetNamespace() + "/" + a.GetName()
		}
		return a.GetKind() + " " + a.GetName()
	}
	return fmt.Sprintf("%T", ac)
}

// withWatch lets the manager's client be wrapped by interceptor.NewClient;
// the reconciler never watches through its client.
type withWatch struct{ client.Client }

func (withWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("watch is not used by the reconciler")
}

// CountingClient wraps c and records in n, per reconcile, every read and
// write; a Get of an object of type T names the reconciled object.
func CountingClient[T client.Object](c client.Client, n *Calls) client.Client {
	return interceptor.NewClient(withWatch{c}, interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			err := cl.Get(ctx, key, obj, opts...)
			if err == nil {
				_, reconciled := obj.(T)
				n.fetched(ctx, obj, reconciled)
			}
			return err
		},
		List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			err := cl.List(ctx, list, opts...)
			if err == nil {
				n.listed(ctx, list)
			}
			return err
		},
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			n.write(ctx, "create", objectName(obj))
			return cl.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			n.write(ctx, "update", objectName(obj))
			return cl.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			n.write(ctx, "patch", objectName(obj))
			return cl.Patch(ctx, obj, patch, opts...)
		},
		Apply: func(ctx context.Context, cl client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			n.write(ctx, "apply", applyName(obj))
			return cl.Apply(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			n.write(ctx, "delete", objectName(obj))
			return cl.Delete(ctx, obj, opts...)
		},
		DeleteAllOf: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.DeleteAllOfOption) error {
			n.write(ctx, "deleteallof", objectName(obj))
			return cl.DeleteAllOf(ctx, obj, opts...)
		},
		SubResourceCreate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			n.write(ctx, "create/"+sub, objectName(obj))
			return cl.SubResource(sub).Create(ctx, obj, subObj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			n.write(ctx, "update/"+sub, objectName(obj))
			return cl.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			n.write(ctx, "patch/"+sub, objectName(obj))
			return cl.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
		SubResourceApply: func(ctx context.Context, cl client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			n.write(ctx, "apply/"+sub, applyName(obj))
			err := cl.SubResource(sub).Apply(ctx, obj, opts...)
			if err == nil {
				n.appliedSelf(ctx, obj)
			}
			return err
		},
	})
}

// Logger returns a logger that logs through l and tells c when a reconcile
// returns. Make it the manager's logger (logf.SetLogger before the manager
// starts); the other records pass to l unchanged.
func (c *Calls) Logger(l logr.Logger) logr.Logger {
	return logr.New(reconcileSink{next: l.GetSink(), calls: c})
}

// reconcileSink forwards to next and reports controller-runtime's record of
// a returned reconcile (logged at V(5), with the reconcileID) to calls.
type reconcileSink struct {
	next  logr.LogSink
	calls *Calls
	id    types.UID
}

func (s reconcileSink) Init(info logr.RuntimeInfo) { s.next.Init(info) }

// Enabled is true at every level: the records of a returned reconcile are
// V(5); next decides what it prints.
func (s reconcileSink) Enabled(int) bool { return true }

func (s reconcileSink) Info(level int, msg string, kv ...any) {
	if s.id != "" && (msg == "Reconcile successful" || strings.HasPrefix(msg, "Reconcile done")) {
		s.calls.returned(s.id, msg)
	}
	if s.next.Enabled(level) {
		s.next.Info(level, msg, kv...)
	}
}

func (s reconcileSink) Error(err error, msg string, kv ...any) {
	if s.id != "" && msg == "Reconciler error" {
		s.calls.returned(s.id, "error: "+err.Error())
	}
	s.next.Error(err, msg, kv...)
}

func (s reconcileSink) WithValues(kv ...any) logr.LogSink {
	for i := 0; i+1 < len(kv); i += 2 {
		if k, _ := kv[i].(string); k == "reconcileID" {
			if id, ok := kv[i+1].(types.UID); ok {
				s.id = id
			}
		}
	}
	s.next = s.next.WithValues(kv...)
	return s
}

func (s reconcileSink) WithName(name string) logr.LogSink {
	s.next = s.next.WithName(name)
	return s
}

func (s reconcileSink) WithCallDepth(depth int) logr.LogSink {
	if cd, ok := s.next.(logr.CallDepthLogSink); ok {
		s.next = cd.WithCallDepth(depth)
	}
	return s
}
