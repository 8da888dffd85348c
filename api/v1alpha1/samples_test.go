package v1alpha1_test

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/internal/cli/manifest"
	"github.com/openclaw/harness-operator/internal/cli/openclawconfig"
)

var _ = Describe("config/samples", func() {
	It("are all accepted by the API server, the managed example included", func() {
		samples := filepath.Join("..", "..", "config", "samples")
		var applied []string
		for _, dir := range []string{samples, filepath.Join(samples, "managed")} {
			objs, err := manifest.ReadPath(dir)
			Expect(err).NotTo(HaveOccurred())
			Expect(objs).NotTo(BeEmpty(), "no manifests in %s", dir)
			for _, obj := range objs {
				Expect(k8sClient.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("samples-test"), client.ForceOwnership)).
					To(Succeed(), "%s %s", obj.GetKind(), obj.GetName())
				applied = append(applied, obj.GetKind()+"/"+obj.GetName())
			}
		}
		Expect(applied).To(ContainElements(
			"Namespace/agents", "RuntimePolicy/codex-only", "AgentHarness/codex",
			"AgentSession/demo", "AgentHarness/codex-managed"))
	})
})

var _ = Describe("kubectl harness import openclaw-config", func() {
	It("produces a RuntimePolicy the API server accepts", func() {
		data, err := os.ReadFile(filepath.Join("..", "..", "cmd", "kubectl-harness", "testdata", "openclaw", "codex-only.json5"))
		Expect(err).NotTo(HaveOccurred())
		res, err := openclawconfig.Import(data, openclawconfig.Options{Name: "imported-codex-only", SessionOverrides: "Deny"})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Policy.Spec.Agents).NotTo(BeEmpty())
		Expect(k8sClient.Create(ctx, res.Policy)).To(Succeed())
	})
})
