package webhook_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/internal/platform/certs"
)

// servedCert is the certificate the webhook server presents.
func servedCert() *x509.Certificate {
	GinkgoHelper()
	conn, err := tls.Dial("tcp", webhookAddr, &tls.Config{InsecureSkipVerify: true, ServerName: "localhost"}) //nolint:gosec // reads the served certificate only
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = conn.Close() }()
	return conn.ConnectionState().PeerCertificates[0]
}

// parseCert parses the first PEM certificate.
func parseCert(certPEM []byte) *x509.Certificate {
	GinkgoHelper()
	block, _ := pem.Decode(certPEM)
	Expect(block).NotTo(BeNil(), "no PEM certificate")
	cert, err := x509.ParseCertificate(block.Bytes)
	Expect(err).NotTo(HaveOccurred())
	return cert
}

// servingCertSignedBy issues a serving certificate for localhost that
// expires at notAfter, signed by the CA of the certificate Secret (its key is
// PKCS#1, as cert-controller writes it).
func servingCertSignedBy(caPEM, caKeyPEM []byte, notAfter time.Time) (certPEM, keyPEM []byte) {
	GinkgoHelper()
	ca := parseCert(caPEM)
	block, _ := pem.Decode(caKeyPEM)
	Expect(block).NotTo(BeNil(), "no PEM CA key")
	caKey, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	Expect(err).NotTo(HaveOccurred())
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	Expect(err).NotTo(HaveOccurred())
	tmpl := &x509.Certificate{
		SerialNumber: serial.Add(serial, big.NewInt(2)), // cert-controller's serials are 1
		Subject:      pkix.Name{CommonName: "localhost"},
		DNSNames:     []string{"localhost"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	Expect(err).NotTo(HaveOccurred())
	keyDER, err := x509.MarshalECPrivateKey(key)
	Expect(err).NotTo(HaveOccurred())
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

var _ = Describe("self-managed webhook certificates", func() {
	It("are replaced before they expire while the webhooks keep answering", func() {
		// The suite's serving certificates live an hour and are replaced
		// when less than 30 minutes are left. The spec puts a certificate
		// from the same CA with 10 minutes left into the Secret — what the
		// Secret holds after 50 minutes of serving — and waits for the
		// proof of a rotation: the Secret holds a new certificate that
		// outlives it, and the server presents that one. Admission requests
		// are answered all along.
		ns := newNamespace(nil)
		key := types.NamespacedName{Namespace: certNamespace, Name: certSecret}
		var secret corev1.Secret
		Expect(k8sClient.Get(ctx, key, &secret)).To(Succeed())
		caPEM := secret.Data[certs.CACertKey]
		nearExpiry := time.Now().Add(certLookahead / 3).Truncate(time.Second)
		secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey] =
			servingCertSignedBy(caPEM, secret.Data[certs.CAKeyKey], nearExpiry)
		Expect(k8sClient.Update(ctx, &secret)).To(Succeed())

		roots := x509.NewCertPool()
		Expect(roots.AppendCertsFromPEM(caPEM)).To(BeTrue())
		requests := 0
		Eventually(func(g Gomega) {
			// Every poll is also an admission request; one that fails fails
			// the spec at once (Expect, not g.Expect).
			h := externalHarness(ns, "dry-run-"+utilrand.String(5), "")
			Expect(k8sClient.Create(ctx, h, client.DryRunAll)).To(Succeed(), "admission failed during rotation (request %d)", requests)
			Expect(h.Spec.Support).NotTo(BeNil(), "the defaulting webhook answered")
			requests++
			served := servedCert()
			Expect(served.NotAfter).To(BeTemporally(">", time.Now()), "the server presents an expired certificate")

			var now corev1.Secret
			g.Expect(k8sClient.Get(ctx, key, &now)).To(Succeed())
			g.Expect(now.Data[certs.CACertKey]).To(Equal(caPEM), "the CA changed")
			stored := parseCert(now.Data[corev1.TLSCertKey])
			g.Expect(stored.NotAfter).To(BeTemporally(">", nearExpiry.Add(certLookahead)), "the certificate near its expiry was not replaced")
			g.Expect(served.Raw).To(Equal(stored.Raw), "the server does not present the replacement")
			_, err := served.Verify(x509.VerifyOptions{Roots: roots, DNSName: "localhost"})
			g.Expect(err).NotTo(HaveOccurred(), "the replacement does not chain to the CA")
		}, 2*time.Minute, 250*time.Millisecond).Should(Succeed())
		GinkgoWriter.Printf("%d admission requests answered while the serving certificate was replaced\n", requests)
	})
})
