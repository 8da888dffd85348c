package engine

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	harnessscheme "github.com/openclaw/harness-operator/internal/platform/scheme"
	"github.com/openclaw/harness-operator/internal/policy/snapshot"
)

// memCache is a client.Reader over objects held in memory, reading as
// controller-runtime's informer cache does: each Get and List deep-copies
// what it returns unless told client.UnsafeDisableDeepCopy. It counts the
// Lists that reach it and the objects it copies.
type memCache struct {
	scheme *runtime.Scheme
	byGVK  map[schema.GroupVersionKind][]runtime.Object
	lists  atomic.Int64
	copies atomic.Int64
}

func newMemCache(scheme *runtime.Scheme, objs []client.Object) (*memCache, error) {
	m := &memCache{scheme: scheme, byGVK: map[schema.GroupVersionKind][]runtime.Object{}}
	for _, o := range objs {
		gvk, err := apiutil.GVKForObject(o, scheme)
		if err != nil {
			return nil, err
		}
		m.byGVK[gvk] = append(m.byGVK[gvk], o)
	}
	return m, nil
}

func (m *memCache) Get(_ context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	gvk, err := apiutil.GVKForObject(obj, m.scheme)
	if err != nil {
		return err
	}
	o := (&client.GetOptions{}).ApplyOptions(opts)
	for _, stored := range m.byGVK[gvk] {
		s := stored.(client.Object)
		if s.GetNamespace() == key.Namespace && s.GetName() == key.Name {
			if o.UnsafeDisableDeepCopy == nil || !*o.UnsafeDisableDeepCopy {
				stored = stored.DeepCopyObject()
				m.copies.Add(1)
			}
			reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(stored).Elem())
			return nil
		}
	}
	return apierrors.NewNotFound(schema.GroupResource{Resource: gvk.Kind}, key.Name)
}

func (m *memCache) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	m.lists.Add(1)
	gvk, err := apiutil.GVKForObject(list, m.scheme)
	if err != nil {
		return err
	}
	gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	o := (&client.ListOptions{}).ApplyOptions(opts)
	out := make([]runtime.Object, 0, len(m.byGVK[gvk]))
	for _, stored := range m.byGVK[gvk] {
		if o.UnsafeDisableDeepCopy == nil || !*o.UnsafeDisableDeepCopy {
			stored = stored.DeepCopyObject()
			m.copies.Add(1)
		}
		out = append(out, stored)
	}
	return apimeta.SetList(list, out)
}

// selectionCluster is a cluster of total AgentHarnesses and total
// RuntimePolicies (at least visible and selecting) in which the session's
// namespace "team" sees visible harnesses and is selected by selecting
// policies; the rest are in, or select, other namespaces.
func selectionCluster(visible, total, selecting, totalPolicies int) []client.Object {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ready := []metav1.Condition{
		{Type: v1alpha1.HarnessConditionWorkloadReady, Status: metav1.ConditionTrue, Reason: "PodsReady", LastTransitionTime: t0},
		{Type: v1alpha1.HarnessConditionVersionSupported, Status: metav1.ConditionTrue, Reason: "VersionAccepted", LastTransitionTime: t0},
		{Type: v1alpha1.HarnessConditionReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: t0},
	}
	objs := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{"team": "a"}}}}
	for i := range total {
		ns := "team"
		if i >= visible {
			ns = fmt.Sprintf("other-%03d", i%50)
		}
		id := fmt.Sprintf("h%04d", i)
		objs = append(objs, &v1alpha1.AgentHarness{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: id, CreationTimestamp: t0},
			Spec: v1alpha1.AgentHarnessSpec{HarnessID: id, Label: "Harness " + id, Adapter: v1alpha1.AdapterCodexAppServer,
				External: &v1alpha1.ExternalServer{URL: "wss://" + id + ".example", TokenSecretRef: v1alpha1.SecretKeyReference{Name: id, Key: "token"}},
				Support: &v1alpha1.HarnessSupport{
					Providers: []v1alpha1.ProviderID{"acme", "other"}, Priority: ptr.To(int32(i % 17)),
					RoutePolicy: v1alpha1.RoutePolicyAny,
				}},
			Status: v1alpha1.AgentHarnessStatus{Conditions: ready},
		})
	}
	for i := range totalPolicies {
		sel := map[string]string{"team": "a"}
		if i >= selecting {
			sel = map[string]string{"team": fmt.Sprintf("b%d", i)}
		}
		provider := v1alpha1.ProviderID(fmt.Sprintf("provider-%d", i))
		if i == 0 {
			provider = "acme"
		}
		objs = append(objs, &v1alpha1.RuntimePolicy{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("policy-%04d", i), CreationTimestamp: t0},
			Spec: v1alpha1.RuntimePolicySpec{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: sel},
				Providers:         []v1alpha1.ProviderRuntimePolicy{{Provider: provider, Runtime: v1alpha1.RuntimeAuto}},
			},
		})
	}
	return objs
}

// BenchmarkTurnSelection is what a turn spends deciding where it runs, as
// the engine's decide does it: the snapshot from the namespace's kept
// selection view, Select, the chosen harness's capabilities, and the
// `agent harness selected` record (JSON, discarded). visible harnesses
// (of total) and 10 policies (of total) concern the session's namespace;
// the rest must cost nothing per turn. The views read through an
// in-memory cache that copies as the informer cache does: after the first
// turn no turn lists it (lists/op).
func BenchmarkTurnSelection(b *testing.B) {
	for _, sz := range []struct{ visible, total int }{{64, 1000}, {64, 64}} {
		b.Run(fmt.Sprintf("visible=%d/total=%d", sz.visible, sz.total), func(b *testing.B) {
			const selecting = 10
			scheme, err := harnessscheme.New()
			if err != nil {
				b.Fatal(err)
			}
			totalPolicies := max(sz.total, selecting)
			if sz.total == sz.visible {
				totalPolicies = selecting
			}
			reader, err := newMemCache(scheme, selectionCluster(sz.visible, sz.total, selecting, totalPolicies))
			if err != nil {
				b.Fatal(err)
			}
			e := &Engine{reader: reader, log: zap.New(zap.WriteTo(io.Discard)),
				opts: Options{SelectionViews: snapshot.NewViews(reader)}}
			sess := &v1alpha1.AgentSession{
				ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "s", UID: "s-uid"},
				Spec:       v1alpha1.AgentSessionSpec{AgentID: "main", SessionKey: "agent:main:s", SessionID: "s-id", Model: "acme/m1"},
			}
			a := &wire.Attempt{RunID: "run-1", AgentID: "main", Provider: "acme", ModelID: "m1"}
			ctx := context.Background()

			snap, d, err := e.selectTurn(ctx, sess, a)
			if err != nil || d.Error != nil || d.HarnessID == "" || len(d.Candidates) != sz.visible || len(snap.Policies) != selecting {
				b.Fatalf("decision %+v (%d policies), %v; want a harness of %d candidates under %d policies",
					d, len(snap.Policies), err, sz.visible, selecting)
			}
			lists := reader.lists.Load()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				_, d, err := e.selectTurn(ctx, sess, a)
				if err != nil {
					b.Fatal(err)
				}
				e.logDecision(sess, a, d)
			}
			b.ReportMetric(float64(reader.lists.Load()-lists)/float64(b.N), "lists/op")
		})
	}
}
