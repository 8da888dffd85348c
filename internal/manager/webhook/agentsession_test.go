package webhook_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

func session(namespace, name, model string) *v1alpha1.AgentSession {
	return &v1alpha1.AgentSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1alpha1.AgentSessionSpec{
			AgentID: "main", SessionKey: "agent:main:" + name, SessionID: name + "-" + rand.String(6), Model: model,
		},
	}
}

var _ = Describe("AgentSession admission", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace(nil) })

	It("writes runtimeOverride aliases normalized, with a warning", func() {
		s := session(ns, "alias", string(uniqueProvider())+"/m-1")
		s.Spec.RuntimeOverride = "pi"
		warnings := mustCreate(s)
		Expect(s.Spec.RuntimeOverride).To(Equal(v1alpha1.RuntimeOpenClaw))
		expectWarning(warnings, `spec.runtimeOverride: runtime "pi" written as "openclaw"`)
	})

	Describe("with the cluster-wide Codex-only sample policy (openai → codex, sessionOverrides: Deny)", func() {
		BeforeEach(func() {
			mustCreate(providerPolicy("codex-only-"+rand.String(6), "openai", "codex", v1alpha1.SessionOverridesDeny))
		})

		It("refuses runtimeOverride: openclaw on an openai model, in any namespace", func() {
			for _, namespace := range []string{ns, newNamespace(map[string]string{"team": "z"})} {
				s := session(namespace, "wants-openclaw", "openai/gpt-5.5")
				s.Spec.RuntimeOverride = "openclaw"
				_, err := create(s)
				expectFieldError(err, "spec.runtimeOverride", `runtime override "openclaw" contradicts RuntimePolicy "codex-only-`)
			}
		})

		It("refuses the alias pi the same way, after normalizing it", func() {
			s := session(ns, "wants-pi", "openai/gpt-5.6-sol")
			s.Spec.RuntimeOverride = "pi"
			_, err := create(s)
			expectFieldError(err, "spec.runtimeOverride", `requires runtime "codex" for openai/gpt-5.6-sol`)
		})

		It("admits an override that agrees (codex), auto (no override), and other providers", func() {
			agree := session(ns, "agrees", "openai/gpt-5.5")
			agree.Spec.RuntimeOverride = "codex"
			mustCreate(agree)
			auto := session(ns, "auto", "openai/gpt-5.5")
			auto.Spec.RuntimeOverride = "auto"
			mustCreate(auto)
			other := session(ns, "anthropic", "anthropic/claude-opus-5")
			other.Spec.RuntimeOverride = "openclaw"
			mustCreate(other)
		})

		It("refuses switching the model to a governed one while the override contradicts it", func() {
			s := session(ns, "switcher", "anthropic/claude-opus-5")
			s.Spec.RuntimeOverride = "openclaw"
			mustCreate(s)
			s.Spec.Model = "openai/gpt-5.5"
			_, err := update(s)
			expectFieldError(err, "spec.runtimeOverride", "contradicts RuntimePolicy")
		})
	})

	It("with a Deny policy for team=a only: refused in a team=a namespace, admitted in another", func() {
		provider := uniqueProvider()
		deny := providerPolicy("deny-team-a-"+rand.String(6), provider, "codex", v1alpha1.SessionOverridesDeny)
		deny.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
		mustCreate(deny)

		inA := session(newNamespace(map[string]string{"team": "a"}), "s", string(provider)+"/m-1")
		inA.Spec.RuntimeOverride = "openclaw"
		_, err := create(inA)
		expectFieldError(err, "spec.runtimeOverride", `contradicts RuntimePolicy "`+deny.Name+`"`)

		elsewhere := session(ns, "s", string(provider)+"/m-1")
		elsewhere.Spec.RuntimeOverride = "openclaw"
		mustCreate(elsewhere)
	})

	It("lets unrelated updates (a /reset) through even when a later Deny policy contradicts the override", func() {
		provider := uniqueProvider()
		s := session(ns, "old-override", string(provider)+"/m-1")
		s.Spec.RuntimeOverride = "openclaw"
		mustCreate(s)
		mustCreate(providerPolicy("later-deny-"+rand.String(6), provider, "codex", v1alpha1.SessionOverridesDeny))
		s.Spec.ResetGeneration = 1
		_, err := update(s)
		Expect(err).NotTo(HaveOccurred())
	})

	Describe("no harness switch in the middle of a turn (seed: Current limitations)", func() {
		var s *v1alpha1.AgentSession
		setActiveTurn := func(deadline time.Time) {
			GinkgoHelper()
			s.Status.ActiveTurn = &v1alpha1.ActiveTurn{RunID: "run-1", StartedAt: metav1.NewTime(deadline.Add(-time.Minute)), Deadline: metav1.NewTime(deadline)}
			Expect(k8sClient.Status().Update(ctx, s)).To(Succeed())
		}
		BeforeEach(func() {
			s = session(ns, "busy", string(uniqueProvider())+"/m-1")
			mustCreate(s)
		})

		It("refuses a model change while a turn runs", func() {
			setActiveTurn(time.Now().Add(10 * time.Minute))
			s.Spec.Model = string(uniqueProvider()) + "/m-2"
			_, err := update(s)
			expectFieldError(err, "spec.model", "turn run-1 is running")
		})

		It("refuses a runtimeOverride change while a turn runs", func() {
			setActiveTurn(time.Now().Add(10 * time.Minute))
			s.Spec.RuntimeOverride = "openclaw"
			_, err := update(s)
			expectFieldError(err, "spec.runtimeOverride", "do not switch harnesses in the middle of a turn")
		})

		It("ignores a stale active turn (past its deadline)", func() {
			setActiveTurn(time.Now().Add(-time.Minute))
			s.Spec.Model = string(uniqueProvider()) + "/m-2"
			_, err := update(s)
			Expect(err).NotTo(HaveOccurred())
		})

		It("lets other fields change during a turn (resetGeneration)", func() {
			setActiveTurn(time.Now().Add(10 * time.Minute))
			s.Spec.ResetGeneration = 2
			_, err := update(s)
			Expect(err).NotTo(HaveOccurred())
		})
	})

	Describe("modelSelectionLocked: Locked", func() {
		var s *v1alpha1.AgentSession
		BeforeEach(func() {
			s = session(ns, "locked", string(uniqueProvider())+"/m-1")
			s.Spec.ModelSelectionLocked = v1alpha1.ModelSelectionLocked
			mustCreate(s)
		})

		It("keeps the model", func() {
			s.Spec.Model = string(uniqueProvider()) + "/m-2"
			_, err := update(s)
			expectFieldError(err, "spec.model", "model selection is Locked")
		})

		It("keeps the runtime override", func() {
			s.Spec.RuntimeOverride = "codex"
			_, err := update(s)
			expectFieldError(err, "spec.runtimeOverride", "model selection is Locked")
		})
	})

	It("keeps identity fields immutable", func() {
		s := session(ns, "identity", string(uniqueProvider())+"/m-1")
		mustCreate(s)
		s.Spec.SessionID = "other"
		_, err := update(s)
		expectFieldError(err, "spec.sessionId", "spec.sessionId is immutable")
	})
})
