package webhook_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// handlerCalls counts the calls the webhook server's handler at path
// answered (controller_runtime_webhook_requests_total, every code). The
// counter moves before the answer leaves the server (the answer is
// buffered until the handler returns), so a write that returned has been
// counted.
func handlerCalls(path string) float64 {
	GinkgoHelper()
	families, err := ctrlmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	total := 0.0
	for _, f := range families {
		if f.GetName() != "controller_runtime_webhook_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "webhook" && l.GetValue() == path {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

// webhookPaths are the paths of a kind's mutating and validating webhooks.
func webhookPaths(kind string) []string {
	return []string{"/mutate-harness-openclaw-dev-v1alpha1-" + kind, "/validate-harness-openclaw-dev-v1alpha1-" + kind}
}

// callsOf reads handlerCalls of every path.
func callsOf(paths []string) map[string]float64 {
	out := map[string]float64{}
	for _, p := range paths {
		out[p] = handlerCalls(p)
	}
	return out
}

// expectCalls asserts each path's handler answered want calls since before:
// none when want is 0, else at least want. The API server sends a webhook
// call again after a connection reset, so a loaded run can count one
// request twice; what the matchCondition decides is whether a handler is
// called at all.
func expectCalls(paths []string, before map[string]float64, want float64, why string) {
	GinkgoHelper()
	for _, p := range paths {
		if want == 0 {
			Expect(handlerCalls(p)-before[p]).To(BeZero(), "%s: calls of %s", why, p)
			continue
		}
		Expect(handlerCalls(p)-before[p]).To(BeNumerically(">=", want), "%s: calls of %s", why, p)
	}
}

// The webhook configurations' matchCondition (webhook.SpecChangedCondition):
// an update that leaves spec alone never reaches a handler; one that
// changes spec does, both the defaulting and the validating one.
var _ = Describe("Updates that leave spec alone skip the webhooks", func() {
	DescribeTable("a finalizer or a label reaches no handler; a spec change reaches both",
		func(kind string, build func(ns string) client.Object, changeSpec func(client.Object)) {
			paths := webhookPaths(kind)
			obj := build(newNamespace(nil))
			before := callsOf(paths)
			Expect(k8sClient.Create(ctx, obj)).To(Succeed())
			DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, obj))).To(Succeed()) })
			expectCalls(paths, before, 1, "control: a create")

			before = callsOf(paths)
			controllerutil.AddFinalizer(obj, "example.com/cleanup")
			Expect(k8sClient.Update(ctx, obj)).To(Succeed())
			obj.SetLabels(map[string]string{"team": "a"})
			Expect(k8sClient.Update(ctx, obj)).To(Succeed())
			expectCalls(paths, before, 0, "a finalizer and a label")

			changeSpec(obj)
			Expect(k8sClient.Update(ctx, obj)).To(Succeed())
			expectCalls(paths, before, 1, "control: a spec change")

			before = callsOf(paths)
			controllerutil.RemoveFinalizer(obj, "example.com/cleanup")
			Expect(k8sClient.Update(ctx, obj)).To(Succeed())
			expectCalls(paths, before, 0, "the finalizer removed")
		},
		Entry("AgentSession", "agentsession", func(ns string) client.Object { return session(ns, "s", "openai/gpt-5") },
			func(o client.Object) { o.(*v1alpha1.AgentSession).Spec.Model = "openai/gpt-5-mini" }),
		Entry("AgentHarness", "agentharness", func(ns string) client.Object { return externalHarness(ns, "codex", "codex") },
			func(o client.Object) { o.(*v1alpha1.AgentHarness).Spec.External.URL = "wss://127.0.0.1:4501" }),
		Entry("RuntimePolicy", "runtimepolicy", func(string) client.Object {
			return providerPolicy("skip-unchanged", uniqueProvider(), v1alpha1.RuntimeCodex, "")
		},
			func(o client.Object) {
				o.(*v1alpha1.RuntimePolicy).Spec.Providers[0].Runtime = v1alpha1.RuntimeOpenClaw
			}),
	)
})
