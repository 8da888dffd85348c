package agentharness

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	harnessv1alpha1 "github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/wire"
)

var _ = Describe("capabilities in status", func() {
	It("lists what a codex-app-server harness offers before any server is ready, isolated completion and finalization per model", func() {
		ns := newNamespace()
		h := managedHarness(ns, "codex", 1)
		Expect(k8sClient.Create(ctx, h)).To(Succeed())
		caps := func(h *harnessv1alpha1.AgentHarness) []harnessv1alpha1.HarnessCapability {
			return h.Status.Capabilities
		}
		Eventually(statusOf(h)).Should(WithTransform(caps, Equal(wire.AdapterCapabilities(harnessv1alpha1.AdapterCodexAppServer))))
		got := getHarness(h).Status.Capabilities
		Expect(wire.CapabilityOf(got, harnessv1alpha1.CapabilityIsolatedCompletion)).To(Equal(harnessv1alpha1.CapabilityModelDependent))
		Expect(wire.CapabilityOf(got, harnessv1alpha1.CapabilityTurns)).To(Equal(harnessv1alpha1.CapabilitySupported))
	})
})
