package dispatcher_test

import (
	"crypto/rand"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/engine"
	"github.com/openclaw/harness-operator/internal/dispatcher/turntoken"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// The dispatcher signs turn tokens with the key of a Secret
// (--turn-token-secret-name, default harness-dispatcher-turn-token, in
// --leader-election-namespace here), not a key of its process: a restarted
// dispatcher, like another replica, accepts the tokens issued before.
var _ = Describe("Turn tokens across a dispatcher restart, served by the dispatcher process", Serial, func() {
	It("accepts a turn token issued before the restart, signed with the key of the turn-token Secret, and refuses a forged one", func() {
		newSession(ns, "token-restart", testModel)
		session := engine.SessionKey(sessionObject(ns, "token-restart"))
		stub.When("tkr-1", stubmodel.Text("finished before the restart"))
		evs := readSSE(post(sessionURL(ns, "token-restart")+"/turns", gateway, `{"runId":"run-tkr1","prompt":"tkr-1 go"}`, nil))
		token := turnTokenOf(evs)
		resultOf(evs)

		var s corev1.Secret
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: "harness-dispatcher-turn-token"}, &s)).To(Succeed(),
			"the dispatcher did not keep its key in the default turn-token Secret of its Lease's namespace")
		shared, err := turntoken.New(s.Data[turntoken.DataKey])
		Expect(err).NotTo(HaveOccurred())
		Expect(shared.Verify(session, "run-tkr1", token)).To(BeTrue(), "the turn token is not signed with the Secret's key")
		other := make([]byte, turntoken.KeyBytes)
		_, err = rand.Read(other)
		Expect(err).NotTo(HaveOccurred())
		forger, err := turntoken.New(other)
		Expect(err).NotTo(HaveOccurred())

		stopDispatcher()
		startDispatcher()

		// The run ended before the restart: a token the restarted
		// dispatcher accepts reaches the run (409 TurnNotRunning); a
		// token it does not accept stops at 403.
		url := sessionURL(ns, "token-restart") + "/turns/run-tkr1/interrupt"
		expectError(post(url, gateway, "", map[string]string{wire.TurnTokenHeader: token}), http.StatusConflict, wire.CodeTurnNotRunning)
		expectError(post(url, gateway, "", map[string]string{wire.TurnTokenHeader: forger.Sign(session, "run-tkr1")}),
			http.StatusForbidden, wire.CodeTurnTokenInvalid)
	})
})
