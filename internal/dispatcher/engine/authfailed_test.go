package engine

import (
	"errors"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

var _ = Describe("Model authentication failures", Ordered, func() {
	var ns string
	BeforeAll(func() {
		ns = newNamespace()
		registerCodex(ns, codexSrv.URL, true)
	})

	It("fails a turn whose model answers 401 with AuthFailed (not retryable, naming the harness and what to fix); the next turn runs", func() {
		newSession(ns, "auth", testModel)
		stub.When("auth401-1", stubmodel.HTTPError(401, "invalid api key"))
		evs, err := turn(ns, "auth", textReq("run-auth-1", "auth401-1: hello"))
		var terr *wire.Error
		Expect(errors.As(err, &terr)).To(BeTrue(), "Turn returns the turn's error, got %v", err)
		te := errorOf(evs)
		Expect(te.Code).To(Equal(wire.CodeAuthFailed))
		Expect(te.Retryable).To(BeFalse())
		Expect(te.Message).To(ContainSubstring("AgentHarness " + ns + "/codex"))
		Expect(te.Message).To(ContainSubstring("spec.appServer.credentials"))

		// Control: the same session's next turn, the model answering.
		_, err = turn(ns, "auth", textReq("run-auth-2", "auth-ok-2: hello"))
		Expect(err).NotTo(HaveOccurred())
	})
})

// Codex's ways of saying the model refused the credential (the first one is
// what 0.169.0 sends, pinned by codex.TestModelAuthFailureFailsTheTurnAsUnauthorized).
func TestUnauthorizedRecognisesCodexAuthFailures(t *testing.T) {
	for info, want := range map[string]bool{
		`{"httpConnectionFailed":{"httpStatusCode":401}}`:           true,
		`{"responseStreamConnectionFailed":{"httpStatusCode":401}}`: true,
		`unauthorized`: true,
		`{"httpConnectionFailed":{"httpStatusCode":500}}`:       false,
		`{"httpConnectionFailed":{"httpStatusCode":null}}`:      false,
		`{"responseStreamDisconnected":{"httpStatusCode":401}}`: false,
		`internalServerError`:                                   false,
		``:                                                      false,
	} {
		if got := unauthorized(info); got != want {
			t.Errorf("unauthorized(%q) = %v, want %v", info, got, want)
		}
	}
}
