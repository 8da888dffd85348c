package engine

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

var _ = Describe("Secrets a turn names", func() {
	const secretValue = "secret-access-value-5f0a"
	alice := store.Requester{User: "alice", UID: "alice-uid", Groups: []string{"system:authenticated"}}

	// The dispatcher reads Secrets only where the platform gave it a Role
	// (its harness namespaces). Elsewhere the API server's answer is
	// Forbidden, and asking again changes nothing: the refusal says so and
	// is not retryable, where it used to be a 503 "retry" forever.
	It("refuses for good a Secret in a namespace where the dispatcher may not read Secrets, saying why", func() {
		cfg := rest.CopyConfig(env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "dispatcher-without-secret-roles"}
		restricted, err := client.New(cfg, client.Options{Scheme: env.Scheme})
		Expect(err).NotTo(HaveOccurred())
		ns := newNamespace()
		createSecrets(ns, "token", secretValue, "mcp-token")
		grantSecretGet(ns, "mcp-token-reader", alice.User, "mcp-token")
		ref := &wire.SecretKeyRef{Name: "mcp-token", Key: "token"}

		e := &Engine{reader: restricted, writer: k8sClient, log: logs.logger()}
		value, code, msg := e.secretValue(ctx, ns, ref, alice)
		Expect(value).To(BeEmpty())
		Expect(code).To(Equal(wire.CodeForbidden))
		Expect(code.Retryable()).To(BeFalse())
		Expect(msg).To(ContainSubstring(`the dispatcher may not read Secrets in namespace "` + ns + `"`))
		Expect(msg).To(ContainSubstring("harnessNamespaces"))

		e.reader = k8sClient
		value, code, msg = e.secretValue(ctx, ns, ref, alice)
		Expect(msg).To(BeEmpty(), "control: a dispatcher that may read the Secret")
		Expect(code).To(BeEmpty())
		Expect(value).To(Equal(secretValue))
	})
})
