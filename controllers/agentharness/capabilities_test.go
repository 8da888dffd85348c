package agentharness

import (
	"fmt"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
)

var _ = Describe("capabilities in status", func() {
	It("lists what a codex-app-server harness offers before any server is ready, isolated completion and finalization per model", func() {
		ns := newNamespace()
		h := managedHarness(ns, "codex", 1)
		Expect(k8sClient.Create(ctx, h)).To(Succeed())
		caps := func(h *v1alpha1.AgentHarness) []v1alpha1.HarnessCapability {
			return h.Status.Capabilities
		}
		Eventually(statusOf(h)).Should(WithTransform(caps, Equal(wire.AdapterCapabilities(v1alpha1.AdapterCodexAppServer))))
		got := getHarness(h).Status.Capabilities
		Expect(wire.CapabilityOf(got, v1alpha1.CapabilityIsolatedCompletion)).To(Equal(v1alpha1.CapabilityModelDependent))
		Expect(wire.CapabilityOf(got, v1alpha1.CapabilityTurns)).To(Equal(v1alpha1.CapabilitySupported))
		for _, c := range got {
			Expect(c.ExcludedModels).To(BeEmpty(), "no handshake has read a catalog: %s", c.Name)
		}
	})

	// Codex 0.169.0 cannot prove an empty native tool surface for the models
	// of its catalog (codex.CanIsolate), so a gateway must see which models
	// those are before it asks: the real server's model/list, hidden models
	// included, read by the handshake.
	It("lists the real server's catalog models as excluded from isolated completion and finalization once a server is Ready", func() {
		ns := newNamespace()
		h := managedHarness(ns, "codex", 1)
		Expect(k8sClient.Create(ctx, h)).To(Succeed())
		sts := waitStatefulSet(h)
		host := nextHost()
		startPodServer(codexBin, sts, host)
		createServerPod(sts, 0, host, "registry.example/codex@"+digest('c'))
		Eventually(statusOf(h)).Should(haveCondition(v1alpha1.HarnessConditionReady, "True/Ready"))

		got := getHarness(h).Status.Capabilities
		excluded := func(n v1alpha1.HarnessCapabilityName) []string {
			for _, c := range got {
				if c.Name == n {
					Expect(c.Support).To(Equal(v1alpha1.CapabilityModelDependent), "%s", n)
					return c.ExcludedModels
				}
			}
			Fail(fmt.Sprintf("%s is not listed", n))
			return nil
		}
		catalog := excluded(v1alpha1.CapabilityIsolatedCompletion)
		// gpt-6.1-sol is the catalog's default; codex-auto-review is hidden.
		Expect(catalog).To(ContainElements("gpt-6.1-sol", "gpt-5.5", "codex-auto-review"))
		Expect(catalog).NotTo(ContainElement(codextest.StubModel))
		Expect(slices.IsSorted(catalog)).To(BeTrue())
		Expect(excluded(v1alpha1.CapabilitySettledTurnFinalization)).To(Equal(catalog))
		for _, c := range got {
			if c.Support != v1alpha1.CapabilityModelDependent {
				Expect(c.ExcludedModels).To(BeEmpty(), "%s is not per model", c.Name)
			}
		}
	})
})
