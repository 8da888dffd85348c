// Package testutil holds helpers shared by the envtest suites.
package testutil

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// Calls counts what a reconciler asks of the API through its client: every
// write, and the Gets of the reconciled kind (one per reconcile).
type Calls struct {
	mu     sync.Mutex
	writes []string       // every Create/Update/Patch/Apply/Delete, sub-resources included
	gets   map[string]int // Gets of the counted kind, by namespace/name (name when cluster-scoped)
}

func (c *Calls) write(verb string, what any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes = append(c.writes, fmt.Sprintf("%s %v", verb, what))
}

// Reset forgets everything counted so far.
func (c *Calls) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes, c.gets = nil, map[string]int{}
}

// Writes returns every write so far, e.g. "apply/status …".
func (c *Calls) Writes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.writes...)
}

// Reconciled returns how often an object (namespace/name, or name) was fetched.
func (c *Calls) Reconciled(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gets[name]
}

// withWatch lets the manager's client be wrapped by interceptor.NewClient;
// the reconciler never watches through its client.
type withWatch struct{ client.Client }

func (withWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("watch is not used by the reconciler")
}

// CountingClient wraps c and records in n every write and every Get of an
// object of type T.
func CountingClient[T client.Object](c client.Client, n *Calls) client.Client {
	return interceptor.NewClient(withWatch{c}, interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(T); ok {
				name := key.Name
				if key.Namespace != "" {
					name = key.String()
				}
				n.mu.Lock()
				if n.gets == nil {
					n.gets = map[string]int{}
				}
				n.gets[name]++
				n.mu.Unlock()
			}
			return cl.Get(ctx, key, obj, opts...)
		},
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			n.write("create", client.ObjectKeyFromObject(obj))
			return cl.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			n.write("update", client.ObjectKeyFromObject(obj))
			return cl.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			n.write("patch", client.ObjectKeyFromObject(obj))
			return cl.Patch(ctx, obj, patch, opts...)
		},
		Apply: func(ctx context.Context, cl client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			n.write("apply", obj)
			return cl.Apply(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			n.write("delete", client.ObjectKeyFromObject(obj))
			return cl.Delete(ctx, obj, opts...)
		},
		DeleteAllOf: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.DeleteAllOfOption) error {
			n.write("deleteallof", obj.GetObjectKind())
			return cl.DeleteAllOf(ctx, obj, opts...)
		},
		SubResourceCreate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			n.write("create/"+sub, client.ObjectKeyFromObject(obj))
			return cl.SubResource(sub).Create(ctx, obj, subObj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			n.write("update/"+sub, client.ObjectKeyFromObject(obj))
			return cl.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			n.write("patch/"+sub, client.ObjectKeyFromObject(obj))
			return cl.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
		SubResourceApply: func(ctx context.Context, cl client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			n.write("apply/"+sub, obj)
			return cl.SubResource(sub).Apply(ctx, obj, opts...)
		},
	})
}
