package snapshot

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// countingReader counts the Lists that reach the reader, and runs
// duringList (once) inside the next one: an event delivered while a view is
// being read.
type countingReader struct {
	client.Reader
	lists      atomic.Int32
	duringList func()
}

func (r *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	r.lists.Add(1)
	err := r.Reader.List(ctx, list, opts...)
	if f := r.duringList; f != nil {
		r.duringList = nil
		f()
	}
	return err
}

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func ns(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// allNamespaces is a harness every namespace that consents may use.
func allNamespaces(namespace, name string) *v1alpha1.AgentHarness {
	return &v1alpha1.AgentHarness{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1alpha1.AgentHarnessSpec{AllowedNamespaces: &v1alpha1.AllowedNamespaces{From: v1alpha1.NamespacesFromAll}}}
}

func sameNamespace(namespace, name string) *v1alpha1.AgentHarness {
	return &v1alpha1.AgentHarness{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
}

func selecting(name string, labels map[string]string) *v1alpha1.RuntimePolicy {
	return &v1alpha1.RuntimePolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.RuntimePolicySpec{NamespaceSelector: &metav1.LabelSelector{MatchLabels: labels}}}
}

func names[T client.Object](objs []T) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.GetNamespace()+"/"+o.GetName())
	}
	slices.Sort(out)
	return out
}

// TestViewsAreKeptUntilAnEventOfTheirKinds: a namespace's view is read once
// and reused by every turn, until an add, update or delete of an
// AgentHarness, a RuntimePolicy or that Namespace was delivered; then the
// next turn reads the change. A Namespace event of another namespace keeps
// the view.
func TestViewsAreKeptUntilAnEventOfTheirKinds(t *testing.T) {
	accepting := map[string]string{v1alpha1.AcceptHarnessesLabel("shared"): v1alpha1.AcceptHarnessesLabelValue}
	type change struct {
		// apply changes the cluster and returns the object whose event the
		// informer delivers (wrapped as a delete's final state when tombstone).
		apply     func(ctx context.Context, c client.Client) (client.Object, error)
		event     string // add, update, delete
		tombstone bool
	}
	cases := []struct {
		name          string
		change        change
		wantRead      bool
		wantHarnesses []string
		wantPolicies  []string
		wantErr       string
	}{
		{
			name: "AgentHarness added",
			change: change{event: "add", apply: func(ctx context.Context, c client.Client) (client.Object, error) {
				h := sameNamespace("team", "new")
				return h, c.Create(ctx, h)
			}},
			wantRead: true, wantHarnesses: []string{"shared/everywhere", "team/codex", "team/new"}, wantPolicies: []string{"/team-policy"},
		},
		{
			name: "AgentHarness updated: no longer admits the namespace",
			change: change{event: "update", apply: func(ctx context.Context, c client.Client) (client.Object, error) {
				h := &v1alpha1.AgentHarness{}
				if err := c.Get(ctx, client.ObjectKey{Namespace: "shared", Name: "everywhere"}, h); err != nil {
					return nil, err
				}
				h.Spec.AllowedNamespaces = nil
				return h, c.Update(ctx, h)
			}},
			wantRead: true, wantHarnesses: []string{"team/codex"}, wantPolicies: []string{"/team-policy"},
		},
		{
			name: "AgentHarness deleted",
			change: change{event: "delete", apply: func(ctx context.Context, c client.Client) (client.Object, error) {
				h := sameNamespace("team", "codex")
				return h, c.Delete(ctx, h)
			}},
			wantRead: true, wantHarnesses: []string{"shared/everywhere"}, wantPolicies: []string{"/team-policy"},
		},
		{
			name: "AgentHarness deleted, seen only as its final state",
			change: change{event: "delete", tombstone: true, apply: func(ctx context.Context, c client.Client) (client.Object, error) {
				h := sameNamespace("team", "codex")
				return h, c.Delete(ctx, h)
			}},
			wantRead: true, wantHarnesses: []string{"shared/everywhere"}, wantPolicies: []string{"/team-policy"},
		},
		{
			name: "RuntimePolicy added",
			change: change{event: "add", apply: func(ctx context.Context, c client.Client) (client.Object, error) {
				p := &v1alpha1.RuntimePolicy{ObjectMeta: metav1.ObjectMeta{Name: "everyone"}}
				return p, c.Create(ctx, p)
			}},
			wantRead: true, wantHarnesses: []string{"shared/everywhere", "team/codex"}, wantPolicies: []string{"/everyone", "/team-policy"},
		},
		{
			name: "RuntimePolicy updated: selects the namespace",
			change: change{event: "update", apply: func(ctx context.Context, c client.Client) (client.Object, error) {
				p := &v1alpha1.RuntimePolicy{}
				if err := c.Get(ctx, client.ObjectKey{Name: "other-policy"}, p); err != nil {
					return nil, err
				}
				p.Spec.NamespaceSelector.MatchLabels = map[string]string{"team": "a"}
				return p, c.Update(ctx, p)
			}},
			wantRead: true, wantHarnesses: []string{"shared/everywhere", "team/codex"}, wantPolicies: []string{"/other-policy", "/team-policy"},
		},
		{
			name: "RuntimePolicy deleted",
			change: change{event: "delete", apply: func(ctx context.Context, c client.Client) (client.Object, error) {
				p := selecting("team-policy", nil)
				return p, c.Delete(ctx, p)
			}},
			wantRead: true, wantHarnesses: []string{"shared/everywhere", "team/codex"}, wantPolicies: []string{},
		},
		{
			name: "RuntimePolicy deleted, seen only as its final state",
			change: change{event: "delete", tombstone: true, apply: func(ctx context.Context, c client.Client) (client.Object, error) {
				p := selecting("team-policy", nil)
				return p, c.Delete(ctx, p)
			}},
			wantRead: true, wantHarnesses: []string{"shared/everywhere", "team/codex"}, wantPolicies: []string{},
		},
		{
			name: "the Namespace's labels updated: no longer consents, no longer selected",
			change: change{event: "update", apply: func(ctx context.Context, c client.Client) (client.Object, error) {
				n := &corev1.Namespace{}
				if err := c.Get(ctx, client.ObjectKey{Name: "team"}, n); err != nil {
					return nil, err
				}
				n.Labels = map[string]string{"tier": "gold"}
				return n, c.Update(ctx, n)
			}},
			wantRead: true, wantHarnesses: []string{"team/codex"}, wantPolicies: []string{},
		},
		{
			name: "the Namespace deleted, seen only as its final state",
			change: change{event: "delete", tombstone: true, apply: func(ctx context.Context, c client.Client) (client.Object, error) {
				n := ns("team", nil)
				return n, c.Delete(ctx, n)
			}},
			wantRead: true, wantErr: "read Namespace team",
		},
		{
			name: "another Namespace updated",
			change: change{event: "update", apply: func(ctx context.Context, c client.Client) (client.Object, error) {
				n := &corev1.Namespace{}
				if err := c.Get(ctx, client.ObjectKey{Name: "shared"}, n); err != nil {
					return nil, err
				}
				n.Labels = map[string]string{"tier": "gold"}
				return n, c.Update(ctx, n)
			}},
			wantRead: false, wantHarnesses: []string{"shared/everywhere", "team/codex"}, wantPolicies: []string{"/team-policy"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			teamLabels := map[string]string{"team": "a"}
			for k, v := range accepting {
				teamLabels[k] = v
			}
			c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(
				ns("team", teamLabels), ns("shared", nil),
				sameNamespace("team", "codex"), allNamespaces("shared", "everywhere"), sameNamespace("shared", "private"),
				selecting("team-policy", map[string]string{"team": "a"}), selecting("other-policy", map[string]string{"team": "b"}),
			).Build()
			r := &countingReader{Reader: c}
			views := NewViews(r)
			session := &v1alpha1.AgentSession{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "s"}}

			for range 3 {
				if _, err := views.For(ctx, session); err != nil {
					t.Fatal(err)
				}
			}
			if got := r.lists.Load(); got != 2 {
				t.Fatalf("three turns without an event listed %d times, want 2 (one view: harnesses and policies)", got)
			}
			if got := views.Reads(); got != 1 {
				t.Fatalf("three turns without an event: Reads() = %d, want 1", got)
			}

			obj, err := tc.change.apply(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			h := views.EventHandler()
			var delivered any = obj
			if tc.change.tombstone {
				delivered = toolscache.DeletedFinalStateUnknown{Key: obj.GetNamespace() + "/" + obj.GetName(), Obj: obj}
			}
			switch tc.change.event {
			case "add":
				h.OnAdd(delivered, false)
			case "update":
				h.OnUpdate(obj, delivered)
			case "delete":
				h.OnDelete(delivered)
			}

			snap, err := views.For(ctx, session)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("after the event: %v, want an error with %q (the kept view was used)", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if read := r.lists.Load() > 2; read != tc.wantRead {
				t.Fatalf("after the event the view was read again: %v, want %v", read, tc.wantRead)
			}
			if read := views.Reads() > 1; read != tc.wantRead {
				t.Fatalf("after the event Reads() = %d: read again %v, want %v", views.Reads(), read, tc.wantRead)
			}
			if got := names(snap.Harnesses); !slices.Equal(got, tc.wantHarnesses) {
				t.Errorf("visible harnesses %v, want %v", got, tc.wantHarnesses)
			}
			if got := names(snap.Policies); !slices.Equal(got, tc.wantPolicies) {
				t.Errorf("selecting policies %v, want %v", got, tc.wantPolicies)
			}
			if snap.Session != session {
				t.Errorf("the snapshot's session is not the turn's")
			}
		})
	}
}

// TestViewsNeverKeepAViewReadBeforeAnEvent: an event delivered while a view
// is being read makes that read stale: the turn that read it may use it (it
// began before the event), but the next turn reads again and sees the
// change.
func TestViewsNeverKeepAViewReadBeforeAnEvent(t *testing.T) {
	for _, kind := range []string{"AgentHarness", "Namespace"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(ns("team", nil), sameNamespace("team", "codex")).Build()
			r := &countingReader{Reader: c}
			views := NewViews(r)
			session := &v1alpha1.AgentSession{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "s"}}
			added := sameNamespace("team", "added")
			r.duringList = func() {
				// After the read of the harnesses: the view misses it.
				if err := c.Create(ctx, added); err != nil {
					t.Fatal(err)
				}
				if kind == "Namespace" {
					views.Invalidate(ns("team", nil))
				} else {
					views.Invalidate(added)
				}
			}
			first, err := views.For(ctx, session)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(first.Harnesses); !slices.Equal(got, []string{"team/codex"}) {
				t.Fatalf("the view read during the event: %v, want only team/codex (read before the add)", got)
			}
			next, err := views.For(ctx, session)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(next.Harnesses); !slices.Equal(got, []string{"team/added", "team/codex"}) {
				t.Fatalf("the turn after the event: %v, want the added harness too (a stale view was kept)", got)
			}
		})
	}
}

// TestViewsReadErrorsAreNotKept: a namespace that does not exist (yet) is
// an error naming it, and the turn after the Namespace appeared reads it.
func TestViewsReadErrorsAreNotKept(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(sameNamespace("team", "codex")).Build()
	views := NewViews(c)
	session := &v1alpha1.AgentSession{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "s"}}
	if _, err := views.For(ctx, session); err == nil || !strings.Contains(err.Error(), "read Namespace team") {
		t.Fatalf("a missing namespace: %v, want an error naming it", err)
	}
	if err := c.Create(ctx, ns("team", nil)); err != nil {
		t.Fatal(err)
	}
	snap, err := views.For(ctx, session)
	if err != nil || len(snap.Harnesses) != 1 {
		t.Fatalf("after the namespace was created: %v harnesses, %v; want team/codex", names(snap.Harnesses), err)
	}
}

// TestViewsRefuseAnInvalidSelector: an invalid policy selector fails the
// view (never silently drops the policy), as For does.
func TestViewsRefuseAnInvalidSelector(t *testing.T) {
	bad := &v1alpha1.RuntimePolicy{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: v1alpha1.RuntimePolicySpec{
		NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Sometimes"}}}}}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(ns("team", nil), bad).Build()
	_, err := NewViews(c).For(context.Background(), &v1alpha1.AgentSession{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "s"}})
	if err == nil || !strings.Contains(err.Error(), "RuntimePolicy bad: spec.namespaceSelector") {
		t.Fatalf("an invalid selector: %v, want an error naming the policy's field", err)
	}
}

// TestViewsUnderConcurrentTurnsAndEvents: turns and events at once (run
// with -race); once the events stop, a turn sees the last change.
func TestViewsUnderConcurrentTurnsAndEvents(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(ns("team", nil), sameNamespace("team", "codex")).Build()
	views := NewViews(c)
	session := &v1alpha1.AgentSession{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "s"}}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				if _, err := views.For(ctx, session); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 50 {
			views.Invalidate(ns("team", nil))
			views.Invalidate(sameNamespace("team", fmt.Sprint("h", i)))
		}
	})
	wg.Wait()
	if err := c.Create(ctx, sameNamespace("team", "last")); err != nil {
		t.Fatal(err)
	}
	views.Invalidate(sameNamespace("team", "last"))
	snap, err := views.For(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(snap.Harnesses); !slices.Equal(got, []string{"team/codex", "team/last"}) {
		t.Fatalf("after the last event: %v, want team/codex and team/last", got)
	}
}
