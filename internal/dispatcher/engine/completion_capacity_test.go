package engine

import (
	"errors"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/harness/objects"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// A managed harness shared with two consenting namespaces, two places per
// namespace (maxSessionsPerNamespace 2), a real Codex behind its one pod.
// Completions and finalizations run inference with the harness's
// credential, so they take places as turns do: completions held in flight
// at the stub model fill a namespace's places, and the namespace's next call
// is refused as a turn would be.
var _ = Describe("Completions and finalizations take places of a shared harness", Ordered, func() {
	const (
		host    = "127.0.0.23"
		imageID = "registry.example/codex@sha256:0000000000000000000000000000000000000000000000000000000000000023"
	)
	var harnessNS, teamA, teamB string

	BeforeAll(func() {
		harnessNS, teamA, teamB = newNamespace(), newNamespace(), newNamespace()
		for _, ns := range []string{teamA, teamB} {
			n := &corev1.Namespace{}
			Expect(k8sClient.Get(ctx, client.ObjectKey{Name: ns}, n)).To(Succeed())
			n.Labels = map[string]string{v1alpha1.AcceptHarnessesLabel(harnessNS): v1alpha1.AcceptHarnessesLabelValue}
			Expect(k8sClient.Update(ctx, n)).To(Succeed())
		}
		h := &v1alpha1.AgentHarness{
			ObjectMeta: metav1.ObjectMeta{Namespace: harnessNS, Name: "codex"},
			Spec: v1alpha1.AgentHarnessSpec{
				HarnessID: "codex", Label: "Codex", Adapter: v1alpha1.AdapterCodexAppServer,
				AllowedNamespaces: &v1alpha1.AllowedNamespaces{From: v1alpha1.NamespacesFromAll},
				AppServer: &v1alpha1.AppServerWorkload{Image: imageID, Replicas: ptr.To[int32](1),
					MaxSessionsPerNamespace: ptr.To[int32](2)},
			},
		}
		Expect(k8sClient.Create(ctx, h)).To(Succeed())
		sts := &appsv1.StatefulSet{}
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKey{Namespace: harnessNS, Name: objects.WorkloadName(h)}, sts)
		}).Should(Succeed())
		secret := &corev1.Secret{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: harnessNS, Name: objects.TokenSecretName(h)}, secret)).To(Succeed())
		srv, err := codextest.StartErr(suiteT, codextest.Options{
			ProviderURL: stub.BaseURL(), Transport: codextest.WebSocket, ListenHost: host, Port: int(appPort),
			WSSharedSecret: string(secret.Data[objects.TokenSecretKey]),
			WSIssuer:       appserver.SignedBearerIssuer, WSAudience: appserver.SignedBearerAudience,
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(srv.Kill)
		pod := testutil.ServerPod(sts, 0)
		Expect(k8sClient.Create(ctx, pod)).To(Succeed())
		Expect(testutil.SetPodStatus(ctx, k8sClient, pod, host, imageID, true)).To(Succeed())
		waitHarness(h, v1alpha1.HarnessConditionReady, metav1.ConditionTrue)
	})

	complete := func(ns, name, runID, prompt string) (*wire.CompletionResult, *wire.Decision, error) {
		req := &wire.CompletionRequest{Prompt: prompt, Instructions: "Be brief."}
		if runID != "" {
			req.TranscriptSource = wire.TranscriptSourceOpenClaw
			req.Messages = []wire.CompletionMessage{{Role: wire.MessageRoleUser, Text: "the settled turn's question"}}
		}
		return eng.Complete(ctx, ns, name, runID, req, store.Requester{})
	}
	type answer struct {
		res *wire.CompletionResult
		err error
	}
	// hold starts a completion of each session that the stub model holds at
	// gate, and returns once every one reached the model: each then holds
	// its places.
	hold := func(gate *stubmodel.Gate, ns string, sessions ...string) chan answer {
		answers := make(chan answer, len(sessions))
		for _, name := range sessions {
			marker := fmt.Sprintf("held-%s-%s", ns, name)
			stub.When(marker, stubmodel.Stall(gate, stubmodel.Text("HELD-ANSWER "+name)))
			go func() {
				defer GinkgoRecover()
				res, _, err := complete(ns, name, "", marker+" question")
				answers <- answer{res, err}
			}()
		}
		for _, name := range sessions {
			_, err := stub.WaitMarker(ctx, fmt.Sprintf("held-%s-%s", ns, name))
			Expect(err).NotTo(HaveOccurred())
		}
		return answers
	}
	expectAtCapacity := func(err error, d *wire.Decision, ns string) {
		GinkgoHelper()
		var we *wire.Error
		Expect(errors.As(err, &we)).To(BeTrue(), "the call was not refused HarnessAtCapacity: err = %v", err)
		Expect(we.Code).To(Equal(wire.CodeHarnessAtCapacity))
		Expect(we.Retryable).To(BeTrue())
		Expect(we.Message).To(And(ContainSubstring("maxSessionsPerNamespace 2"), ContainSubstring(ns)))
		Expect(d).NotTo(BeNil())
		Expect(d.HarnessID).To(Equal("codex"))
	}
	endAll := func(gate *stubmodel.Gate, answers chan answer, n int) {
		GinkgoHelper()
		gate.Release()
		for range n {
			var a answer
			Eventually(answers, 60*time.Second).Should(Receive(&a))
			Expect(a.err).NotTo(HaveOccurred())
			Expect(a.res.Text).To(HavePrefix("HELD-ANSWER "))
		}
	}

	It("refuses a namespace's next completion with HarnessAtCapacity while its completions hold all its places, runs another namespace's turn beside them, and admits the namespace again once they end", func() {
		for _, name := range []string{"held-1", "held-2", "next"} {
			newSession(teamA, name, testModel)
		}
		newSession(teamB, "other", testModel)
		gate := stubmodel.NewGate()
		DeferCleanup(gate.Release)
		answers := hold(gate, teamA, "held-1", "held-2")

		_, d, err := complete(teamA, "next", "", "cap-next question")
		expectAtCapacity(err, d, teamA)
		Expect(stub.RequestsContaining("cap-next")).To(BeEmpty(), "the refused completion reached the model")

		stub.When("cap-other", stubmodel.Text("CAP-OTHER-REPLY"))
		evs, err := turn(teamB, "other", textReq("run-cap-other", "cap-other hello"))
		Expect(err).NotTo(HaveOccurred(), "control: another namespace's turn on the same harness")
		Expect(resultOf(evs).AssistantTexts).To(Equal([]string{"CAP-OTHER-REPLY"}))

		endAll(gate, answers, 2)
		stub.When("cap-next", stubmodel.Text("CAP-NEXT-ANSWER"))
		res, _, err := complete(teamA, "next", "", "cap-next question")
		Expect(err).NotTo(HaveOccurred(), "the ended completions gave their places back")
		Expect(res.Text).To(Equal("CAP-NEXT-ANSWER"))
	})

	// A bound session holds a place of its own: its finalization runs in
	// it, and a session without one is refused while a completion holds the
	// namespace's other place.
	It("runs a bound session's finalization in its own place while a completion holds its namespace's other place, and refuses a session without one", func() {
		for _, name := range []string{"bound", "held-3", "unbound"} {
			newSession(teamA, name, testModel)
		}
		stub.When("cap-bound", stubmodel.Text("CAP-BOUND-REPLY"))
		_, err := turn(teamA, "bound", textReq("run-cap-bound", "cap-bound hello"))
		Expect(err).NotTo(HaveOccurred())
		gate := stubmodel.NewGate()
		DeferCleanup(gate.Release)
		answers := hold(gate, teamA, "held-3")

		_, d, err := complete(teamA, "unbound", "", "cap-unbound question")
		expectAtCapacity(err, d, teamA)

		stub.When("cap-finalize", stubmodel.Text("CAP-FINAL-ANSWER"))
		res, _, err := complete(teamA, "bound", "run-cap-bound", "cap-finalize: answer now")
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Text).To(Equal("CAP-FINAL-ANSWER"))

		endAll(gate, answers, 1)
	})
})
