//go:build e2e

package openclaw

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/harness/codexconfig"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// imageHarness is a Codex harness of this spec's own: its app-server has
// image generation on (codexconfig.ImageGenerationArgs) and a ChatGPT
// login its provider (the stub) authenticates with, without which Codex
// offers no image tool; the suite's Codex has neither.
const imageHarness = "codex-images"

// dotPNG is a 1×1 PNG: the image the stub model "generates".
const dotPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

var _ = Describe("An image Codex generates on the cluster", func() {
	It("reaches OpenClaw as the reply's media, saved by OpenClaw from the bytes the turn streamed", func(ctx context.Context) {
		createImageHarness(ctx)
		marker := "marker-" + randomHex()
		reply := "Here is the dot " + marker
		// The model calls Codex's image tool; Codex asks the stub's Images
		// API, then the model answers with the tool's result.
		prompt := "a black dot " + marker
		stub.Image(prompt, dotPNG)
		stub.When(marker, stubmodel.Call(stubmodel.FunctionCall{Namespace: "image_gen", Name: "imagegen",
			Arguments: `{"prompt":"` + prompt + `"}`}), stubmodel.Text(reply))
		s := newSession(ctx, imageHarness)

		run := gateway.turn(ctx, s.id, s.key, "Draw a dot "+marker)

		Expect(run.exit).To(Equal(0), "%s", run)
		reqs := codexRequests(marker)
		Expect(reqs).To(HaveLen(2), "Codex's two model requests, around its tool:\n%s", run)
		Expect(offeredTools(reqs[0])).To(ContainElement("image_gen.imagegen"), "Codex offered its image tool:\n%s", run)
		var images []string
		for _, r := range stub.ImageRequests() {
			images = append(images, r.Prompt)
		}
		Expect(images).To(ContainElement(prompt), "Codex asked the Images API once for the model's prompt:\n%s", run)
		res := run.result()
		Expect(res.Meta.AgentMeta.AgentHarnessID).To(Equal(pluginID), "%s", run)
		var media []string
		for _, p := range res.Payloads {
			media = append(media, p.MediaURLs...)
			if p.MediaURL != "" {
				media = append(media, p.MediaURL)
			}
		}
		Expect(res.texts()).To(ContainElement(ContainSubstring(reply)), "%s", run)
		Expect(media).NotTo(BeEmpty(), "the reply carries the image:\n%s", run)
		Expect(media).NotTo(ContainElement(HavePrefix("native-media:")), "never the stream's name for it:\n%s", run)
		want, err := base64.StdEncoding.DecodeString(dotPNG)
		Expect(err).NotTo(HaveOccurred())
		saved, err := os.ReadFile(media[0])
		Expect(err).NotTo(HaveOccurred(), "OpenClaw saved the image where its media go:\n%s", run)
		Expect(bytes.Equal(saved, want)).To(BeTrue(), "the saved file is the generated image")
		Expect(s.lastTurn(ctx).Outcome).To(Equal(v1alpha1.TurnSucceeded))
		Expect(s.get(ctx).Status.AgentHarnessID).To(Equal(imageHarness))
	})
})

// createImageHarness starts this spec's app-server (stopped when the spec
// ends) and the external AgentHarness on it, a copy of the suite's `codex`
// but for its server and token.
func createImageHarness(ctx context.Context) {
	GinkgoHelper()
	token := "images-" + randomHex()
	dir := GinkgoTB().TempDir()
	Expect(codextest.WriteChatGPTLogin(dir)).To(Succeed())
	srv := codextest.Start(GinkgoTB(), codextest.Options{
		ProviderURL: stub.BaseURL(), Dir: dir, Transport: codextest.WebSocket, WSToken: token,
		ExtraArgs: append(codextest.LoginProviderArgs(stub.BaseURL()), codexconfig.ImageGenerationArgs()...),
	})
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: imageHarness + "-token", Namespace: agentsNS},
		StringData: map[string]string{"token": token},
	}
	Expect(k8s.Create(ctx, secret)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, secret))).To(Succeed()) })
	base := &v1alpha1.AgentHarness{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: agentsNS, Name: codexHarness}, base)).To(Succeed())
	h := &v1alpha1.AgentHarness{
		ObjectMeta: metav1.ObjectMeta{Name: imageHarness, Namespace: agentsNS},
		Spec:       *base.Spec.DeepCopy(),
	}
	h.Spec.HarnessID = imageHarness
	h.Spec.External.URL = srv.URL
	h.Spec.External.TokenSecretRef.Name = secret.Name
	h.Spec.External.TokenSecretRef.Key = "token"
	Expect(k8s.Create(ctx, h)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, h))).To(Succeed()) })
	waitHarnessReady(ctx, k8s, imageHarness)
}
