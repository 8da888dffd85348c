package agentsession_test

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/platform/conditions"
	"github.com/openclaw/harness-operator/internal/testutil"
)

// dispatcherManager is the field manager the dispatcher writes its part of
// AgentSession status with (any manager other than the controller's).
var dispatcherManager = conditions.FieldManager("dispatcher") // the rule the dispatcher follows too

const timeout = 20 * time.Second

var unique atomic.Int64

// uid is a short id unique within the suite, for names, providers and labels.
func uid() string { return fmt.Sprintf("t%d-%d", GinkgoParallelProcess(), unique.Add(1)) }

func create(obj client.Object) {
	GinkgoHelper()
	Expect(k8sClient.Create(ctx, obj)).To(Succeed())
	DeferCleanup(func() {
		Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, obj))).To(Succeed())
	})
}

func newNamespace(l map[string]string) *corev1.Namespace {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "as-", Labels: l}}
	create(ns)
	return ns
}

// newPolicy is a RuntimePolicy that selects the namespaces labelled case=<id>
// (policies are cluster-scoped: each spec selects only its own namespaces).
func newPolicy(name, id string, opts ...testutil.PolicyOption) *v1alpha1.RuntimePolicy {
	return testutil.NewPolicy(name, append([]testutil.PolicyOption{testutil.Selecting(map[string]string{"case": id})}, opts...)...)
}

// The policy builders are shared with the other suites (internal/testutil).
var (
	provider  = testutil.ProviderRuntime
	modelRef  = testutil.ModelRuntime
	agentRef  = testutil.AgentModelRuntime
	enforcing = testutil.Enforcing
)

type sopt func(*v1alpha1.AgentSession)

func newSession(ns, name, model string, opts ...sopt) *v1alpha1.AgentSession {
	s := &v1alpha1.AgentSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.AgentSessionSpec{
			AgentID: "main", SessionKey: "agent:main:" + name, SessionID: "sid-" + name, Model: model,
		},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

func agentID(id string) sopt {
	return func(s *v1alpha1.AgentSession) { s.Spec.AgentID = id }
}

func override(rt string) sopt {
	return func(s *v1alpha1.AgentSession) { s.Spec.RuntimeOverride = v1alpha1.RuntimeID(rt) }
}

func getSession(s *v1alpha1.AgentSession) *v1alpha1.AgentSession {
	GinkgoHelper()
	var got v1alpha1.AgentSession
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(s), &got)).To(Succeed())
	return &got
}

// policyOf returns "runtime/source [matched…] PolicyResolved=Status/Reason Ready=Status/Reason"
// once the manager's part of the status describes the current generation.
func policyOf(s *v1alpha1.AgentSession) func() string {
	return func() string {
		var got v1alpha1.AgentSession
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(s), &got); err != nil {
			return err.Error()
		}
		st := got.Status
		if st.ObservedGeneration != got.Generation || st.Policy == nil {
			return "stale"
		}
		cond := func(typ string) string {
			c := meta.FindStatusCondition(st.Conditions, typ)
			if c == nil {
				return typ + "=none"
			}
			return typ + "=" + string(c.Status) + "/" + c.Reason
		}
		return fmt.Sprintf("%s/%s %v %s %s", st.Policy.Runtime, st.Policy.Source, st.Policy.MatchedPolicies,
			cond(v1alpha1.SessionConditionPolicyResolved), cond(v1alpha1.SessionConditionReady))
	}
}

func eventReasons(s *v1alpha1.AgentSession) func() []string {
	return func() []string {
		var list eventsv1.EventList
		if err := k8sClient.List(ctx, &list, client.InNamespace(s.Namespace)); err != nil {
			return []string{err.Error()}
		}
		var out []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "AgentSession" && e.Regarding.Name == s.Name {
				out = append(out, e.Type+"/"+e.Reason+": "+e.Note)
			}
		}
		return out
	}
}

// dispatcherApply writes dispatcher-owned status fields with the dispatcher's
// own field manager, as the dispatcher does.
func dispatcherApply(s *v1alpha1.AgentSession, status map[string]any) {
	GinkgoHelper()
	u := &unstructured.Unstructured{Object: map[string]any{"status": status}}
	u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("AgentSession"))
	u.SetNamespace(s.Namespace)
	u.SetName(s.Name)
	Expect(k8sClient.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(dispatcherManager), client.ForceOwnership)).To(Succeed())
}

const ready = "Ready=True/Ready"

var _ = Describe("AgentSession controller", func() {
	SetDefaultEventuallyTimeout(timeout)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)

	It("resolves status.policy from provider, model and agent entries, and reports NoPolicy without an entry", func() {
		id := uid()
		prov := "p-" + id
		ns := newNamespace(map[string]string{"case": id})
		p := newPolicy(id, id, provider(prov, "openclaw"), modelRef(prov+"/exact", "codex"),
			agentRef("special", prov+"/agent-model", "claude-cli"))
		create(p)
		byProvider := newSession(ns.Name, "by-provider", prov+"/any")
		byModel := newSession(ns.Name, "by-model", prov+"/exact")
		byAgent := newSession(ns.Name, "by-agent", prov+"/agent-model", agentID("special"))
		otherAgent := newSession(ns.Name, "other-agent", prov+"/agent-model")
		none := newSession(ns.Name, "none", "elsewhere/model")
		for _, s := range []*v1alpha1.AgentSession{byProvider, byModel, byAgent, otherAgent, none} {
			create(s)
		}
		matched := "[" + id + "]"
		Eventually(policyOf(byProvider)).Should(Equal("openclaw/provider " + matched + " PolicyResolved=True/PolicyMatched " + ready))
		Eventually(policyOf(byModel)).Should(Equal("codex/model " + matched + " PolicyResolved=True/PolicyMatched " + ready))
		Eventually(policyOf(byAgent)).Should(Equal("claude-cli/agent " + matched + " PolicyResolved=True/PolicyMatched " + ready))
		Eventually(policyOf(otherAgent)).Should(Equal("openclaw/provider " + matched + " PolicyResolved=True/PolicyMatched " + ready))
		Eventually(policyOf(none)).Should(Equal("auto/default "+matched+" PolicyResolved=True/NoPolicy "+ready),
			"matchedPolicies lists the policies selecting the namespace, even without an entry for the model")

		By("a namespace no policy selects")
		plain := newNamespace(nil)
		lone := newSession(plain.Name, "lone", prov+"/exact")
		create(lone)
		Eventually(policyOf(lone)).Should(Equal("auto/default [] PolicyResolved=True/NoPolicy " + ready))
		c := meta.FindStatusCondition(getSession(byModel).Status.Conditions, v1alpha1.SessionConditionPolicyResolved)
		Expect(c.Message).To(ContainSubstring(id))
	})

	It("re-resolves when a matching policy appears, changes and goes; an Event on the session only when its own spec changed the runtime", func() {
		id := uid()
		prov := "p-" + id
		ns := newNamespace(map[string]string{"case": id})
		s := newSession(ns.Name, "s", prov+"/m")
		create(s)
		Eventually(policyOf(s)).Should(Equal("auto/default [] PolicyResolved=True/NoPolicy " + ready))

		p := newPolicy(id, id, provider(prov, "openclaw"))
		create(p)
		Eventually(policyOf(s)).Should(Equal("openclaw/provider [" + id + "] PolicyResolved=True/PolicyMatched " + ready))

		By("changing the policy")
		var cur v1alpha1.RuntimePolicy
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(p), &cur)).To(Succeed())
		cur.Spec.Models = []v1alpha1.ModelRuntimePolicy{{Ref: prov + "/m", Runtime: "codex"}}
		Expect(k8sClient.Update(ctx, &cur)).To(Succeed())
		Eventually(policyOf(s)).Should(Equal("codex/model [" + id + "] PolicyResolved=True/PolicyMatched " + ready))

		By("changing the session's model, which the policy's provider entry decides")
		got := getSession(s)
		got.Spec.Model = prov + "/other"
		Expect(k8sClient.Update(ctx, got)).To(Succeed())
		Eventually(policyOf(s)).Should(Equal("openclaw/provider [" + id + "] PolicyResolved=True/PolicyMatched " + ready))
		// The recorder sends this reconciler's Events in order: once the spec
		// change's Event is there, any the policy's changes had caused would be too.
		runtimeChanges := func() []string {
			var out []string
			for _, e := range eventReasons(s)() {
				if strings.Contains(e, "/PolicyRuntimeChanged:") {
					out = append(out, e)
				}
			}
			return out
		}
		Eventually(runtimeChanges).Should(Equal([]string{"Normal/PolicyRuntimeChanged: Policy runtime changed from codex to openclaw (source provider)."}),
			"the policy's own changes are announced on the policy, not on each session")

		By("deleting the policy")
		Expect(k8sClient.Delete(ctx, &cur)).To(Succeed())
		Eventually(policyOf(s)).Should(Equal("auto/default [] PolicyResolved=True/NoPolicy " + ready))
	})

	It("re-resolves when the namespace labels change", func() {
		id := uid()
		prov := "p-" + id
		ns := newNamespace(map[string]string{"unrelated": "x"})
		create(newPolicy(id, id, provider(prov, "codex")))
		s := newSession(ns.Name, "s", prov+"/m")
		create(s)
		Eventually(policyOf(s)).Should(Equal("auto/default [] PolicyResolved=True/NoPolicy " + ready))

		ns.Labels["case"] = id
		Expect(k8sClient.Update(ctx, ns)).To(Succeed())
		Eventually(policyOf(s)).Should(Equal("codex/provider [" + id + "] PolicyResolved=True/PolicyMatched " + ready))

		delete(ns.Labels, "case")
		Expect(k8sClient.Update(ctx, ns)).To(Succeed())
		Eventually(policyOf(s)).Should(Equal("auto/default [] PolicyResolved=True/NoPolicy " + ready))
	})

	It("reports a runtimeOverride or pin that contradicts a Deny policy as Ready=False/OverrideDenied, only where the policy applies", func() {
		id := uid()
		teamA := newNamespace(map[string]string{"case": id})
		other := newNamespace(nil)
		create(newPolicy(id, id, provider("openai", "codex"), enforcing()))

		denied := newSession(teamA.Name, "denied", "openai/gpt-5.5", override("openclaw"))
		allowed := newSession(other.Name, "allowed", "openai/gpt-5.5", override("openclaw"))
		agreeing := newSession(teamA.Name, "agreeing", "openai/gpt-5.5", override("codex"))
		create(denied)
		create(allowed)
		create(agreeing)
		Eventually(policyOf(denied)).Should(Equal("codex/provider [" + id + "] PolicyResolved=True/PolicyMatched Ready=False/OverrideDenied"))
		c := meta.FindStatusCondition(getSession(denied).Status.Conditions, v1alpha1.SessionConditionReady)
		Expect(c.Message).To(And(ContainSubstring(id), ContainSubstring("openclaw"), ContainSubstring("codex")))
		Eventually(eventReasons(denied)).Should(ContainElement(HavePrefix("Warning/OverrideDenied")))
		Eventually(policyOf(allowed)).Should(Equal("openclaw/override [] PolicyResolved=True/NoPolicy " + ready))
		Eventually(policyOf(agreeing)).Should(Equal("codex/override ["+id+"] PolicyResolved=True/PolicyMatched "+ready),
			"an override that agrees with the Deny policy is the session's own choice, as the dispatcher's precedence says")

		By("dropping the override")
		cur := getSession(denied)
		cur.Spec.RuntimeOverride = ""
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		Eventually(policyOf(denied)).Should(Equal("codex/provider [" + id + "] PolicyResolved=True/PolicyMatched " + ready))

		By("a dispatcher pin to another harness contradicts the Deny policy too, once the session's model selection is locked (an unlocked session's pin takes no part: TestSelect)")
		dispatcherApply(denied, map[string]any{"agentHarnessId": "other-harness"})
		cur = getSession(denied)
		cur.Spec.ModelSelectionLocked = v1alpha1.ModelSelectionLocked
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		Eventually(policyOf(denied)).Should(Equal("codex/provider [" + id + "] PolicyResolved=True/PolicyMatched Ready=False/OverrideDenied"))
		c = meta.FindStatusCondition(getSession(denied).Status.Conditions, v1alpha1.SessionConditionReady)
		Expect(c.Message).To(ContainSubstring("other-harness"))
		Expect(c.Message).To(ContainSubstring("Reset the session (bump spec.resetGeneration"), "the message names the remedy that works")
		Expect(getSession(denied).Status.AgentHarnessID).To(Equal("other-harness"))

		By("a reset makes the pin stale at once: no denial, before the dispatcher's next turn clears it")
		dispatcherApply(denied, map[string]any{"agentHarnessId": "other-harness",
			"nativeBinding": map[string]any{"threadId": "t-1", "pod": "external", "generation": int64(0)}})
		cur = getSession(denied)
		cur.Spec.ResetGeneration = 1
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		Eventually(policyOf(denied)).Should(Equal("codex/provider [" + id + "] PolicyResolved=True/PolicyMatched " + ready))
	})

	It("never writes the dispatcher's fields: they survive the manager's server-side apply", func() {
		id := uid()
		prov := "p-" + id
		ns := newNamespace(map[string]string{"case": id})
		p := newPolicy(id, id, provider(prov, "openclaw"))
		create(p)
		s := newSession(ns.Name, "s", prov+"/m")
		create(s)
		Eventually(policyOf(s)).Should(HavePrefix("openclaw/provider"))

		started := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
		dispatcherApply(s, map[string]any{
			"agentHarnessId": "codex",
			"lastTurn": map[string]any{"runId": "run-1", "outcome": "Succeeded",
				"startedAt": started.UTC().Format(time.RFC3339), "finishedAt": started.UTC().Format(time.RFC3339)},
			"counters": map[string]any{"turns": int64(3), "inputTokens": int64(42)},
		})

		By("changing the policy so the manager applies its part again")
		var cur v1alpha1.RuntimePolicy
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(p), &cur)).To(Succeed())
		cur.Spec.Providers[0].Runtime = "codex"
		Expect(k8sClient.Update(ctx, &cur)).To(Succeed())
		Eventually(policyOf(s)).Should(HavePrefix("codex/provider"))

		got := getSession(s)
		Expect(got.Status.AgentHarnessID).To(Equal("codex"))
		Expect(got.Status.LastTurn).NotTo(BeNil())
		Expect(got.Status.LastTurn.RunID).To(Equal("run-1"))
		Expect(got.Status.Counters).NotTo(BeNil())
		Expect(got.Status.Counters.Turns).To(Equal(int64(3)))
		Expect(got.Status.Counters.InputTokens).To(Equal(int64(42)))

		owned := map[string]string{}
		for _, mf := range got.ManagedFields {
			if mf.Subresource == "status" && mf.FieldsV1 != nil {
				owned[mf.Manager] = mf.FieldsV1.GetRawString()
			}
		}
		Expect(owned).To(HaveKey(conditions.FieldManager("manager")))
		Expect(owned).To(HaveKey(dispatcherManager))
		for _, f := range []string{"f:agentHarnessId", "f:lastTurn", "f:counters", "f:lastSelection", "f:nativeBinding", "f:activeTurn"} {
			Expect(owned[conditions.FieldManager("manager")]).NotTo(ContainSubstring(f), "the manager must not own %s", f)
		}
		for _, f := range []string{"f:policy", "f:conditions", "f:observedGeneration"} {
			Expect(owned[conditions.FieldManager("manager")]).To(ContainSubstring(f))
			Expect(owned[dispatcherManager]).NotTo(ContainSubstring(f))
		}
		for _, f := range []string{"f:agentHarnessId", "f:lastTurn", "f:counters"} {
			Expect(owned[dispatcherManager]).To(ContainSubstring(f))
		}
	})

	It("issues zero writes on a steady-state resync of 100 sessions and 10 policies", func() {
		id := uid()
		var namespaces []*corev1.Namespace
		for k := range 4 {
			namespaces = append(namespaces, newNamespace(map[string]string{"case": id, "team": fmt.Sprintf("%s-%d", id, k%2)}))
		}
		for i := range 10 {
			prov := fmt.Sprintf("p-%s-%d", id, i%4)
			opts := []testutil.PolicyOption{provider(prov, []string{"codex", "openclaw", "auto"}[i%3]), modelRef(prov+"/m1", "codex"), agentRef("ops", prov+"/m2", "claude-cli")}
			if i%3 == 1 {
				opts = append(opts, enforcing())
			}
			p := newPolicy(fmt.Sprintf("%s-%02d", id, i), id, opts...)
			if i%2 == 1 {
				p.Spec.NamespaceSelector.MatchLabels["team"] = fmt.Sprintf("%s-%d", id, i%4/2)
			}
			create(p)
		}
		var sessions []*v1alpha1.AgentSession
		for i := range 100 {
			var opts []sopt
			if i%5 == 0 {
				opts = append(opts, override([]string{"openclaw", "codex"}[i%2]))
			}
			if i%7 == 0 {
				opts = append(opts, agentID("ops"))
			}
			s := newSession(namespaces[i%4].Name, fmt.Sprintf("s-%03d", i), fmt.Sprintf("p-%s-%d/m%d", id, i%5, i%3), opts...)
			create(s)
			sessions = append(sessions, s)
		}
		for _, s := range sessions[:10] {
			dispatcherApply(s, map[string]any{"agentHarnessId": "codex", "counters": map[string]any{"turns": int64(1)}})
		}
		Eventually(func() []string {
			var stale []string
			for _, s := range sessions {
				if got := policyOf(s)(); got == "stale" || strings.Contains(got, "none") {
					stale = append(stale, s.Name)
				}
			}
			return stale
		}).Should(BeEmpty())
		denied := 0
		for _, s := range sessions {
			if strings.HasSuffix(policyOf(s)(), "Ready=False/OverrideDenied") {
				denied++
			}
		}
		Expect(denied).To(BeNumerically(">", 0), "the fixture includes denied overrides or pins")
		expectSettled(sessions)
		Expect(calls.Writes()).To(ContainElement("apply/status AgentSession "+testutil.Key(sessions[0])), "the counting client sees the reconciler's status writes")
		eventsBefore := stableEventCounts(namespaces)

		By("re-triggering every session through the namespace mapping with an irrelevant label")
		calls.Reset()
		relabelled := map[string]client.Object{}
		for _, ns := range namespaces {
			var cur corev1.Namespace
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ns), &cur)).To(Succeed())
			cur.Labels["resync"] = "1"
			Expect(k8sClient.Update(ctx, &cur)).To(Succeed())
			relabelled[cur.Name] = &cur
		}
		expectAllReconciled(sessions, func(s *v1alpha1.AgentSession) []client.Object {
			return []client.Object{relabelled[s.Namespace]}
		})
		Expect(calls.Writes()).To(BeEmpty())

		By("re-triggering the pinned sessions through the harness mapping")
		calls.Reset()
		unrelated := &v1alpha1.AgentHarness{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespaces[0].Name, Name: "unrelated"},
			Spec: v1alpha1.AgentHarnessSpec{
				HarnessID: "unrelated-" + id, Adapter: v1alpha1.AdapterCodexAppServer,
				External: &v1alpha1.ExternalServer{URL: "ws://127.0.0.1:4500",
					TokenSecretRef: v1alpha1.SecretKeyReference{Name: "token", Key: "token"}},
			},
		}
		create(unrelated)
		expectAllReconciled(sessions[:10], func(*v1alpha1.AgentSession) []client.Object { return []client.Object{unrelated} })
		Expect(calls.Writes()).To(BeEmpty())

		By("restarting the manager over the same objects")
		mgr.stop()
		mgr = startManager()
		expectAllReconciled(sessions, nil)
		Expect(calls.Writes()).To(BeEmpty())
		Expect(eventCounts(namespaces)).To(Equal(eventsBefore), "no Event without a change")
	})
})

// expectAllReconciled waits until the reconciler acted on the current state of
// each session: a reconcile since the last calls.Reset that read the session
// at its current resourceVersion, and each object seen names (when set) at its
// resourceVersion or a later one, has returned.
func expectAllReconciled(sessions []*v1alpha1.AgentSession, seen func(*v1alpha1.AgentSession) []client.Object) {
	GinkgoHelper()
	expectEachCurrent(sessions, func(s, cur *v1alpha1.AgentSession) error {
		var also []client.Object
		if seen != nil {
			also = seen(s)
		}
		return calls.ReconciledAt(cur, also...)
	})
}

// expectSettled waits until each session is at the reconciler's fixpoint: its
// latest reconcile read its current resourceVersion, returned and wrote
// nothing, so no write of an earlier state is still to come.
func expectSettled(sessions []*v1alpha1.AgentSession) {
	GinkgoHelper()
	expectEachCurrent(sessions, func(_, cur *v1alpha1.AgentSession) error { return calls.Settled(cur) })
}

// expectEachCurrent waits until check holds for every session as the API
// server has it now (cur), all at once.
func expectEachCurrent(sessions []*v1alpha1.AgentSession, check func(s, cur *v1alpha1.AgentSession) error) {
	GinkgoHelper()
	Eventually(func() error {
		var errs []error
		for _, s := range sessions {
			var cur v1alpha1.AgentSession
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(s), &cur); err != nil {
				return err
			}
			errs = append(errs, check(s, &cur))
		}
		return errors.Join(errs...)
	}).Should(Succeed())
}

// stableEventCounts returns eventCounts once it has not changed for a second
// (the recorder sends Events asynchronously).
func stableEventCounts(namespaces []*corev1.Namespace) map[string]int32 {
	GinkgoHelper()
	var last map[string]int32
	Eventually(func() bool {
		cur := eventCounts(namespaces)
		same := last != nil && equality.Semantic.DeepEqual(cur, last)
		last = cur
		return same
	}, timeout, time.Second).Should(BeTrue())
	return last
}

// eventCounts sums the occurrences of the AgentSession Events in namespaces.
func eventCounts(namespaces []*corev1.Namespace) map[string]int32 {
	GinkgoHelper()
	out := map[string]int32{}
	for _, ns := range namespaces {
		var list eventsv1.EventList
		Expect(k8sClient.List(ctx, &list, client.InNamespace(ns.Name))).To(Succeed())
		for _, e := range list.Items {
			n := int32(1)
			if e.Series != nil {
				n = e.Series.Count
			}
			out[ns.Name+"/"+e.Regarding.Name+"/"+e.Reason] += n
		}
	}
	return out
}
