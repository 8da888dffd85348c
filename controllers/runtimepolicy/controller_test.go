package runtimepolicy_test

import (
	"errors"
	"fmt"
	"slices"
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
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/testutil"
)

var unique atomic.Int64

// uid is a short id unique within the suite, for names, providers and labels.
func uid() string { return fmt.Sprintf("t%d-%d", GinkgoParallelProcess(), unique.Add(1)) }

// The policy builders are shared with the other suites (internal/testutil).
var (
	newPolicy = testutil.NewPolicy
	provider  = testutil.ProviderRuntime
	modelRef  = testutil.ModelRuntime
	selecting = testutil.Selecting
	enforcing = testutil.Enforcing
)

func create(obj client.Object) {
	GinkgoHelper()
	Expect(k8sClient.Create(ctx, obj)).To(Succeed())
	DeferCleanup(func() {
		Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, obj))).To(Succeed())
	})
}

func newNamespace(l map[string]string) *corev1.Namespace {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "rp-", Labels: l}}
	create(ns)
	return ns
}

func getPolicy(name string) *v1alpha1.RuntimePolicy {
	GinkgoHelper()
	var p v1alpha1.RuntimePolicy
	Expect(k8sClient.Get(ctx, client.ObjectKey{Name: name}, &p)).To(Succeed())
	return &p
}

// condition returns "Status/Reason" of a condition of the named policy, or "".
func condition(name, typ string) func() string {
	return func() string {
		var p v1alpha1.RuntimePolicy
		if err := k8sClient.Get(ctx, client.ObjectKey{Name: name}, &p); err != nil {
			return err.Error()
		}
		if p.Status.ObservedGeneration != p.Generation {
			return "stale"
		}
		c := meta.FindStatusCondition(p.Status.Conditions, typ)
		if c == nil {
			return ""
		}
		return string(c.Status) + "/" + c.Reason
	}
}

func conflicts(name string) func() []v1alpha1.PolicyConflict {
	return func() []v1alpha1.PolicyConflict {
		var p v1alpha1.RuntimePolicy
		if err := k8sClient.Get(ctx, client.ObjectKey{Name: name}, &p); err != nil {
			return nil
		}
		return p.Status.Conflicts
	}
}

func matchedNamespaces(name string) func() int32 {
	return func() int32 { return getPolicy(name).Status.MatchedNamespaces }
}

// eventReasons lists the reasons of the Events about a RuntimePolicy
// (cluster-scoped objects' Events live in the default namespace).
func eventReasons(name string) func() []string {
	return func() []string {
		var list eventsv1.EventList
		if err := k8sClient.List(ctx, &list, client.InNamespace(metav1.NamespaceDefault)); err != nil {
			return []string{err.Error()}
		}
		var out []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "RuntimePolicy" && e.Regarding.Name == name {
				out = append(out, e.Type+"/"+e.Reason)
			}
		}
		return out
	}
}

func externalHarness(ns, name, harnessID string) *v1alpha1.AgentHarness {
	return &v1alpha1.AgentHarness{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.AgentHarnessSpec{
			HarnessID: harnessID,
			Adapter:   v1alpha1.AdapterCodexAppServer,
			External: &v1alpha1.ExternalServer{
				URL:            "ws://127.0.0.1:4500",
				TokenSecretRef: v1alpha1.SecretKeyReference{Name: "token", Key: "token"},
			},
		},
	}
}

const timeout = 20 * time.Second

var _ = Describe("RuntimePolicy controller", func() {
	SetDefaultEventuallyTimeout(timeout)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)

	It("accepts a valid policy, counts the namespaces it selects and resolves built-in runtimes", func() {
		id := uid()
		newNamespace(map[string]string{"team": id})
		newNamespace(map[string]string{"team": id})
		newNamespace(map[string]string{"team": "other"})
		p := newPolicy(id, selecting(map[string]string{"team": id}), provider("p-"+id, "openclaw"),
			modelRef("p-"+id+"/a", "auto"), modelRef("p-"+id+"/b", "claude-cli"))
		create(p)

		Eventually(condition(id, v1alpha1.PolicyConditionAccepted)).Should(Equal("True/Accepted"))
		Eventually(condition(id, v1alpha1.PolicyConditionConflicted)).Should(Equal("False/NoConflicts"))
		Eventually(condition(id, v1alpha1.PolicyConditionReferencesResolved)).Should(Equal("True/Resolved"))
		Eventually(matchedNamespaces(id)).Should(Equal(int32(2)))
		Expect(getPolicy(id).Status.Conflicts).To(BeEmpty())
		Eventually(eventReasons(id)).Should(ContainElements("Normal/Accepted", "Normal/NoConflicts", "Normal/Resolved"))
	})

	It("reports an invalid namespaceSelector as Accepted=False/Invalid, with an Event, and recovers when it is fixed", func() {
		id := uid()
		p := newPolicy(id, provider("p-"+id, "codex"))
		p.Spec.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Bogus"}}}
		create(p)

		Eventually(condition(id, v1alpha1.PolicyConditionAccepted)).Should(Equal("False/Invalid"))
		Expect(condition(id, v1alpha1.PolicyConditionConflicted)()).To(Equal("Unknown/Invalid"))
		Expect(condition(id, v1alpha1.PolicyConditionReferencesResolved)()).To(Equal("Unknown/Invalid"))
		Eventually(eventReasons(id)).Should(ContainElement("Warning/Invalid"))

		cur := getPolicy(id)
		cur.Spec.NamespaceSelector = nil
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		Eventually(condition(id, v1alpha1.PolicyConditionAccepted)).Should(Equal("True/Accepted"))
		Expect(getPolicy(id).Status.ObservedGeneration).To(Equal(int64(2)))
	})

	It("marks the newer of two non-enforcing conflicting policies Conflicted, not the older, and clears it when the older goes", func() {
		id := uid()
		prov := "p-" + id
		older := newPolicy(id+"-1-older", provider(prov, "codex"))
		create(older)
		Eventually(condition(older.Name, v1alpha1.PolicyConditionConflicted)).Should(Equal("False/NoConflicts"))
		newer := newPolicy(id+"-2-newer", provider(prov, "openclaw"))
		create(newer)

		Eventually(condition(newer.Name, v1alpha1.PolicyConditionConflicted)).Should(Equal("True/OlderPolicyWins"))
		Expect(conflicts(newer.Name)()).To(Equal([]v1alpha1.PolicyConflict{{
			Key: "*/" + prov + "/*", Runtime: "openclaw", Winner: older.Name, WinnerRuntime: "codex",
		}}))
		By("the older policy, reconciled with the newer one in view, stays free of conflicts")
		// The newer policy's conflict came from an evaluation that held both
		// policies, and the shared evaluation only moves forward: a reconcile
		// of the older policy from now on has the newer one in view.
		reconcileAgain(older.Name)
		Expect(condition(older.Name, v1alpha1.PolicyConditionConflicted)()).To(Equal("False/NoConflicts"))
		Expect(conflicts(older.Name)()).To(BeEmpty())
		Expect(condition(newer.Name, v1alpha1.PolicyConditionAccepted)()).To(Equal("True/Accepted"), "a conflicted policy stays in force")
		Eventually(eventReasons(newer.Name)).Should(ContainElement("Warning/OlderPolicyWins"))

		Expect(k8sClient.Delete(ctx, older)).To(Succeed())
		Eventually(condition(newer.Name, v1alpha1.PolicyConditionConflicted)).Should(Equal("False/NoConflicts"))
		Eventually(conflicts(newer.Name)).Should(BeEmpty())
	})

	It("lets a newer Deny policy win against an older Allow policy", func() {
		id := uid()
		prov := "p-" + id
		allow := newPolicy(id+"-1-allow", modelRef(prov+"/gpt", "openclaw"), provider(prov, "codex"))
		create(allow)
		Eventually(condition(allow.Name, v1alpha1.PolicyConditionConflicted)).Should(Equal("False/NoConflicts"))
		deny := newPolicy(id+"-2-deny", provider(prov, "codex"), enforcing())
		create(deny)

		Eventually(condition(allow.Name, v1alpha1.PolicyConditionConflicted)).Should(Equal("True/DenyPolicyWins"))
		Expect(conflicts(allow.Name)()).To(Equal([]v1alpha1.PolicyConflict{{
			Key: "*/" + prov + "/gpt", Runtime: "openclaw", Winner: deny.Name, WinnerRuntime: "codex",
		}}))
		Eventually(condition(deny.Name, v1alpha1.PolicyConditionConflicted)).Should(Equal("False/NoConflicts"))
		Expect(getPolicy(allow.Name).Status.Conditions).To(ContainElement(HaveField("Message", ContainSubstring(deny.Name))))
		Eventually(eventReasons(allow.Name)).Should(ContainElement("Warning/DenyPolicyWins"))
	})

	It("re-evaluates matched namespaces and conflicts when namespace labels change", func() {
		id := uid()
		prov := "p-" + id
		a := newPolicy(id+"-1-a", selecting(map[string]string{"team": id}), provider(prov, "codex"))
		b := newPolicy(id+"-2-b", selecting(map[string]string{"env": id}), provider(prov, "openclaw"))
		create(a)
		create(b)
		Eventually(condition(b.Name, v1alpha1.PolicyConditionConflicted)).Should(Equal("False/NoConflicts"))
		Expect(matchedNamespaces(a.Name)()).To(BeZero())

		ns := newNamespace(map[string]string{"team": id})
		Eventually(matchedNamespaces(a.Name)).Should(Equal(int32(1)))
		Expect(condition(b.Name, v1alpha1.PolicyConditionConflicted)()).To(Equal("False/NoConflicts"))

		By("labelling the namespace so both policies select it")
		ns.Labels["env"] = id
		Expect(k8sClient.Update(ctx, ns)).To(Succeed())
		Eventually(condition(b.Name, v1alpha1.PolicyConditionConflicted)).Should(Equal("True/OlderPolicyWins"))
		Eventually(matchedNamespaces(b.Name)).Should(Equal(int32(1)))
		Expect(condition(a.Name, v1alpha1.PolicyConditionConflicted)()).To(Equal("False/NoConflicts"))

		By("removing the label again")
		delete(ns.Labels, "team")
		Expect(k8sClient.Update(ctx, ns)).To(Succeed())
		Eventually(condition(b.Name, v1alpha1.PolicyConditionConflicted)).Should(Equal("False/NoConflicts"))
		Eventually(matchedNamespaces(a.Name)).Should(BeZero())
	})

	It("announces each spec change once, on the policy, with the number of namespaces it selects", func() {
		id := uid()
		newNamespace(map[string]string{"team": id})
		newNamespace(map[string]string{"team": id})
		p := newPolicy(id, selecting(map[string]string{"team": id}), provider("p-"+id, "codex"))
		create(p)
		Eventually(matchedNamespaces(id)).Should(BeEquivalentTo(2))
		expectSettled([]string{id})

		cur := getPolicy(id)
		cur.Spec.Providers[0].Runtime = "openclaw"
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		note := id + "/SpecApplied/Generation 2 applied: the sessions of the 2 namespaces it selects, and of those it no longer selects, " +
			"re-resolve their runtime (status.policy of each AgentSession)."
		Eventually(eventCounts).Should(HaveKeyWithValue(note, BeEquivalentTo(1)))
		// The recorder sends Events in order: one for the creation would be there by now.
		for key := range eventCounts() {
			Expect(key).NotTo(HavePrefix(id+"/SpecApplied/Generation 1 "), "creating a policy is not a spec change")
		}
	})

	It("reports harness ids no visible AgentHarness declares, and resolves them when one appears", func() {
		id := uid()
		hid := "h-" + id
		ns := newNamespace(map[string]string{"team": id})
		other := newNamespace(nil)
		marker := "h2-" + id
		p := newPolicy(id, selecting(map[string]string{"team": id}), provider("p-"+id, hid), modelRef("x/y", "google-gemini-cli"), modelRef("x/z", marker))
		create(p)
		Eventually(condition(id, v1alpha1.PolicyConditionReferencesResolved)).Should(Equal("False/HarnessNotFound"))
		c := meta.FindStatusCondition(getPolicy(id).Status.Conditions, v1alpha1.PolicyConditionReferencesResolved)
		Expect(c.Message).To(ContainSubstring(hid))
		Expect(c.Message).NotTo(ContainSubstring("google-gemini-cli"), "CLI backend aliases always resolve")
		Eventually(eventReasons(id)).Should(ContainElement("Warning/HarnessNotFound"))

		By("a harness in a namespace the policy does not select is not visible to it")
		create(externalHarness(other.Name, "h", hid))
		// A harness created after it resolves the marker id: once the marker
		// is resolved, the controller has seen the hidden harness too.
		create(externalHarness(ns.Name, "marker", marker))
		Eventually(func() string {
			return meta.FindStatusCondition(getPolicy(id).Status.Conditions, v1alpha1.PolicyConditionReferencesResolved).Message
		}).Should(SatisfyAll(ContainSubstring(hid), Not(ContainSubstring(marker))))
		Expect(condition(id, v1alpha1.PolicyConditionReferencesResolved)()).To(Equal("False/HarnessNotFound"))

		By("a harness visible to a selected namespace resolves the id")
		h := externalHarness(ns.Name, "h", hid)
		create(h)
		Eventually(condition(id, v1alpha1.PolicyConditionReferencesResolved)).Should(Equal("True/Resolved"))
		Eventually(eventReasons(id)).Should(ContainElement("Normal/Resolved"))

		Expect(k8sClient.Delete(ctx, h)).To(Succeed())
		Eventually(condition(id, v1alpha1.PolicyConditionReferencesResolved)).Should(Equal("False/HarnessNotFound"))
	})

	It("caps status.conflicts at 64 keys, sorted", func() {
		id := uid()
		var olderOpts, newerOpts []testutil.PolicyOption
		for i := range 70 {
			ref := fmt.Sprintf("p-%s/m%02d", id, i)
			olderOpts = append(olderOpts, modelRef(ref, "codex"))
			newerOpts = append(newerOpts, modelRef(ref, "openclaw"))
		}
		create(newPolicy(id+"-1", olderOpts...))
		create(newPolicy(id+"-2", newerOpts...))
		Eventually(conflicts(id + "-2")).Should(HaveLen(64))
		cs := conflicts(id + "-2")()
		Expect(cs[0].Key).To(Equal("*/p-" + id + "/m00"))
		Expect(cs[63].Key).To(Equal("*/p-" + id + "/m63"))
		c := meta.FindStatusCondition(getPolicy(id+"-2").Status.Conditions, v1alpha1.PolicyConditionConflicted)
		Expect(c.Message).To(HavePrefix("70 key(s)"))
	})

	It("issues zero writes on a steady-state resync of 10 policies, through mapping functions and a restart", func() {
		id := uid()
		ns := newNamespace(map[string]string{"team": id})
		var names []string
		for i := range 10 {
			opts := []testutil.PolicyOption{provider(fmt.Sprintf("p-%s-%d", id, i%4), []string{"codex", "openclaw", "h-missing"}[i%3])}
			if i%2 == 0 {
				opts = append(opts, selecting(map[string]string{"team": id}))
			}
			if i == 7 {
				opts = append(opts, enforcing())
			}
			p := newPolicy(fmt.Sprintf("%s-%02d", id, i), opts...)
			create(p)
			names = append(names, p.Name)
		}
		var all v1alpha1.RuntimePolicyList
		settled := func() error {
			if err := k8sClient.List(ctx, &all); err != nil {
				return err
			}
			for _, p := range all.Items {
				if p.Status.ObservedGeneration != p.Generation || len(p.Status.Conditions) != 3 {
					return fmt.Errorf("%s not settled", p.Name)
				}
			}
			return nil
		}
		Eventually(settled).Should(Succeed())
		Expect(condition(names[4], v1alpha1.PolicyConditionConflicted)()).To(Equal("True/OlderPolicyWins"))
		Expect(condition(names[3], v1alpha1.PolicyConditionConflicted)()).To(Equal("True/DenyPolicyWins"))
		Expect(all.Items).To(HaveLen(len(names)), "only this spec's policies exist")
		expectSettled(names)
		Expect(calls.Writes()).To(ContainElement("apply/status RuntimePolicy "+names[0]), "the counting client sees the reconciler's status writes")
		eventsBefore := stableEventCounts()

		By("re-triggering every policy through the namespace mapping with an irrelevant label")
		calls.Reset()
		var cur corev1.Namespace
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ns), &cur)).To(Succeed())
		cur.Labels["resync"] = "1"
		Expect(k8sClient.Update(ctx, &cur)).To(Succeed())
		expectAllReconciled(names)
		Expect(slices.ContainsFunc(names, func(name string) bool {
			return slices.ContainsFunc(calls.Reconciles(name), func(r testutil.Reconcile) bool { return r.Returned != "" && r.Read(&cur) })
		})).To(BeTrue(), "one reconcile evaluated the policies with the relabeled namespace, for all of them")
		Expect(calls.Writes()).To(BeEmpty())

		By("restarting the manager over the same objects")
		mgr.stop()
		mgr = startManager()
		expectAllReconciled(names)
		Expect(calls.Writes()).To(BeEmpty())
		Expect(eventCounts()).To(Equal(eventsBefore), "no Event without a condition change")
	})
})

// reconcileAgain makes the controller reconcile the named policy once more
// (an annotation changes its resourceVersion, not its generation) and waits
// until that reconcile has returned.
func reconcileAgain(name string) {
	GinkgoHelper()
	p := getPolicy(name)
	patch := client.MergeFrom(p.DeepCopy())
	metav1.SetMetaDataAnnotation(&p.ObjectMeta, "test.harness.openclaw.dev/touched", uid())
	Expect(k8sClient.Patch(ctx, p, patch)).To(Succeed())
	expectAllReconciled([]string{name})
}

// expectAllReconciled waits until the reconciler acted on the current state of
// each named policy: a reconcile since the last calls.Reset that read the
// policy at its current resourceVersion, and each of seen at its
// resourceVersion or a later one, has returned.
func expectAllReconciled(names []string, seen ...client.Object) {
	GinkgoHelper()
	expectEachCurrent(names, func(p *v1alpha1.RuntimePolicy) error { return calls.ReconciledAt(p, seen...) })
}

// expectSettled waits until each named policy is at the reconciler's
// fixpoint: its latest reconcile read its current resourceVersion, returned
// and wrote nothing, so no write of an earlier state is still to come.
func expectSettled(names []string) {
	GinkgoHelper()
	expectEachCurrent(names, func(p *v1alpha1.RuntimePolicy) error { return calls.Settled(p) })
}

// expectEachCurrent waits until check holds for every named policy as the
// API server has it now, all at once.
func expectEachCurrent(names []string, check func(*v1alpha1.RuntimePolicy) error) {
	GinkgoHelper()
	Eventually(func() error {
		var errs []error
		for _, name := range names {
			var p v1alpha1.RuntimePolicy
			if err := k8sClient.Get(ctx, client.ObjectKey{Name: name}, &p); err != nil {
				return err
			}
			errs = append(errs, check(&p))
		}
		return errors.Join(errs...)
	}).Should(Succeed())
}

// stableEventCounts returns eventCounts once it has not changed for a second
// (the recorder sends Events asynchronously).
func stableEventCounts() map[string]int32 {
	GinkgoHelper()
	var last map[string]int32
	Eventually(func() bool {
		cur := eventCounts()
		same := last != nil && equality.Semantic.DeepEqual(cur, last)
		last = cur
		return same
	}, timeout, time.Second).Should(BeTrue())
	return last
}

// eventCounts sums the occurrences of every RuntimePolicy Event by reason and object.
func eventCounts() map[string]int32 {
	GinkgoHelper()
	var list eventsv1.EventList
	Expect(k8sClient.List(ctx, &list, client.InNamespace(metav1.NamespaceDefault))).To(Succeed())
	out := map[string]int32{}
	for _, e := range list.Items {
		if e.Regarding.Kind != "RuntimePolicy" {
			continue
		}
		n := int32(1)
		if e.Series != nil {
			n = e.Series.Count
		}
		out[e.Regarding.Name+"/"+e.Reason+"/"+strings.TrimSpace(e.Note)] += n
	}
	return out
}
