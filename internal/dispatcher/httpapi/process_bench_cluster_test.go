package httpapi_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/testutil"
)

// The cluster of BenchmarkDispatcherProcess's size ratio.

// visibleLabel marks the sessions' namespace for the policies that select
// it; farLabel the namespaces of the harnesses the sessions do not see.
var (
	visibleLabel = map[string]string{"bench-size": "visible"}
	farLabel     = map[string]string{"bench-size": "far"}
)

// farNamespaces hold the harnesses beyond the visible ones.
const farNamespaces = 12

// addVisibleClutter makes the sessions' namespace (doubleNS, whose harness
// `codex` is the double's) hold visibleHarnesses harnesses, all Ready on the
// double at url, and selectingPolicies policies select it (the cluster-wide
// codex-only policy and more, each for a model the sessions do not use).
func (e *benchEnv) addVisibleClutter(b *testing.B, url string) {
	b.Helper()
	ns := &corev1.Namespace{}
	benchMust(b, e.k8s.Get(e.ctx, client.ObjectKey{Name: doubleNS}, ns))
	patch := client.MergeFrom(ns.DeepCopy())
	ns.Labels = visibleLabel
	benchMust(b, e.k8s.Patch(e.ctx, ns, patch))
	harnesses := make([]*v1alpha1.AgentHarness, visibleHarnesses-1)
	for i := range harnesses {
		harnesses[i] = benchHarness(doubleNS, fmt.Sprintf("near-%02d", i), url)
	}
	e.createAll(b, harnessObjects(harnesses))
	for _, h := range harnesses {
		_, err := testutil.WaitHarnessCondition(e.ctx, e.k8s, h, v1alpha1.HarnessConditionReady, metav1.ConditionTrue, 60*time.Second)
		benchMust(b, err)
	}
	var policies []client.Object
	for i := range selectingPolicies - 1 {
		policies = append(policies, testutil.NewPolicy(fmt.Sprintf("near-%02d", i), testutil.Selecting(visibleLabel),
			testutil.ModelRuntime(fmt.Sprintf("openai/near-model-%02d", i), "codex")))
	}
	e.createAll(b, policies)
	e.waitCached(b, visibleHarnesses, selectingPolicies)
}

// addDistantClutter brings the cluster to allHarnesses and allPolicies: the
// harnesses in farNamespaces namespaces of their own, the policies selecting
// only those. No controller reconciles them (their namespaces are not the
// agentharness controller's), as in a cluster where other teams' harnesses
// live.
func (e *benchEnv) addDistantClutter(b *testing.B) {
	b.Helper()
	var objs []client.Object
	for n := range farNamespaces {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("far-%02d", n), Labels: farLabel}})
	}
	e.createAll(b, objs)
	objs = objs[:0]
	for i := range allHarnesses - visibleHarnesses {
		objs = append(objs, benchHarness(fmt.Sprintf("far-%02d", i%farNamespaces), fmt.Sprintf("far-%03d", i), "wss://far.invalid/"))
	}
	for i := range allPolicies - selectingPolicies {
		objs = append(objs, testutil.NewPolicy(fmt.Sprintf("far-%03d", i), testutil.Selecting(farLabel),
			testutil.ModelRuntime(fmt.Sprintf("openai/far-model-%03d", i), "codex")))
	}
	e.createAll(b, objs)
	e.waitCached(b, allHarnesses, allPolicies)
}

// benchHarness is an external Codex harness named and identified id, at
// url, with the namespace's codex-token Secret.
func benchHarness(ns, id, url string) *v1alpha1.AgentHarness {
	return &v1alpha1.AgentHarness{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: id},
		Spec: v1alpha1.AgentHarnessSpec{
			HarnessID: id, Adapter: v1alpha1.AdapterCodexAppServer,
			External: &v1alpha1.ExternalServer{URL: url, TokenSecretRef: v1alpha1.SecretKeyReference{Name: "codex-token", Key: "token"}},
		},
	}
}

func harnessObjects(hs []*v1alpha1.AgentHarness) []client.Object {
	out := make([]client.Object, len(hs))
	for i, h := range hs {
		out[i] = h
	}
	return out
}

// createAll creates objs, eight at a time.
func (e *benchEnv) createAll(b *testing.B, objs []client.Object) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(objs))
	work := make(chan client.Object)
	for range 8 {
		wg.Go(func() {
			for o := range work {
				if err := e.k8s.Create(e.ctx, o); err != nil {
					errs <- fmt.Errorf("create %T %s: %w", o, o.GetName(), err)
				}
			}
		})
	}
	for _, o := range objs {
		work <- o
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		benchMust(b, err)
	}
}

// waitCached waits until this process's informers hold harnesses
// AgentHarnesses and policies RuntimePolicies: the API server has sent them
// out (the dispatcher's informers get the same watch events; the untimed
// turns that follow let them catch up).
func (e *benchEnv) waitCached(b *testing.B, harnesses, policies int) {
	b.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var hs v1alpha1.AgentHarnessList
		var ps v1alpha1.RuntimePolicyList
		benchMust(b, e.cached.List(e.ctx, &hs))
		benchMust(b, e.cached.List(e.ctx, &ps))
		if len(hs.Items) == harnesses && len(ps.Items) == policies {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("the informers hold %d harnesses and %d policies, want %d and %d", len(hs.Items), len(ps.Items), harnesses, policies)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
