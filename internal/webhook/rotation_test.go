package webhook_test

import (
	"crypto/tls"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// servedNotAfter is the expiry of the certificate the webhook server presents
// (cert-controller gives every certificate serial 1, so expiry tells them apart).
func servedNotAfter() time.Time {
	GinkgoHelper()
	conn, err := tls.Dial("tcp", webhookAddr, &tls.Config{InsecureSkipVerify: true, ServerName: "localhost"}) //nolint:gosec // reads the served certificate only
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = conn.Close() }()
	return conn.ConnectionState().PeerCertificates[0].NotAfter
}

var _ = Describe("self-managed webhook certificates", func() {
	It("rotate before they expire while the webhooks keep answering", func() {
		// The suite's serving certificates live 30 s and are replaced 20 s
		// before expiry; admission requests run throughout two rotations.
		ns := newNamespace(nil)
		first := servedNotAfter()
		seen := map[time.Time]bool{first: true}
		deadline := time.Now().Add(90 * time.Second)
		requests := 0
		for len(seen) < 3 && time.Now().Before(deadline) {
			h := externalHarness(ns, "dry-run-"+rand.String(5), "")
			Expect(k8sClient.Create(ctx, h, client.DryRunAll)).To(Succeed(), "admission failed during rotation (request %d)", requests)
			Expect(h.Spec.Support).NotTo(BeNil(), "the defaulting webhook answered")
			requests++
			notAfter := servedNotAfter()
			Expect(notAfter).To(BeTemporally(">", time.Now()), "the server presents an expired certificate")
			seen[notAfter] = true
			time.Sleep(500 * time.Millisecond)
		}
		Expect(seen).To(HaveLen(3), "want two rotations of the serving certificate within 90 s")
		GinkgoWriter.Printf("%d admission requests answered across %d serving certificates\n", requests, len(seen))
	})
})
