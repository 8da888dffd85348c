package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/policy/snapshot"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// secretsFromAPI reads Secrets through api and everything else through the
// informer cache, as the dispatcher does.
type secretsFromAPI struct {
	client.Reader
	api client.Reader
}

func (r secretsFromAPI) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Secret); ok {
		return r.api.Get(ctx, key, obj, opts...)
	}
	return r.Reader.Get(ctx, key, obj, opts...)
}

// deliveries records which object versions an informer's handler was given,
// after the selection views' own handler ran on them.
type deliveries struct {
	mu   sync.Mutex
	seen map[string]bool // kind/namespace/name@resourceVersion, or …@deleted
}

func deliveryKey(obj any, deleted bool) string {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj, deleted = d.Obj, true
	}
	o, ok := obj.(client.Object)
	if !ok {
		return ""
	}
	v := o.GetResourceVersion()
	if deleted {
		v = "deleted"
	}
	return kindOf(o) + "/" + o.GetNamespace() + "/" + o.GetName() + "@" + v
}

// kindOf names the kind of the views' objects (typed objects read through a
// client or an informer carry no kind).
func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *v1alpha1.AgentHarness:
		return "AgentHarness"
	case *v1alpha1.RuntimePolicy:
		return "RuntimePolicy"
	case *corev1.Namespace:
		return "Namespace"
	}
	return "?"
}

// after runs the views' handler, then notes the event: once noted, the
// views have been invalidated by it.
func (d *deliveries) after(h toolscache.ResourceEventHandlerFuncs) toolscache.ResourceEventHandlerFuncs {
	note := func(obj any, deleted bool) {
		d.mu.Lock()
		d.seen[deliveryKey(obj, deleted)] = true
		d.mu.Unlock()
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { h.AddFunc(obj); note(obj, false) },
		UpdateFunc: func(old, obj any) { h.UpdateFunc(old, obj); note(obj, false) },
		DeleteFunc: func(obj any) { h.DeleteFunc(obj); note(obj, true) },
	}
}

// wait blocks until the informer delivered obj at its current
// resourceVersion.
func (d *deliveries) wait(obj client.Object) {
	GinkgoHelper()
	key := deliveryKey(obj, false)
	Eventually(func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.seen[key]
	}).Should(BeTrue(), "the informer never delivered %s", key)
}

// The dispatcher's engine keeps each namespace's selection inputs between
// turns (Options.SelectionViews over its informer cache). A change of a
// RuntimePolicy, an AgentHarness or the Namespace's labels decides the very
// next turn once the informer has delivered it: no kept view outlives it.
// The engine here reads through its own informer cache (the suite's other
// specs read directly), fed by the same API server.
var _ = Describe("Turns decided from the selection views an informer cache keeps", Ordered, func() {
	const name = "vw"
	var (
		ns, hns   string
		viewEng   *Engine
		delivered = &deliveries{seen: map[string]bool{}}
		pol       *v1alpha1.RuntimePolicy
		h         *v1alpha1.AgentHarness
		c         cache.Cache
		turnN     int
	)
	// runs asserts that a turn started right now runs on Codex.
	runs := func() {
		GinkgoHelper()
		turnN++
		marker := "vw-turn-" + string(rune('a'+turnN))
		stub.When(marker, stubmodel.Text("VW-REPLY"))
		c := &collector{}
		err := viewEng.Turn(ctx, ns, name, withRouteFacts(textReq("run-"+marker, marker+" hello")), c.sink)
		Expect(err).NotTo(HaveOccurred())
		Expect(resultOf(c.events()).AgentHarnessID).To(Equal("codex"))
	}
	// refused asserts that a turn started right now is refused with code,
	// and that nothing ran on Codex.
	refused := func(code wire.ErrorCode) {
		GinkgoHelper()
		turnN++
		before := len(stub.Requests())
		c := &collector{}
		err := viewEng.Turn(ctx, ns, name, withRouteFacts(textReq("run-vw-refused-"+string(rune('a'+turnN)), "vw refused")), c.sink)
		var te *wire.Error
		Expect(errors.As(err, &te)).To(BeTrue(), "%v", err)
		Expect(te.Code).To(Equal(code), te.Message)
		Expect(stub.Requests()).To(HaveLen(before), "nothing ran on Codex")
	}

	BeforeAll(func() {
		ns, hns = newNamespace(), newNamespace()
		// The harness lives in hns and admits every namespace that consents;
		// ns consents with its label.
		h = createCodex(hns, codexSrv.URL)
		updateHarness(h, true, func(h *v1alpha1.AgentHarness) {
			h.Spec.AllowedNamespaces = &v1alpha1.AllowedNamespaces{From: v1alpha1.NamespacesFromAll}
		})
		consent := setConsent(ns, hns, true)
		pol = nsPolicy(ns, "codex")
		newSession(ns, name, "codex/stub-model")

		cctx, stop := context.WithCancel(ctx)
		DeferCleanup(stop)
		var err error
		c, err = cache.New(env.Config, cache.Options{Scheme: env.Scheme})
		Expect(err).NotTo(HaveOccurred())
		views := snapshot.NewViews(c)
		for _, obj := range []client.Object{&v1alpha1.AgentHarness{}, &v1alpha1.RuntimePolicy{}, &corev1.Namespace{}} {
			inf, err := c.GetInformer(cctx, obj)
			Expect(err).NotTo(HaveOccurred())
			_, err = inf.AddEventHandler(delivered.after(views.EventHandler()))
			Expect(err).NotTo(HaveOccurred())
		}
		go func() { _ = c.Start(cctx) }()
		Expect(c.WaitForCacheSync(cctx)).To(BeTrue())
		Eventually(func() error {
			return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &v1alpha1.AgentSession{})
		}).Should(Succeed())
		viewEng = New(secretsFromAPI{Reader: c, api: k8sClient}, k8sClient, jrnl, Options{Logger: logs.logger(),
			ReattachTimeout: 3 * time.Second, ExternalDial: testutil.LoopbackExternalDial, SelectionViews: views})
		DeferCleanup(viewEng.Close)
		for _, obj := range []client.Object{h, pol, consent} {
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
			delivered.wait(obj)
		}
		runs() // the namespace's view is now kept
	})

	It("follows a RuntimePolicy change at the next turn", func() {
		setPolicyRuntime(pol, v1alpha1.RuntimeOpenClaw)
		delivered.wait(pol)
		refused(wire.CodeEmbeddedRuntimeSelected)
		setPolicyRuntime(pol, "codex")
		delivered.wait(pol)
		runs()
	})

	It("follows an AgentHarness change at the next turn", func() {
		updateHarness(h, true, func(h *v1alpha1.AgentHarness) { h.Spec.AllowedNamespaces = nil })
		delivered.wait(h)
		refused(wire.CodeHarnessNotRegistered)
		updateHarness(h, true, func(h *v1alpha1.AgentHarness) {
			h.Spec.AllowedNamespaces = &v1alpha1.AllowedNamespaces{From: v1alpha1.NamespacesFromAll}
		})
		delivered.wait(h)
		runs()
	})

	It("follows a change of the Namespace's labels at the next turn", func() {
		delivered.wait(setConsent(ns, hns, false))
		refused(wire.CodeHarnessNotRegistered)
		delivered.wait(setConsent(ns, hns, true))
		runs()
	})

	// snapshot.Watch, as cmd/dispatcher calls it, registers the views on
	// each of the three informers: a kept view changes with each kind.
	It("keeps views that snapshot.Watch drops on each kind's events", func() {
		watched, err := snapshot.Watch(ctx, c)
		Expect(err).NotTo(HaveOccurred())
		visible := func() []string {
			v, err := watched.View(ctx, ns)
			Expect(err).NotTo(HaveOccurred())
			var out []string
			for _, h := range v.Harnesses {
				out = append(out, h.Namespace+"/"+h.Name)
			}
			for _, p := range v.Policies {
				out = append(out, p.Name)
			}
			return out
		}
		Eventually(visible).Should(ContainElements(hns+"/codex", pol.Name))

		By("an AgentHarness")
		updateHarness(h, true, func(h *v1alpha1.AgentHarness) { h.Spec.AllowedNamespaces = nil })
		Eventually(visible).ShouldNot(ContainElement(hns + "/codex"))
		By("the Namespace's labels")
		updateHarness(h, true, func(h *v1alpha1.AgentHarness) {
			h.Spec.AllowedNamespaces = &v1alpha1.AllowedNamespaces{From: v1alpha1.NamespacesFromAll}
		})
		Eventually(visible).Should(ContainElement(hns + "/codex"))
		setConsent(ns, hns, false)
		Eventually(visible).ShouldNot(ContainElement(hns + "/codex"))
		By("a RuntimePolicy")
		Expect(k8sClient.Delete(ctx, pol)).To(Succeed())
		Eventually(visible).ShouldNot(ContainElement(pol.Name))
	})
})

// setConsent labels (or unlabels) namespace ns as consenting to the
// harnesses of namespace from, and returns the Namespace as written.
func setConsent(ns, from string, consent bool) *corev1.Namespace {
	GinkgoHelper()
	n := &corev1.Namespace{}
	Eventually(func() error {
		if err := k8sClient.Get(ctx, client.ObjectKey{Name: ns}, n); err != nil {
			return err
		}
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		if consent {
			n.Labels[v1alpha1.AcceptHarnessesLabel(from)] = v1alpha1.AcceptHarnessesLabelValue
		} else {
			delete(n.Labels, v1alpha1.AcceptHarnessesLabel(from))
		}
		return k8sClient.Update(ctx, n)
	}).Should(Succeed())
	return n
}
